/**
 * Everything that configures one mock cloud, with its defaults. The CLI (cli.ts) fills it from flags and
 * the environment; tests fill it directly.
 */
import type { Logger } from "pino";

/** Options of one mock cloud. Only `token` is required. */
export interface CloudOptions {
  /** Bearer token every `/v1` call must present. */
  token: string;
  /**
   * Bearer token of `/admin/*` (the fault switches, the request log). Absent (the default): `/admin/*` answers
   * 401 to every request, so a client holding the API token (a controller) cannot switch faults.
   */
  adminToken?: string;
  /** SQLite file, or ":memory:" (the default: nothing survives a restart). */
  db?: string;
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /**
   * Host names (any port) the routes without a token answer for, besides `localhost`, IP addresses and
   * `host`: e.g. `cloud`, the compose service name. Any other `Host` is answered 421 (http/host-check.ts).
   * Default none.
   */
  allowedHosts?: readonly string[];
  /** Port to listen on; 0 (the default) picks a free one. */
  port?: number;
  /** Changes the history keeps: how far back a watch can resume. Default 10000. */
  historyLimit?: number;
  /** Interval of the watch's heartbeat comments. Default 15000 ms. */
  heartbeatMs?: number;
  /** Write requests kept in the request log. Default 1000. */
  requestLogLimit?: number;
  /** Largest request body accepted (413 beyond). Default 65536 bytes. */
  bodyLimitBytes?: number;
  /** Where to log. Default: a silent logger. */
  logger?: Logger;
  /** Source of randomness for fault rates, in [0, 1). Default Math.random. */
  random?: () => number;
  /** The clock of the data (timestamps, and what `listLagMs` counts from), epoch ms. Default Date.now. */
  now?: () => number;
}

/** The defaults of every optional `CloudOptions` member that has one. */
export const DEFAULTS = {
  db: ":memory:",
  host: "127.0.0.1",
  port: 0,
  historyLimit: 10_000,
  heartbeatMs: 15_000,
  requestLogLimit: 1000,
  bodyLimitBytes: 64 * 1024,
} as const;

import { pino, type Logger } from "pino";
import { logFields } from "./reconcile-scope.ts";

/** The structured logger every component takes (pino). Tests pass `silentLogger()`. */
export type { Logger };

/**
 * A logger that writes JSON lines to stderr at `level` (default from LOG_LEVEL, else "info"). A line written
 * inside a reconcile carries its `reconcile_id`, and `trace_id`/`span_id` when tracing is on.
 */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino({ name, level, mixin: logFields }, pino.destination(2));
}

/** A logger that drops everything, for tests. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

/**
 * Waiting for a child to become ready: poll a check until it passes, but fail fast (with the last lines
 * of the child's log) when the child dies, and fail with the last check result when the deadline passes.
 */
import { request } from "node:https";
import { elapsed, type ProgressLog } from "./progress.ts";
import { isAddressInUse } from "./ports.ts";
import { sleep, type Child } from "./processes.ts";

/** The result of one readiness check. */
export interface CheckResult {
  ready: boolean;
  /** Why not ready (e.g. the failing /readyz checks), for progress lines and the timeout error. */
  detail?: string;
}

/** Thrown when a child exits before it is ready; `addressInUse` says a retry on other ports may work. */
export class ChildExitedError extends Error {
  readonly addressInUse: boolean;
  /** Builds the error from the child's name, how it ended and its last log lines. */
  constructor(name: string, how: string, tail: string) {
    super(
      `cannot start ${name}: it exited (${how}) before it was ready. The last lines of its log:\n${tail}`,
    );
    this.name = "ChildExitedError";
    this.addressInUse = isAddressInUse(tail);
  }
}

/** Options of {@link waitUntilReady}. */
export interface WaitOptions {
  /** What we wait for, e.g. "kube-apiserver /readyz". */
  what: string;
  child: Child;
  check: () => Promise<CheckResult>;
  timeoutMs: number;
  log: ProgressLog;
  /** Default 200 ms. */
  intervalMs?: number;
  /** How often to log that we are still waiting. Default 5 s. */
  noticeEveryMs?: number;
}

/** Polls `check` until it says ready. Throws ChildExitedError or a timeout error ("cannot start ..."). */
export async function waitUntilReady(options: WaitOptions): Promise<void> {
  const started = Date.now();
  let lastNotice = started;
  let detail: string;
  for (;;) {
    const status = options.child.exitStatus();
    if (status) {
      throw new ChildExitedError(
        options.child.name,
        status.signal ? `signal ${status.signal}` : `code ${status.code}`,
        await options.child.logTail(30),
      );
    }
    try {
      const result = await options.check();
      if (result.ready) return;
      detail = result.detail ?? "not ready";
    } catch (error) {
      detail = (error as Error).message;
    }
    if (Date.now() - started > options.timeoutMs) {
      throw new Error(
        `cannot start ${options.child.name}: ${options.what} not ready after ${elapsed(started)} ` +
          `(last check: ${detail}). The last lines of its log (${options.child.logFile}):\n` +
          (await options.child.logTail(30)),
      );
    }
    if (Date.now() - lastNotice >= (options.noticeEveryMs ?? 5_000)) {
      lastNotice = Date.now();
      options.log(
        `${options.child.name}: waiting for ${options.what} (${elapsed(started)}): ${oneLine(detail)}`,
      );
    }
    await Promise.race([sleep(options.intervalMs ?? 200), options.child.exited]);
  }
}

/** TLS material for talking to the API server. */
export interface ClientTls {
  caPem: string;
  certPem?: string;
  keyPem?: string;
}

/** A GET over HTTPS with our CA and client certificate; resolves with status and body (never throws on 4xx/5xx). */
export function httpsGet(
  url: string,
  tls: ClientTls,
  timeoutMs = 5_000,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: "GET", ca: tls.caPem, cert: tls.certPem, key: tls.keyPem, agent: false, timeout: timeoutMs },
      (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

function oneLine(text: string): string {
  const lines = text.split("\n").filter((l) => l.startsWith("[-]"));
  const summary = lines.length > 0 ? lines.join(", ") : text.replace(/\s+/g, " ");
  return summary.length > 300 ? summary.slice(0, 300) + "..." : summary;
}

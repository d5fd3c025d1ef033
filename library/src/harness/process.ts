/**
 * A controller as a SEPARATE PROCESS, exactly as an operator would start it: a command line only, its own
 * kubeconfig, JSON logs (pino, as reconcile-kit's manager writes them) on stderr. Each run's output goes to
 * its own file in an artifacts folder, kept for debugging.
 *
 * The process is spawned through envtest's `spawnChild` (@shapes/envtest), so it dies with the test process
 * even when that one is killed (parent-death signal), and `stop()` / `kill()` / `restart()` give a test full
 * control.
 */
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { type Child, type ExitStatus, spawnChild } from "@shapes/envtest";
import { MetricsSnapshot } from "./metrics.ts";
import { waitFor } from "../testing/wait.ts";

/**
 * How to run one controller process. A subclass may build the command line from options of its own
 * (override {@link ControllerProcess.args}); otherwise `args` is it.
 */
export interface ProcessOptions {
  /** A short name for the log files and messages, e.g. "controller" or "replica-a". */
  name: string;
  /** Folder of the log files (it must exist). */
  artifactsDir: string;
  /**
   * The command line after the command: for node, its flags, the script and the controller's flags. The
   * controller must serve /readyz and log the line "serving /healthz, /readyz, /metrics" with its `url`
   * (reconcile-kit's manager does), and run with a kubeconfig of its own (KUBECONFIG is emptied).
   */
  args?: readonly string[];
  /** The program to run. Default: this node (`process.execPath`). */
  command?: string;
  /** Environment variables over this process's own (KUBECONFIG stays empty). */
  env?: Readonly<Record<string, string>>;
}

/** One line of a controller's JSON log (pino). */
export interface LogLine {
  /** pino's numeric level ({@link LOG_LEVEL}). */
  level: number;
  /** The message. */
  msg: string;
  /** When, in epoch ms. */
  time: number;
  /** Every other field of the line (`controller`, `key`, `err`, ...). */
  [field: string]: unknown;
}

/** pino's numeric levels, by name. */
export const LOG_LEVEL = { debug: 20, info: 30, warn: 40, error: 50 } as const;

/**
 * One controller process: started, stopped, killed and restarted by the test.
 *
 * # Guarantees
 * - `start()` resolves only once the process logged its metrics URL and (unless told not to wait) /readyz
 *   answers 200; it rejects with the log's last lines when the process exits or does not get there in time,
 *   and then leaves no process behind.
 * - Every run writes a log file of its own (`<name>.run<n>.log`), never one of an earlier run.
 * - The process dies with the test process, even when that one is killed (envtest's parent-death signal).
 *
 * # Assumptions
 * - @shapes/envtest is installed (an optional peer dependency of reconcile-kit): it spawns the process.
 */
export class ControllerProcess<O extends ProcessOptions = ProcessOptions> {
  /** How every run is started (a restart uses the same). */
  readonly options: O;
  #child: Child | undefined;
  #runs = 0;
  #logFile = "";
  #url = "";
  /** The log files of every run so far, oldest first. */
  readonly logFiles: string[] = [];

  constructor(options: O) {
    this.options = options;
  }

  /** The command line of a run after the command. Default: `options.args`; a subclass builds its own. */
  args(): string[] {
    if (!this.options.args) throw new Error(`${this.options.name} has no command line (options.args)`);
    return [...this.options.args];
  }

  /**
   * Starts a run: spawns the process, finds its metrics URL in the log, and (unless `waitReady` is false)
   * waits until /readyz answers 200, i.e. the startup resync is done. Fails with the log's tail when the
   * process exits or does not get there in time.
   */
  async start({ waitReady = true, timeoutMs = 90_000 } = {}): Promise<void> {
    if (this.#child && !this.#child.exitStatus())
      throw new Error(`cannot start ${this.options.name}: it is running`);
    this.#runs += 1;
    this.#logFile = join(this.options.artifactsDir, `${this.options.name}.run${this.#runs}.log`);
    this.logFiles.push(this.#logFile);
    // A log file left by an earlier test run would show an old URL: each run starts a fresh file.
    await rm(this.#logFile, { force: true });
    this.#url = "";
    const env: Record<string, string> = { ...this.options.env, KUBECONFIG: "" };
    const child = await spawnChild({
      name: this.options.name,
      command: this.options.command ?? process.execPath,
      args: this.args(),
      logFile: this.#logFile,
      env,
    });
    this.#child = child;
    try {
      this.#url = await this.#unlessItExits(
        waitFor(
          `${this.options.name} to log its metrics URL`,
          async () => {
            this.#assertAlive();
            const line = (await this.logs()).find((l) => l.msg === "serving /healthz, /readyz, /metrics");
            if (typeof line?.url !== "string")
              throw new Error("no 'serving /healthz, /readyz, /metrics' line yet");
            return line.url;
          },
          { timeoutMs },
        ),
      );
      if (waitReady) await this.waitReady(timeoutMs);
    } catch (error) {
      const tail = await child.logTail(30);
      await child.stop(2_000);
      throw new Error(
        `cannot start ${this.options.name}: ${(error as Error).message}\n--- log tail ---\n${tail}`,
        {
          cause: error,
        },
      );
    }
  }

  /** Waits until /readyz answers 200 (the startup resync is done). */
  async waitReady(timeoutMs = 90_000): Promise<void> {
    await this.#unlessItExits(
      waitFor(
        `${this.options.name} to be ready (/readyz 200)`,
        async () => {
          this.#assertAlive();
          const res = await fetch(`${this.url}/readyz`);
          const text = await res.text();
          if (res.status !== 200) throw new Error(`/readyz ${res.status}: ${text.trim()}`);
        },
        { timeoutMs },
      ),
    );
  }

  /** True while /readyz answers 200. */
  async isReady(): Promise<boolean> {
    try {
      return (await fetch(`${this.url}/readyz`)).status === 200;
    } catch {
      return false;
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`: a graceful stop (drains in-flight work). Resolves on exit. */
  async stop(graceMs = 15_000): Promise<ExitStatus | undefined> {
    return this.#child?.stop(graceMs);
  }

  /** SIGKILL: the crash. Resolves once the process is gone. */
  async kill(): Promise<ExitStatus | undefined> {
    const child = this.#child;
    if (!child || child.exitStatus()) return child?.exitStatus();
    process.kill(child.pid, "SIGKILL");
    return child.exited;
  }

  /**
   * SIGSTOP: the process freezes, its timers, sockets and open watches with it (a long GC pause, a blocked
   * event loop), until {@link resume}; what the API server sends meanwhile waits in its sockets, and is read,
   * in order, the moment it resumes. Resume it before a graceful {@link stop}.
   */
  pause(): void {
    if (this.running) process.kill(this.pid, "SIGSTOP");
  }

  /** SIGCONT: a paused process goes on where it stopped. */
  resume(): void {
    if (this.running) process.kill(this.pid, "SIGCONT");
  }

  /** Stops (gracefully) and starts again with the same flags. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** True while the current run's process lives. */
  get running(): boolean {
    return this.#child !== undefined && this.#child.exitStatus() === undefined;
  }

  /** The pid of the current run. */
  get pid(): number {
    if (!this.#child) throw new Error(`${this.options.name} was never started`);
    return this.#child.pid;
  }

  /** The base URL of /healthz, /readyz and /metrics of the current run. */
  get url(): string {
    if (!this.#url) throw new Error(`${this.options.name} has no metrics URL (not started?)`);
    return this.#url;
  }

  /** The current run's log file. */
  get logFile(): string {
    return this.#logFile;
  }

  /**
   * A snapshot of /metrics; with `token`, sent as a bearer token (a controller with `--metrics-auth=kubernetes`
   * asks for one of a user who may get /metrics).
   */
  async metrics({ token }: { token?: string } = {}): Promise<MetricsSnapshot> {
    const res = await fetch(`${this.url}/metrics`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });
    if (!res.ok) throw new Error(`cannot read ${this.options.name}'s /metrics: HTTP ${res.status}`);
    return MetricsSnapshot.parse(await res.text());
  }

  /** The JSON log lines of the current run (or of every run with `allRuns`); other lines are skipped. */
  async logs({ allRuns = false } = {}): Promise<LogLine[]> {
    const files = allRuns ? this.logFiles : [this.#logFile];
    const lines: LogLine[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = await readFile(file, "utf8");
      } catch {
        continue;
      }
      for (const raw of text.split("\n")) {
        if (!raw.startsWith("{")) continue;
        try {
          lines.push(JSON.parse(raw) as LogLine);
        } catch {
          // a line cut short by SIGKILL
        }
      }
    }
    return lines;
  }

  /**
   * Waits until this replica logged the end of a reconcile of `key` by `controller` (a reconciler's name, as
   * its log lines carry it: "shape", "shaperef", "shapes-sweep" for the Shapes controller) that finished at
   * or after `since` (epoch ms, this machine's clock), and returns that line. Proof that the controller
   * LOOKED at an object after something happened, when what it then did (nothing) leaves no other trace.
   * Needs the debug log level.
   */
  async waitReconciled(controller: string, key: string, since: number, timeoutMs?: number): Promise<LogLine> {
    return waitFor(
      `${this.options.name} to reconcile ${controller} ${key}`,
      async () => {
        const line = (await this.logs()).find(
          (l) =>
            l.controller === controller && l.key === key && l.msg.startsWith("reconcile") && l.time >= since,
        );
        if (!line) throw new Error(`no reconcile of ${key} logged since ${new Date(since).toISOString()}`);
        return line;
      },
      timeoutMs === undefined ? {} : { timeoutMs },
    );
  }

  /**
   * What in this replica's logs (every run by default) a scenario did not expect, one readable line each:
   * every warning or error, and every line at any level that mentions a 403 (an RBAC gap), that matches
   * none of `allow` (each tried on the whole JSON line); and every line that is not JSON (a crash's stack
   * trace). Empty when the logs are clean. A JSON line cut short by SIGKILL is not a problem.
   */
  async problems({
    allow = [],
    allRuns = true,
  }: { allow?: readonly RegExp[]; allRuns?: boolean } = {}): Promise<string[]> {
    const files = allRuns ? this.logFiles : [this.#logFile];
    const problems: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = await readFile(file, "utf8");
      } catch {
        continue;
      }
      for (const raw of text.split("\n")) {
        if (raw.trim() === "") continue;
        if (!raw.startsWith("{")) {
          problems.push(`not a log line: ${raw}`);
          continue;
        }
        let line: LogLine;
        try {
          line = JSON.parse(raw) as LogLine;
        } catch {
          continue; // cut short by SIGKILL
        }
        const forbidden = forbiddenLines([line]).length > 0;
        if ((forbidden || line.level >= LOG_LEVEL.warn) && !allow.some((re) => re.test(raw))) {
          problems.push(describeLogLine(line));
        }
      }
    }
    return problems;
  }

  /**
   * `waiting`, or a rejection the moment the process exits: a wait on a dead process (killed while it
   * started) ends at once, not at its deadline.
   */
  async #unlessItExits<T>(waiting: Promise<T>): Promise<T> {
    const child = this.#child;
    if (!child) return waiting;
    let onExit: ((status: ExitStatus) => void) | undefined;
    const exited = new Promise<never>((_, reject) => {
      onExit = (status) =>
        reject(new Error(`${this.options.name} exited (code ${status.code}, signal ${status.signal})`));
    });
    void child.exited.then((status) => onExit?.(status));
    try {
      return await Promise.race([waiting, exited]);
    } finally {
      onExit = undefined;
      waiting.catch(() => {}); // lost the race: its later failure is no one's
    }
  }

  #assertAlive(): void {
    const status = this.#child?.exitStatus();
    if (status) {
      throw new Error(`${this.options.name} exited (code ${status.code}, signal ${status.signal})`);
    }
  }
}

/**
 * Log lines that tell of an HTTP 403 from the API server: the controller's RBAC is missing a grant. Read by
 * field, never as text: a 403 is a status field (`code`, `status`, `statusCode`, on the line or in its error)
 * or words in what the line says (`msg`, `reason`, and the strings of its error but its stack). Any other
 * number is not a status: a revision 403 (`"revision":403`), a source line 403 (`reconciler.ts:403:18`).
 */
export function forbiddenLines(lines: readonly LogLine[]): LogLine[] {
  return lines.filter(isForbidden);
}

const STATUS_FIELDS = new Set(["code", "status", "statusCode"]);
const FORBIDDEN_WORDS = /\b403\b|forbidden/i;

function isForbidden(line: LogLine): boolean {
  if ([line.msg, line.reason].some((text) => typeof text === "string" && FORBIDDEN_WORDS.test(text))) {
    return true;
  }
  if ([...STATUS_FIELDS].some((field) => line[field] === 403)) return true;
  return tellsForbidden(line.err);
}

/** An error as pino wrote it (message, status fields, cause, body...): does any part of it tell of a 403? */
function tellsForbidden(value: unknown, key = ""): boolean {
  if (key === "stack") return false;
  if (typeof value === "string") return FORBIDDEN_WORDS.test(value);
  if (typeof value === "number") return STATUS_FIELDS.has(key) && value === 403;
  if (typeof value !== "object" || value === null) return false;
  return Object.entries(value).some(([k, v]) => tellsForbidden(v, k));
}

/** One log line as a person would read it: level, message, and the error or reason it carries. */
export function describeLogLine(line: LogLine): string {
  const level = Object.entries(LOG_LEVEL).find(([, n]) => n === line.level)?.[0] ?? String(line.level);
  const err = line.err as { message?: unknown } | string | undefined;
  const detail = typeof err === "string" ? err : typeof err?.message === "string" ? err.message : undefined;
  const extra = detail ?? (typeof line.reason === "string" ? line.reason : undefined);
  return `${level}: ${line.msg}${typeof line.key === "string" ? ` [${line.key}]` : ""}${extra ? ` — ${extra}` : ""}`;
}

/**
 * The controller as a child process of `npm start`, run the way an operator would run it: its own
 * process, flags only, its own least-privilege kubeconfig, JSON logs to a file.
 *
 * How it is tied to `npm start`:
 * - It runs in its own process group, so the terminal's Ctrl-C reaches only `npm start`, which then stops
 *   things in order: the controller first (SIGTERM: it drains in-flight reconciles), while the API server
 *   and the cloud it talks to are still up.
 * - On Linux it is started through util-linux `setpriv --pdeathsig TERM`: if `npm start` dies without
 *   cleaning up (SIGKILL, a crash), the kernel sends the controller SIGTERM. (envtest does the same for
 *   its test control planes, with SIGKILL.) Elsewhere an exit hook covers every death but SIGKILL.
 * - Like a Deployment's pod, a controller that exits on its own is started again, after a growing delay.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { open, stat } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { CONTROLLER_NODE_FLAGS, OPTIONS as CONTROLLER_OPTIONS } from "@shapes/controller";
import type { ControllerStatus } from "./control.ts";
import { REPO_ROOT } from "./paths.ts";
import { join } from "node:path";

/** The controller's entry point. */
export const CONTROLLER_MAIN = join(REPO_ROOT, "controller", "src", "main.ts");

/** The message the controller logs once its health server listens (with the `url` field). */
export const SERVING_MESSAGE = "serving /healthz, /readyz, /metrics";

/** What the demo's controller is told. */
export interface ControllerFlags {
  kubeconfig: string;
  cloudUrl: string;
  cloudTokenFile: string;
  /** host:port of /healthz, /readyz and /metrics. */
  metricsAddress: string;
  logLevel: string;
  /** --identity: its name in the cloud's request log (X-Client-Id). Default `shapes-demo`. */
  identity?: string;
}

/** The controller's command line (node and its arguments) for `flags`. */
export function controllerCommand(flags: ControllerFlags): { command: string; args: string[] } {
  return {
    command: process.execPath,
    args: [
      ...CONTROLLER_NODE_FLAGS,
      CONTROLLER_MAIN,
      `--kubeconfig=${flags.kubeconfig}`,
      `--cloud-url=${flags.cloudUrl}`,
      `--cloud-token-file=${flags.cloudTokenFile}`,
      `--metrics-address=${flags.metricsAddress}`,
      `--log-level=${flags.logLevel}`,
      `--identity=${flags.identity ?? "shapes-demo"}`,
    ],
  };
}

/**
 * `args` with the `--cloud-url=` flag pointing at `cloudUrl` instead: the same controller, talking to the cloud
 * through something in front of it (the tour's crash gate, reconcile-kit/harness's AnswerGate). Throws when there is no such flag.
 */
export function withCloudUrl(args: readonly string[], cloudUrl: string): string[] {
  if (!args.some((arg) => arg.startsWith("--cloud-url="))) {
    throw new Error(`cannot point the controller at ${cloudUrl}: its command line has no --cloud-url= flag`);
  }
  return args.map((arg) => (arg.startsWith("--cloud-url=") ? `--cloud-url=${cloudUrl}` : arg));
}

/**
 * The environment of the controller: ours, minus every variable the controller reads as configuration
 * (CLOUD_URL, OWNER_ID, WORKERS, ...), so only the flags above configure it, whatever the user's shell holds.
 */
export function controllerEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const clean = { ...env };
  for (const option of CONTROLLER_OPTIONS) delete clean[option.env];
  return clean;
}

/** Options of a {@link ControllerRunner}. */
export interface ControllerRunnerOptions {
  /** What to run: any command that keeps the controller's contract (logs SERVING_MESSAGE with `url`, serves /readyz). */
  command: string;
  args: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** Its stdout and stderr are appended here. */
  logFile: string;
  /** One line for the person at the terminal. */
  say: (line: string) => void;
  /** How long a start may take until /readyz answers 200. Default 120 s. */
  readyTimeoutMs?: number;
  /** How long a stop waits after SIGTERM before SIGKILL. Default 15 s. */
  stopGraceMs?: number;
  /** Delays before restarting after the 1st, 2nd, ... unexpected exit (the last one repeats). */
  restartDelaysMs?: readonly number[];
}

/** Starts, stops, and restarts after crashes, one controller process at a time. */
export class ControllerRunner {
  readonly #o: ControllerRunnerOptions;
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #state: ControllerStatus["state"] = "stopped";
  #metricsUrl: string | undefined;
  #starting: Promise<void> | undefined;
  #crashes = 0;
  #runningSince = 0;
  #restartTimer: NodeJS.Timeout | undefined;
  #exitHook: (() => void) | undefined;

  constructor(options: ControllerRunnerOptions) {
    this.#o = options;
  }

  /** The arguments it runs with, unless a start says otherwise. */
  get args(): readonly string[] {
    return this.#o.args;
  }

  /** A snapshot for the control socket and the banner. */
  status(): ControllerStatus {
    return {
      state: this.#state,
      ...(this.#child?.pid !== undefined && this.#alive() ? { pid: this.#child.pid } : {}),
      ...(this.#state === "running" && this.#metricsUrl ? { metricsUrl: this.#metricsUrl } : {}),
      logFile: this.#o.logFile,
    };
  }

  /**
   * Starts the controller and resolves once /readyz answers 200. Resolves at once when it is running;
   * a start already under way is joined. Rejects with the log's last lines when it exits or is not ready
   * in time (the process is stopped then).
   *
   * `args` replace the configured arguments for this run only (stop it first: a running controller is not
   * restarted): a restart after an unexpected exit goes back to the configured ones.
   */
  start(options: { args?: readonly string[] } = {}): Promise<void> {
    if (this.#state === "running") return Promise.resolve();
    clearTimeout(this.#restartTimer);
    this.#starting ??= this.#start(options.args ?? this.#o.args).finally(() => (this.#starting = undefined));
    return this.#starting;
  }

  /**
   * Kills it with SIGKILL, now: no draining, no last word, like a machine losing power. Resolves once it has
   * exited. It stays down ("crashed"), not restarted, until start() is called: whoever kills it on purpose
   * decides when it comes back.
   */
  async kill(): Promise<void> {
    clearTimeout(this.#restartTimer);
    const child = this.#child;
    if (!child || !this.#alive()) return;
    this.#state = "crashed"; // #onExit restarts only a controller that exits while "running"
    signal(child, "SIGKILL");
    await this.#exited;
  }

  /** Stops it gracefully (SIGTERM, SIGKILL after the grace period); resolves once it has exited. */
  async stop(): Promise<void> {
    clearTimeout(this.#restartTimer);
    if (this.#state === "stopped") return;
    this.#state = "stopping"; // a start under way sees this and gives up
    await this.#terminate();
    await this.#starting?.catch(() => {});
    this.#state = "stopped";
  }

  async #start(args: readonly string[]): Promise<void> {
    this.#state = "starting";
    this.#metricsUrl = undefined;
    const from = await sizeOf(this.#o.logFile);
    if (this.#isStopping()) throw new Error("cannot start the controller: it was asked to stop");
    const child = await this.#spawn(args);
    const deadline = Date.now() + (this.#o.readyTimeoutMs ?? 120_000);
    try {
      this.#metricsUrl = await this.#findMetricsUrl(child, from, deadline);
      await this.#waitReady(child, this.#metricsUrl, deadline);
    } catch (error) {
      await this.#terminate();
      if (!this.#isStopping()) this.#state = "crashed";
      const tail = await tailLines(this.#o.logFile, from, 15);
      throw new Error(
        `cannot start the controller: ${(error as Error).message}` +
          (tail ? `\n--- the last lines of ${this.#o.logFile} ---\n${tail}` : ""),
        { cause: error },
      );
    }
    this.#state = "running";
    this.#runningSince = Date.now();
  }

  /** SIGTERM to the current process, SIGKILL after the grace period; resolves once it has exited. */
  async #terminate(): Promise<void> {
    const child = this.#child;
    if (!child || !this.#alive()) return;
    signal(child, "SIGTERM");
    const timer = setTimeout(() => signal(child, "SIGKILL"), this.#o.stopGraceMs ?? 15_000);
    try {
      await this.#exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Spawns the process; rejects when it cannot be started at all. */
  async #spawn(commandArgs: readonly string[]): Promise<ChildProcess> {
    const fd = openSync(this.#o.logFile, "a");
    let child: ChildProcess;
    try {
      const [command, args] = withParentDeathSignal(this.#o.command, commandArgs);
      child = spawn(command, args, {
        stdio: ["ignore", fd, fd],
        detached: true, // its own process group: the terminal's Ctrl-C is ours to handle
        env: this.#o.env ?? process.env,
        cwd: REPO_ROOT,
      });
    } finally {
      closeSync(fd); // the child holds its own copy
    }
    this.#child = child;
    this.#exited = new Promise<void>((resolve) => {
      child.once("exit", (code, sig) => {
        resolve();
        this.#onExit(child, code, sig);
      });
    });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (error) => {
        this.#state = "crashed";
        reject(new Error(`cannot start the controller (${this.#o.command}): ${error.message}`));
      });
    });
    if (!this.#exitHook) {
      // If npm start itself exits without stop() (an uncaught error), take the controller along.
      this.#exitHook = () => {
        if (this.#child && this.#alive()) signal(this.#child, "SIGKILL");
      };
      process.on("exit", this.#exitHook);
    }
    return child;
  }

  #onExit(child: ChildProcess, code: number | null, sig: NodeJS.Signals | null): void {
    // Stopping, or a start that failed (that start reports it): nothing to do here.
    if (child !== this.#child || this.#state !== "running") return;
    this.#state = "crashed";
    // A controller that ran a good while before exiting starts over with the shortest delay.
    if (Date.now() - this.#runningSince > 60_000) this.#crashes = 0;
    this.#scheduleRestart(`exited on its own (${sig ? `signal ${sig}` : `code ${code}`})`);
  }

  /** Like a pod's restart policy: try again after a delay that grows with each failure. */
  #scheduleRestart(why: string): void {
    const delays = this.#o.restartDelaysMs ?? [1_000, 2_000, 5_000, 10_000, 30_000];
    const delayMs = delays[Math.min(this.#crashes, delays.length - 1)] ?? 1_000;
    this.#crashes += 1;
    this.#o.say(
      `controller: ${why}; starting it again in ${(delayMs / 1000).toFixed(0)} s (log: ${this.#o.logFile})`,
    );
    this.#restartTimer = setTimeout(() => {
      this.start().then(
        () => this.#o.say(`controller: running again (pid ${this.#child?.pid})`),
        (error: unknown) => {
          // A stop() in the meantime leaves the state "stopping"/"stopped": then no more tries.
          if (this.#state === "crashed") this.#scheduleRestart((error as Error).message.split("\n")[0] ?? "");
        },
      );
    }, delayMs);
  }

  /** Reads the log (from the offset this run started at) until the controller names its metrics URL. */
  async #findMetricsUrl(child: ChildProcess, from: number, deadline: number): Promise<string> {
    for (;;) {
      for (const line of await jsonLines(this.#o.logFile, from)) {
        if (line.msg === SERVING_MESSAGE && typeof line.url === "string") return line.url;
      }
      this.#assertRunning(child);
      if (Date.now() > deadline) throw new Error(`it did not log "${SERVING_MESSAGE}" in time`);
      await sleep(100);
    }
  }

  async #waitReady(child: ChildProcess, url: string, deadline: number): Promise<void> {
    let last: string;
    for (;;) {
      this.#assertRunning(child);
      try {
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) });
        last = `/readyz answered ${res.status}: ${(await res.text()).trim().slice(0, 200)}`;
        if (res.status === 200) return;
      } catch (error) {
        last = `/readyz: ${(error as Error).message}`;
      }
      if (Date.now() > deadline) throw new Error(`it was not ready in time (${last})`);
      await sleep(200);
    }
  }

  #assertRunning(child: ChildProcess): void {
    if (this.#isStopping()) throw new Error("it was asked to stop");
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `it exited (${child.signalCode ? `signal ${child.signalCode}` : `code ${child.exitCode}`})`,
      );
    }
  }

  /** A stop() came in (a method, so TypeScript does not narrow the state across awaits). */
  #isStopping(): boolean {
    return this.#state === "stopping";
  }

  #alive(): boolean {
    const child = this.#child;
    return child?.pid !== undefined && child.exitCode === null && child.signalCode === null;
  }
}

let setprivWorks: boolean | undefined;

/**
 * `setpriv --pdeathsig TERM -- command args...` where util-linux setpriv can do it (Linux), else the
 * command as is: the kernel sends the child SIGTERM when its parent dies, however it dies.
 */
export function withParentDeathSignal(command: string, args: readonly string[]): [string, string[]] {
  setprivWorks ??=
    process.platform === "linux" &&
    (spawnSync("setpriv", ["--help"], { encoding: "utf8" }).stdout ?? "").includes("--pdeathsig");
  return setprivWorks ? ["setpriv", ["--pdeathsig", "TERM", "--", command, ...args]] : [command, [...args]];
}

function signal(child: ChildProcess, sig: NodeJS.Signals): void {
  try {
    child.kill(sig);
  } catch {
    // gone already
  }
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/** The text of `path` from byte `from` on ("" when unreadable). */
async function readFrom(path: string, from: number): Promise<string> {
  try {
    const file = await open(path, "r");
    try {
      const { size } = await file.stat();
      const buffer = Buffer.alloc(Math.max(0, size - from));
      await file.read(buffer, 0, buffer.length, from);
      return buffer.toString("utf8");
    } finally {
      await file.close();
    }
  } catch {
    return "";
  }
}

async function jsonLines(path: string, from: number): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  for (const raw of (await readFrom(path, from)).split("\n")) {
    if (!raw.startsWith("{")) continue;
    try {
      lines.push(JSON.parse(raw) as Record<string, unknown>);
    } catch {
      // a line still being written
    }
  }
  return lines;
}

async function tailLines(path: string, from: number, count: number): Promise<string> {
  return (await readFrom(path, from)).trimEnd().split("\n").slice(-count).join("\n");
}

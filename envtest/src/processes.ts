/**
 * Child processes that die with their parent, and the process-level facts envtest needs (is a pid alive,
 * what command runs under it, stop it with a deadline).
 *
 * How children die with the parent, in three layers:
 * 1. `stop()` — the normal path: SIGTERM, then SIGKILL after a deadline.
 * 2. {@link onParentExit} hooks — when this Node process exits normally, throws, or gets SIGINT / SIGTERM /
 *    SIGHUP, every registered cleanup runs synchronously (SIGKILL the children, delete temp dirs).
 * 3. The kernel — when the parent is killed with SIGKILL or crashes, no JavaScript runs. On Linux each child
 *    is started through util-linux `setpriv --pdeathsig KILL`, which sets PR_SET_PDEATHSIG and then execs
 *    the binary (same pid): the kernel sends SIGKILL to the child the moment its parent dies. Where
 *    setpriv is missing, a tiny `sh` watchdog polls the parent's pid once a second and kills the child when
 *    the parent is gone.
 * Detached children (the CLI's persistent cluster) opt out of all three: they are meant to outlive us.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { accessSync, closeSync, constants, openSync, readFileSync, realpathSync } from "node:fs";
import { open } from "node:fs/promises";
import { setPriority } from "node:os";

/** True when a process with this pid exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  // A zombie (exited, not yet reaped by a parent that is not us) still answers kill(0).
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true; // no /proc (macOS): kill(0) is all we know
  }
}

/**
 * The command line of a live process (Linux /proc), used to check that a recorded pid is still ours
 * before signalling it; undefined when the process is gone or /proc is not available.
 */
export function commandLineOf(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return undefined;
  }
}

/** Waits until `pid` is gone; false when it still lives after `timeoutMs`. */
export async function waitForPidExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

/**
 * Stops a process that is not our child (e.g. the persistent cluster's, started by an earlier command):
 * SIGTERM, then SIGKILL if it still runs after `graceMs`. Resolves when it is gone.
 */
export async function terminatePid(pid: number, graceMs: number): Promise<"terminated" | "killed" | "gone"> {
  if (!isAlive(pid)) return "gone";
  signal(pid, "SIGTERM");
  if (await waitForPidExit(pid, graceMs)) return "terminated";
  signal(pid, "SIGKILL");
  await waitForPidExit(pid, 10_000);
  return "killed";
}

/** How a child ended. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** What to start. */
export interface ChildSpec {
  /** A short name for messages ("etcd", "kube-apiserver"). */
  name: string;
  /** The executable's path. */
  command: string;
  args: readonly string[];
  /** The child's stdout and stderr are appended to this file (no pipes: the child never waits on us). */
  logFile: string;
  /** Outlive this process (own session, no parent-death signal, no exit hooks). Default false. */
  detached?: boolean;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /**
   * How a non-detached child learns that its parent died (layer 3 above): `auto` (default) uses setpriv
   * where it supports --pdeathsig, else the shell watchdog; `watchdog` forces the shell watchdog.
   */
  parentDeath?: "auto" | "watchdog";
}

/** A running child. */
export interface Child {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Settles when the child has exited (never rejects). */
  readonly exited: Promise<ExitStatus>;
  /** The exit status once exited, else undefined. */
  exitStatus(): ExitStatus | undefined;
  /** The last `lines` lines of the child's log file. */
  logTail(lines?: number): Promise<string>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. Safe to call twice. */
  stop(graceMs: number): Promise<ExitStatus>;
}

/** Starts a child process. Throws when the executable cannot be started at all. */
export async function spawnChild(spec: ChildSpec): Promise<Child> {
  try {
    accessSync(spec.command, constants.X_OK);
  } catch {
    throw new Error(`cannot start ${spec.name}: ${spec.command} is not an executable file`);
  }
  const logFd = openSync(spec.logFile, "a");
  let child: ChildProcess;
  const [command, args] =
    spec.detached || spec.parentDeath === "watchdog"
      ? [spec.command, [...spec.args]]
      : withParentDeathSignal(spec);
  try {
    child = spawn(command, args, {
      stdio: ["ignore", logFd, logFd],
      detached: spec.detached ?? false,
      env: { ...process.env, ...spec.env },
    });
  } finally {
    closeSync(logFd); // the child holds its own copy
  }
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", (error) =>
      reject(new Error(`cannot start ${spec.name} (${spec.command}): ${error.message}`)),
    );
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`cannot start ${spec.name}: no pid`);

  let status: ExitStatus | undefined;
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once("exit", (code, sig) => {
      status = { code, signal: sig };
      resolve(status);
    });
  });

  let watchdog: ChildProcess | undefined;
  let unregister = () => {};
  if (spec.detached) {
    child.unref();
  } else {
    if (command !== "setpriv") watchdog = startWatchdog(pid);
    unregister = onParentExit(() => {
      signal(pid, "SIGKILL");
      if (watchdog?.pid) signal(watchdog.pid, "SIGKILL");
    });
    void exited.then(() => {
      unregister();
      if (watchdog?.pid) signal(watchdog.pid, "SIGKILL");
    });
  }

  return {
    name: spec.name,
    pid,
    logFile: spec.logFile,
    exited,
    exitStatus: () => status,
    logTail: (lines = 20) => tailFile(spec.logFile, lines),
    async stop(graceMs: number) {
      if (status) return status;
      signal(pid, "SIGTERM");
      const timer = setTimeout(() => signal(pid, "SIGKILL"), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/**
 * Whether the module at `moduleFile` (its `import.meta.filename`) is the script node was started with
 * (`node that.ts`, or through a symlink such as `npm run`'s), rather than imported by another module.
 */
export function isInvokedDirectly(moduleFile: string): boolean {
  try {
    return realpathSync(process.argv[1] ?? "") === realpathSync(moduleFile);
  } catch {
    return false;
  }
}

/** Lowers a process's CPU priority (nice 10), so a long build leaves room for everything else. */
export function lowerPriority(pid: number): void {
  try {
    setPriority(pid, 10);
  } catch {
    // not permitted or not supported: run at normal priority
  }
}

type Cleanup = () => void;
const cleanups = new Set<Cleanup>();
const EXIT_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
let hooksInstalled = false;

/**
 * Registers a synchronous cleanup to run if this process exits (normally, by an uncaught error, or on
 * SIGINT / SIGTERM / SIGHUP) while it is registered. Returns the function that unregisters it.
 * After a signal, the cleanups run and — if nothing else listens for that signal — the signal is
 * raised again so the process ends the way it would have without us.
 */
export function onParentExit(cleanup: Cleanup): () => void {
  cleanups.add(cleanup);
  if (!hooksInstalled) {
    hooksInstalled = true;
    process.on("exit", runCleanups);
    for (const sig of EXIT_SIGNALS) process.on(sig, onSignal);
  }
  return () => {
    cleanups.delete(cleanup);
  };
}

function runCleanups(): void {
  for (const cleanup of [...cleanups]) {
    cleanups.delete(cleanup);
    try {
      cleanup();
    } catch {
      // best effort: the process is going away
    }
  }
}

function onSignal(sig: NodeJS.Signals): void {
  runCleanups();
  if (process.listenerCount(sig) === 1) {
    process.off("exit", runCleanups);
    for (const s of EXIT_SIGNALS) process.off(s, onSignal);
    hooksInstalled = false;
    process.kill(process.pid, sig);
  }
}

let setprivSupportsPdeathsig: boolean | undefined;

/** `setpriv --pdeathsig KILL -- command args...` when util-linux setpriv is there (Linux), else as is. */
function withParentDeathSignal(spec: ChildSpec): [string, string[]] {
  setprivSupportsPdeathsig ??=
    process.platform === "linux" &&
    (spawnSync("setpriv", ["--help"], { encoding: "utf8" }).stdout ?? "").includes("--pdeathsig");
  return setprivSupportsPdeathsig
    ? ["setpriv", ["--pdeathsig", "KILL", "--", spec.command, ...spec.args]]
    : [spec.command, [...spec.args]];
}

/** The fallback: a detached shell that kills `childPid` once our pid is gone (polled every second). */
function startWatchdog(childPid: number): ChildProcess | undefined {
  try {
    const watchdog = spawn(
      "sh",
      [
        "-c",
        'while kill -0 "$1" 2>/dev/null; do sleep 1; done; kill -9 "$2" 2>/dev/null',
        "envtest-watchdog",
      ].concat(String(process.pid), String(childPid)),
      { stdio: "ignore", detached: true },
    );
    watchdog.on("error", () => {});
    watchdog.unref();
    return watchdog;
  } catch {
    return undefined;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/** The last `lines` lines of a text file (reads at most its last 64 KiB); "" when it cannot be read. */
export async function tailFile(path: string, lines: number): Promise<string> {
  try {
    const file = await open(path, "r");
    try {
      const { size } = await file.stat();
      const length = Math.min(size, 64 * 1024);
      const buffer = Buffer.alloc(length);
      await file.read(buffer, 0, length, size - length);
      return buffer.toString("utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } finally {
      await file.close();
    }
  } catch {
    return "";
  }
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

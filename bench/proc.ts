/**
 * What Linux's /proc says about a process and the machine: resident memory, CPU time, and how busy the
 * machine was overall. The benchmark reads these for the controller, kube-apiserver, etcd, the cloud and
 * itself, so "where the time goes" is answered in CPU seconds per process, not guessed.
 */
import { readFileSync } from "node:fs";

/**
 * Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`). USER_HZ is part of Linux's ABI and 100 on
 * every architecture Node runs on.
 */
export const CLOCK_TICKS_PER_SECOND = 100;

/** A process's memory from /proc/PID/status, in bytes. */
export interface ProcessMemory {
  /** VmRSS: resident now. */
  rssBytes: number;
  /** VmHWM: the highest resident size so far. */
  peakRssBytes: number;
  /** RssAnon: the process's own memory (heap, stacks, malloc) — VmRSS minus file pages and shared memory. */
  rssAnonBytes: number;
  /** RssFile: resident pages of mapped files, mostly the node binary's code, shared with every node process. */
  rssFileBytes: number;
}

/** Parses the `Name:  value kB` lines of /proc/PID/status into bytes. */
export function parseStatusMemory(status: string): ProcessMemory {
  const kb = (field: string): number => {
    const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB$`, "m").exec(status);
    if (!m?.[1]) throw new Error(`cannot read ${field} from /proc/PID/status`);
    return Number(m[1]) * 1024;
  };
  return {
    rssBytes: kb("VmRSS"),
    peakRssBytes: kb("VmHWM"),
    rssAnonBytes: kb("RssAnon"),
    rssFileBytes: kb("RssFile"),
  };
}

/** The memory of `pid` now. Throws when the process is gone. */
export function memoryOf(pid: number): ProcessMemory {
  return parseStatusMemory(readFileSync(`/proc/${pid}/status`, "utf8"));
}

/**
 * User + system CPU seconds of one /proc/PID/stat line. The command name (field 2) is in parentheses and may
 * hold spaces, so fields are counted after its closing parenthesis: utime and stime are fields 14 and 15.
 */
export function parseStatCpuSeconds(stat: string): number {
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime))
    throw new Error("cannot read CPU times from /proc/PID/stat");
  return (utime + stime) / CLOCK_TICKS_PER_SECOND;
}

/** CPU seconds `pid` has used so far, or undefined when it is gone. */
export function cpuSecondsOf(pid: number): number | undefined {
  try {
    return parseStatCpuSeconds(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return undefined;
  }
}

/** The machine's CPU time so far (all cores), in seconds, from the first line of /proc/stat. */
export interface MachineCpu {
  /** user + nice + system + irq + softirq: work done, by anyone. */
  busy: number;
  /** idle + iowait. */
  idle: number;
  /** Time the hypervisor gave our virtual CPUs to someone else. High steal makes every figure slower. */
  steal: number;
}

/** Parses the aggregate `cpu` line of /proc/stat. */
export function parseMachineCpu(procStat: string): MachineCpu {
  const line = procStat.split("\n").find((l) => l.startsWith("cpu "));
  if (!line) throw new Error("cannot find the cpu line in /proc/stat");
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const s = (ticks: number) => ticks / CLOCK_TICKS_PER_SECOND;
  return { busy: s(user + nice + system + irq + softirq), idle: s(idle + iowait), steal: s(steal) };
}

/** The machine's CPU time now, or undefined where there is no /proc/stat. */
export function machineCpu(): MachineCpu | undefined {
  try {
    return parseMachineCpu(readFileSync("/proc/stat", "utf8"));
  } catch {
    return undefined;
  }
}

/** VmRSS of `pid` now, in bytes, or undefined when it is gone. */
export function rssOf(pid: number): number | undefined {
  try {
    return memoryOf(pid).rssBytes;
  } catch {
    return undefined;
  }
}

/** What a {@link PeakRssSampler} read of one process over its window. */
export interface RssWindow {
  /** The first reading: VmRSS when the window opened. */
  beforeBytes: number;
  /** The highest VmRSS read in the window, the first and last readings included. */
  peakBytes: number;
  /** Readings taken. */
  samples: number;
}

/**
 * Reads the VmRSS of some processes (role → pid) now and then over a window, keeping each one's first reading
 * and its highest. VmHWM cannot say this: it is the peak of the process's whole life, so a peak reached before
 * the window (the converge, for the API server) would hide the window's own. A peak shorter than the interval
 * between two readings can be missed: the figure is a lower bound. A process never read (gone) is left out.
 */
export class PeakRssSampler<Role extends string> {
  readonly #pids: [Role, number][];
  readonly #intervalMs: number;
  readonly #read: (pid: number) => number | undefined;
  readonly #seen = new Map<Role, RssWindow>();
  #timer: NodeJS.Timeout | undefined;

  /** `read`: VmRSS from /proc by default (tests give their own). */
  constructor(
    pids: Partial<Record<Role, number>>,
    {
      intervalMs = 200,
      read = rssOf,
    }: { intervalMs?: number; read?: (pid: number) => number | undefined } = {},
  ) {
    this.#pids = (Object.entries(pids) as [Role, number | undefined][]).filter(
      (e): e is [Role, number] => e[1] !== undefined,
    );
    this.#intervalMs = intervalMs;
    this.#read = read;
  }

  /** The time between two readings once started. */
  get intervalMs(): number {
    return this.#intervalMs;
  }

  /** One reading of every process now. */
  sample(): void {
    for (const [role, pid] of this.#pids) {
      const bytes = this.#read(pid);
      if (bytes === undefined) continue;
      const seen = this.#seen.get(role);
      if (seen) {
        seen.peakBytes = Math.max(seen.peakBytes, bytes);
        seen.samples++;
      } else {
        this.#seen.set(role, { beforeBytes: bytes, peakBytes: bytes, samples: 1 });
      }
    }
  }

  /** Opens the window: a reading now, then one every `intervalMs` until `stop()`. */
  start(): this {
    this.sample();
    this.#timer ??= setInterval(() => this.sample(), this.#intervalMs);
    return this;
  }

  /** Closes the window with a last reading; what was read of each process. */
  stop(): Partial<Record<Role, RssWindow>> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.sample();
    return Object.fromEntries([...this.#seen].map(([role, w]) => [role, { ...w }])) as Partial<
      Record<Role, RssWindow>
    >;
  }
}

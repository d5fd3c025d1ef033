/**
 * CPU accounting of a scenario: how many CPU seconds each process of the stack used between two moments,
 * what the rest of the machine used (other engineers' work on a shared box), and the hypervisor's steal.
 * This is how the report says where the time went — controller, API server, etcd, cloud — in numbers.
 */
import { cpuSecondsOf, machineCpu, type MachineCpu } from "./proc.ts";

/** The processes the benchmark accounts for, by role. The bench itself is measured in-process. */
export type ProcessRole = "controller" | "apiServer" | "etcd" | "cloud";

/** The CPU clocks at one moment. */
export interface CpuSnapshot {
  /** performance.now() when taken. */
  atMs: number;
  /** Each role's pid and its CPU seconds so far (undefined: the process was gone). */
  processes: Partial<Record<ProcessRole, { pid: number; seconds: number | undefined }>>;
  /** This process (the bench: workload, watches, metrics reads). */
  benchSeconds: number;
  machine: MachineCpu | undefined;
}

/** CPU seconds used between two snapshots. */
export interface CpuUsage {
  wallSeconds: number;
  /** Per role. A process that was restarted in between counts from its new start. */
  seconds: Partial<Record<ProcessRole | "bench", number>>;
  /** Everything else the machine ran (busy time minus ours); undefined without /proc/stat. */
  otherSeconds?: number;
  /** CPU time stolen by the hypervisor. */
  stealSeconds?: number;
  /** The machine's CPUs × wall time: the most that could have been used. */
  capacitySeconds?: number;
}

/** Takes a snapshot of `pids` (role → pid). */
export function cpuSnapshot(pids: Partial<Record<ProcessRole, number>>): CpuSnapshot {
  const processes: CpuSnapshot["processes"] = {};
  for (const [role, pid] of Object.entries(pids) as [ProcessRole, number][]) {
    processes[role] = { pid, seconds: cpuSecondsOf(pid) };
  }
  const own = process.cpuUsage();
  return {
    atMs: performance.now(),
    processes,
    benchSeconds: (own.user + own.system) / 1e6,
    machine: machineCpu(),
  };
}

/** The CPU used between `a` and `b` (taken later), with `cores` CPUs on the machine. */
export function cpuBetween(a: CpuSnapshot, b: CpuSnapshot, cores: number): CpuUsage {
  const seconds: CpuUsage["seconds"] = { bench: round(b.benchSeconds - a.benchSeconds) };
  let ours = seconds.bench ?? 0;
  for (const [role, after] of Object.entries(b.processes) as [
    ProcessRole,
    { pid: number; seconds: number | undefined },
  ][]) {
    if (after.seconds === undefined) continue;
    const before = a.processes[role];
    const start = before && before.pid === after.pid ? (before.seconds ?? 0) : 0;
    seconds[role] = round(after.seconds - start);
    ours += after.seconds - start;
  }
  const wallSeconds = round((b.atMs - a.atMs) / 1000);
  const usage: CpuUsage = { wallSeconds, seconds };
  if (a.machine && b.machine) {
    usage.otherSeconds = round(Math.max(0, b.machine.busy - a.machine.busy - ours));
    usage.stealSeconds = round(b.machine.steal - a.machine.steal);
    usage.capacitySeconds = round(wallSeconds * cores);
  }
  return usage;
}

function round(seconds: number): number {
  return Math.round(seconds * 100) / 100;
}

import { describe, expect, test } from "vitest";
import {
  cpuSecondsOf,
  memoryOf,
  PeakRssSampler,
  parseMachineCpu,
  parseStatCpuSeconds,
  parseStatusMemory,
  rssOf,
} from "./proc.ts";

describe("parseStatusMemory", () => {
  test("reads VmRSS, VmHWM, RssAnon and RssFile in bytes", () => {
    const status =
      "Name:\tnode\nVmPeak:\t 1200000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nRssAnon:\t   71680 kB\nRssFile:\t   30720 kB\nRssShmem:\t       0 kB\n";
    expect(parseStatusMemory(status)).toEqual({
      rssBytes: 100 * 1024 * 1024,
      peakRssBytes: 200 * 1024 * 1024,
      rssAnonBytes: 70 * 1024 * 1024,
      rssFileBytes: 30 * 1024 * 1024,
    });
  });

  test("a status without VmRSS (a kernel thread) is a clear error", () => {
    expect(() => parseStatusMemory("Name:\tkthreadd\n")).toThrow("cannot read VmRSS from /proc/PID/status");
  });
});

describe("parseStatCpuSeconds", () => {
  test.each([
    {
      reason: "utime + stime (fields 14 and 15) in clock ticks of 1/100 s",
      stat: "4242 (node) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 125 0 0 20 0 11 0 100 0 0",
      want: 3.75,
    },
    {
      reason: "a command name with spaces and parentheses does not shift the fields",
      stat: "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 1000 0 0 0 100 50 0 0 20 0 11 0 100 0 0",
      want: 1.5,
    },
  ])("$reason", ({ stat, want }) => {
    expect(parseStatCpuSeconds(stat)).toBe(want);
  });
});

describe("parseMachineCpu", () => {
  test("busy, idle and steal seconds from the aggregate cpu line", () => {
    const procStat = "cpu  1000 100 300 5000 200 10 40 70 0 0\ncpu0 500 50 150 2500 100 5 20 35 0 0\n";
    expect(parseMachineCpu(procStat)).toEqual({ busy: 14.5, idle: 52, steal: 0.7 });
  });
});

describe("PeakRssSampler", () => {
  /** A reader that answers each pid's readings in order (undefined: gone). */
  const reader = (readings: Record<number, (number | undefined)[]>) => {
    const next = new Map(Object.entries(readings).map(([pid, values]) => [Number(pid), [...values]]));
    return (pid: number) => next.get(pid)?.shift();
  };

  const cases: {
    reason: string;
    pids: Partial<Record<"apiServer" | "etcd", number>>;
    readings: Record<number, (number | undefined)[]>;
    want: object;
  }[] = [
    {
      reason: "the first reading is the RSS before; the peak is the highest reading, the last included",
      pids: { apiServer: 1 },
      readings: { 1: [100, 180, 150, 190] },
      want: { apiServer: { beforeBytes: 100, peakBytes: 190, samples: 4 } },
    },
    {
      reason: "a peak in the middle stays the peak when the RSS falls back",
      pids: { apiServer: 1, etcd: 2 },
      readings: { 1: [100, 300, 120, 110], 2: [50, 50, 60, 55] },
      want: {
        apiServer: { beforeBytes: 100, peakBytes: 300, samples: 4 },
        etcd: { beforeBytes: 50, peakBytes: 60, samples: 4 },
      },
    },
    {
      reason: "a process gone mid-window keeps what was read of it",
      pids: { apiServer: 1 },
      readings: { 1: [100, 200, undefined, undefined] },
      want: { apiServer: { beforeBytes: 100, peakBytes: 200, samples: 2 } },
    },
    {
      reason: "a process never read is left out, and an undefined pid is not read",
      pids: { apiServer: 1, etcd: undefined },
      readings: { 1: [undefined, undefined, undefined, undefined] },
      want: {},
    },
  ];
  test.each(cases)("$reason", ({ pids, readings, want }) => {
    const sampler = new PeakRssSampler(pids, { read: reader(readings) });
    sampler.sample();
    sampler.sample();
    sampler.sample();
    sampler.sample();
    // stop() reads once more: every reader above is empty by then (gone).
    expect(sampler.stop()).toEqual(want);
  });

  test("start() reads at once and stop() once more, whatever the interval", () => {
    const sampler = new PeakRssSampler(
      { apiServer: 1 },
      { intervalMs: 3_600_000, read: reader({ 1: [10, 40] }) },
    );
    expect(sampler.start().stop()).toEqual({ apiServer: { beforeBytes: 10, peakBytes: 40, samples: 2 } });
  });
});

describe("this process, for real", () => {
  test("has a resident size and some CPU time; a pid that does not exist has none", () => {
    expect(memoryOf(process.pid).rssBytes).toBeGreaterThan(1024 * 1024);
    expect(cpuSecondsOf(process.pid)).toBeGreaterThan(0);
    expect(cpuSecondsOf(2 ** 22 + 1)).toBeUndefined(); // above pid_max's largest possible value
    expect(rssOf(process.pid)).toBeGreaterThan(1024 * 1024);
    expect(rssOf(2 ** 22 + 1)).toBeUndefined();
  });
});

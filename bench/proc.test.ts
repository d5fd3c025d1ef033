import { describe, expect, test } from "vitest";
import { cpuSecondsOf, memoryOf, parseMachineCpu, parseStatCpuSeconds, parseStatusMemory } from "./proc.ts";

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

describe("this process, for real", () => {
  test("has a resident size and some CPU time; a pid that does not exist has none", () => {
    expect(memoryOf(process.pid).rssBytes).toBeGreaterThan(1024 * 1024);
    expect(cpuSecondsOf(process.pid)).toBeGreaterThan(0);
    expect(cpuSecondsOf(2 ** 22 + 1)).toBeUndefined(); // above pid_max's largest possible value
  });
});

/**
 * Fixtures for the bench's report tests (report.test.ts, markdown.test.ts): a machine, a memory reading, parsed
 * options, and a results.json around given runs. The figures are made up; only their shape is real.
 */
import { parseBenchArgs, type BenchOptions } from "./options.ts";
import type { ControllerMemory } from "./controller.ts";
import type { BenchResults, RunRecord } from "./results.ts";

/** 2^20 bytes, as the reports count an MB. */
export const MB = 2 ** 20;

/** One settled memory reading of the controller. */
export const TEST_MEMORY: ControllerMemory = {
  rssBytes: 120 * MB,
  peakRssBytes: 130 * MB,
  rssAnonBytes: 90 * MB,
  rssFileBytes: 30 * MB,
  heapUsedBytes: 40 * MB,
  heapTotalBytes: 60 * MB,
};

/** The options of `npm run bench -- <argv>`; throws for `--help`. */
export function optionsFor(argv: string[]): BenchOptions {
  const o = parseBenchArgs(argv);
  if (o === "help") throw new Error("unexpected help");
  return o;
}

/** What a results.json holds besides its options and runs; each has a default. */
export interface TestResultsFields {
  startedAt?: string;
  finishedAt?: string;
  command?: string;
  gitCommit?: string;
}

/** A results.json of `runs` made with `options`, on a made-up 2-core machine. */
export function testResults(
  options: BenchOptions,
  runs: RunRecord[],
  fields: TestResultsFields = {},
): BenchResults {
  return {
    format: 1,
    startedAt: fields.startedAt ?? "2026-11-22T10:00:00.000Z",
    finishedAt: fields.finishedAt ?? "2026-11-22T10:10:00.000Z",
    command: fields.command ?? "npm run bench",
    options,
    machine: {
      cpuModel: "Test CPU",
      cores: 2,
      memoryBytes: 8 * 2 ** 30,
      os: "Linux 6",
      node: "v24.0.0",
      kubernetes: "v1.36.3",
      etcd: "v3.6.8",
      gitCommit: fields.gitCommit ?? "0123456789abcdef",
      gitDirty: false,
      loadAverage: 0.5,
    },
    cpu: undefined,
    runs,
  };
}

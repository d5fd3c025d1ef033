import { describe, expect, it } from "vitest";
import { parseShardingArgs, renderShardingTable, SHARDING_SETUPS, type ShardingResult } from "./sharding.ts";

describe("parseShardingArgs", () => {
  it.each([
    { argv: [], want: { shapes: 10_000, concurrency: 64, only: [], build: false }, reason: "the defaults" },
    {
      argv: ["--build"],
      want: { shapes: 10_000, concurrency: 64, only: [], build: true },
      reason: "--build runs the replicas from the image's build",
    },
    {
      argv: ["--shapes", "300", "--only", "4 replicas", "--json", "r.json"],
      want: { shapes: 300, concurrency: 64, only: ["4 replicas"], json: "r.json", build: false },
      reason: "flags",
    },
  ])("$reason", ({ argv, want }) => {
    expect(parseShardingArgs(argv)).toEqual(want);
  });

  it.each([
    { argv: ["--shapes", "0"], error: /--shapes "0": it must be a whole number from 1/, reason: "no Shapes" },
    { argv: ["--only", "9 replicas"], error: /no setup's name contains it/, reason: "an unknown setup" },
    { argv: ["--replicas", "3"], error: /cannot parse the command line/, reason: "an unknown flag" },
  ])("refuses $reason in one line", ({ argv, error }) => {
    expect(() => parseShardingArgs(argv)).toThrow(error);
  });

  it("answers --help", () => {
    expect(parseShardingArgs(["--help"])).toBe("help");
  });
});

describe("renderShardingTable", () => {
  it("has a row per setup, with each replica's memory (settled and idle) and Shapes, and says which failed", () => {
    const [one, two] = SHARDING_SETUPS as [(typeof SHARDING_SETUPS)[0], (typeof SHARDING_SETUPS)[0]];
    const results: ShardingResult[] = [
      {
        setup: one,
        shapes: 1000,
        convergeMs: 12_345,
        replicas: [
          {
            name: "replica-0",
            idleRssBytes: 150 * 1024 * 1024,
            rssBytes: 200 * 1024 * 1024,
            heapUsedBytes: 1,
            ownedShapes: 1000,
            share: 1,
          },
        ],
        cpu: { wallSeconds: 12, apiServer: 12, etcd: 2, cloud: 1, replicas: 6, bench: 1 },
      },
      { setup: two, shapes: 1000, error: "cannot start the stack: no etcd" },
    ];
    const table = renderShardingTable(results);
    expect(table).toContain(
      "| 1 replica | 12.3 s | 200 | 150 | 1000 | 12 s (50 %) | 6 s (25 %) | 3 s (13 %) |",
    );
    expect(table).toContain("| 2 replicas, server filter | — | — | — | — | — | — | — |");
    expect(table).toContain("- 2 replicas, server filter: failed: cannot start the stack: no etcd");
  });
});

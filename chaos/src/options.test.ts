import { describe, expect, it } from "vitest";
import { KILL_KINDS, parseChaosArgs, topologyOf, usage, type ChaosOptions } from "./options.ts";
import { FAULT_KINDS, planTrial, TOPOLOGIES } from "./plan.ts";
import { deriveSeed } from "./prng.ts";

const parse = (...argv: string[]) => parseChaosArgs(argv, () => 0.5) as ChaosOptions;

describe("parseChaosArgs", () => {
  it("has sensible defaults, and a random seed it says is random", () => {
    expect(parse()).toEqual({
      trials: 8,
      seed: 0x80000000,
      randomSeed: true,
      firstTrial: 1,
      shapes: 8,
      durationMs: 40_000,
      settleTimeoutMs: 60_000,
      topology: "mixed",
      faults: [...FAULT_KINDS],
      json: undefined,
      keepLogs: false,
      logLevel: "debug",
      leakGrace: "5s",
    });
  });

  it("takes every flag", () => {
    expect(
      parse(
        "--trials",
        "2",
        "--seed",
        "1",
        "--first-trial",
        "7",
        "--shapes",
        "5",
        "--duration",
        "20s",
        "--settle-timeout",
        "2m",
        "--topology",
        "ha",
        "--faults",
        "leader-kill, cloud-outage",
        "--json",
        "/tmp/x.json",
        "--keep-logs",
        "--log-level",
        "info",
        "--leak-grace",
        "10s",
      ),
    ).toEqual({
      trials: 2,
      seed: 1,
      randomSeed: false,
      firstTrial: 7,
      shapes: 5,
      durationMs: 20_000,
      settleTimeoutMs: 120_000,
      topology: "ha",
      faults: ["leader-kill", "cloud-outage"],
      json: "/tmp/x.json",
      keepLogs: true,
      logLevel: "info",
      leakGrace: "10s",
    });
  });

  it("takes every topology, and mixed", () => {
    for (const topology of ["mixed", "single", "ha", "two-clusters", "sharded"])
      expect(parse("--topology", topology).topology).toBe(topology);
  });

  it("answers --help", () => {
    expect(parseChaosArgs(["--help"])).toBe("help");
    expect(usage()).toMatch(/--trials N/);
    for (const kind of FAULT_KINDS) expect(usage()).toContain(kind);
    expect(usage()).toMatch(/--topology T +mixed, single, ha, two-clusters or sharded/);
    expect(usage()).toContain("4 sharded");
  });

  it.each([
    {
      argv: ["--trials", "0"],
      error: /^cannot use --trials "0": it must be a whole number from 1/,
      reason: "no trial",
    },
    { argv: ["--trials", "2.5"], error: /^cannot use --trials/, reason: "not whole" },
    { argv: ["--seed=-1"], error: /^cannot use --seed "-1"/, reason: "negative seed" },
    { argv: ["--seed", "4294967296"], error: /^cannot use --seed/, reason: "seed beyond 32 bits" },
    {
      argv: ["--duration", "20"],
      error: /^cannot use --duration "20": it must be a duration/,
      reason: "20 ms is too short",
    },
    { argv: ["--duration", "soon"], error: /^cannot use --duration/, reason: "not a duration" },
    {
      argv: ["--topology", "triple"],
      error: /^cannot use --topology "triple": it must be mixed, single, ha, two-clusters, sharded$/,
      reason: "unknown topology",
    },
    {
      argv: ["--faults", "cloud-outage,meteor"],
      error: /unknown kind\(s\) meteor; the kinds are controller-kill/,
      reason: "unknown fault",
    },
    { argv: ["--faults", ","], error: /no kind given/, reason: "empty fault list" },
    { argv: ["--log-level", "loud"], error: /^cannot use --log-level "loud"/, reason: "unknown log level" },
    {
      argv: ["--nope"],
      error: /^cannot parse the command line: .*nope.*\(see --help\)/,
      reason: "unknown flag",
    },
    { argv: ["extra"], error: /^cannot parse the command line/, reason: "a positional argument" },
  ])("refuses $argv: $reason", ({ argv, error }) => {
    expect(() => parseChaosArgs(argv)).toThrow(error);
  });
});

describe("topologyOf", () => {
  it("takes each topology in turn when mixed (a quarter of the trials each), else keeps the choice", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((t) => topologyOf("mixed", t))).toEqual([
      "single",
      "ha",
      "two-clusters",
      "sharded",
      "single",
      "ha",
      "two-clusters",
      "sharded",
    ]);
    const counts = new Map<string, number>();
    for (let t = 1; t <= 24; t++)
      counts.set(topologyOf("mixed", t), (counts.get(topologyOf("mixed", t)) ?? 0) + 1);
    expect(Object.fromEntries(counts)).toEqual({ single: 6, ha: 6, "two-clusters": 6, sharded: 6 });
    expect(topologyOf("ha", 1)).toBe("ha");
    expect(topologyOf("single", 2)).toBe("single");
    expect(topologyOf("two-clusters", 1)).toBe("two-clusters");
    expect(topologyOf("sharded", 3)).toBe("sharded");
  });
});

describe("profiles", () => {
  const cases: { reason: string; argv: string[]; expected: Partial<ChaosOptions> }[] = [
    {
      reason: "scale: 200 Shapes, two trials a topology, a fixed seed, faults weighted to kills",
      argv: ["--profile", "scale"],
      expected: {
        profile: "scale",
        trials: 8,
        seed: 2026,
        randomSeed: false,
        shapes: 200,
        durationMs: 120_000,
        faults: [
          "controller-kill",
          "leader-kill",
          "kill-after-cloud-write",
          "missed-deletion",
          "cloud-human-edit",
        ],
      },
    },
    {
      reason: "a flag beside the profile wins over the profile's value",
      argv: ["--profile", "scale", "--trials", "1", "--shapes", "20", "--duration", "20s"],
      expected: { profile: "scale", trials: 1, shapes: 20, durationMs: 20_000, seed: 2026 },
    },
  ];
  it.each(cases)("$reason", ({ argv, expected }) => {
    expect(parse(...argv)).toMatchObject(expected);
  });

  it("refuses an unknown profile in one line", () => {
    expect(() => parse("--profile", "huge")).toThrow(/cannot use --profile "huge": it must be scale/);
  });
});

describe("the scale profile's plans", () => {
  it("has at least 100 process kills over its trials, at least 200 Shapes each, every topology", () => {
    const o = parse("--profile", "scale");
    const plans = Array.from({ length: o.trials }, (_, i) =>
      planTrial({
        trial: i + 1,
        seed: deriveSeed(o.seed, i + 1),
        topology: topologyOf(o.topology, i + 1),
        shapes: o.shapes,
        durationMs: o.durationMs,
        kinds: o.faults,
      }),
    );
    const kills = plans.flatMap((p) => p.episodes).filter((e) => KILL_KINDS.includes(e.fault.kind)).length;
    expect(kills).toBeGreaterThanOrEqual(100);
    expect(plans.every((p) => p.initial.filter((op) => op.op === "create").length >= 200)).toBe(true);
    expect(new Set(plans.map((p) => p.topology))).toEqual(new Set(TOPOLOGIES));
  });
});

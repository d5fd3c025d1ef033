import { describe, expect, it } from "vitest";
import {
  formatDuration,
  percentiles,
  renderMarkdownTables,
  renderReport,
  renderText,
  summarize,
} from "./report.ts";
import type { TrialResult } from "./trial.ts";

function trial(overrides: Partial<TrialResult>): TrialResult {
  return {
    trial: 1,
    seed: 11,
    topology: "single",
    clusters: [{ name: "east", ownerId: "k8s-1" }],
    startedAt: "2026-01-01T00:00:00.000Z",
    wallMs: 1,
    faults: [],
    settles: [],
    initialSettleMs: 1_000,
    violations: [],
    workload: { creates: 0, updates: 0, deletes: 0, humanEdits: 0, skipped: 0 },
    expectations: { orphans: 0, disowned: 0, renamed: 0 },
    actions: [],
    cloudWrites: { total: 0, byControllers: 0, ownerChecked: 0 },
    identities: [],
    ...overrides,
  };
}

const fault = (kind: "cloud-outage" | "cloud-human-edit", background = false) => ({
  kind,
  episode: 1,
  background,
  startedAtMs: 0,
  healedAtMs: 0,
  detail: "",
});

describe("summarize", () => {
  const results = [
    trial({
      faults: [fault("cloud-outage"), fault("cloud-human-edit", true)],
      settles: [{ episode: 1, kind: "cloud-outage", settleMs: 2_000 }],
    }),
    trial({
      trial: 2,
      faults: [fault("cloud-outage"), fault("cloud-outage")],
      settles: [
        { episode: 1, kind: "cloud-outage", settleMs: 4_000 },
        { episode: 2, kind: "cloud-outage", settleMs: undefined },
      ],
      violations: [{ invariant: "no-leak", subject: "cloud shape x", detail: "leaked" }],
    }),
    trial({ trial: 3, topology: "two-clusters", error: "Error: cannot start\n  at ..." }),
  ];
  const figures = summarize(results);

  it("counts faults by kind, episode faults apart from background edits", () => {
    const outage = figures.kinds.find((k) => k.kind === "cloud-outage");
    expect(outage).toMatchObject({
      injected: 3,
      background: 0,
      settled: 2,
      unsettled: 1,
      p50Ms: 2_000,
      p99Ms: 4_000,
    });
    expect(figures.kinds.find((k) => k.kind === "cloud-human-edit")).toMatchObject({
      injected: 0,
      background: 1,
    });
    expect(figures.kinds.find((k) => k.kind === "leader-kill")).toMatchObject({ injected: 0, settled: 0 });
    expect(figures.kinds.find((k) => k.kind === "leader-kill")?.p50Ms).toBeUndefined();
  });

  it("counts violations by invariant, episodes, faults and harness errors", () => {
    expect(figures).toMatchObject({
      trials: 3,
      trialErrors: 1,
      episodes: 3,
      faultsInjected: 4,
      violations: 1,
    });
    expect(figures.violationsByInvariant["no-leak"]).toBe(1);
    expect(figures.violationsByInvariant["shape-ready"]).toBe(0);
    expect(figures.initialSettle).toEqual({ p50Ms: 1_000, p99Ms: 1_000, maxMs: 1_000 });
  });

  it("counts trials, episodes, faults and violations by topology, every topology listed", () => {
    expect(figures.topologies).toEqual([
      { topology: "single", trials: 2, trialErrors: 0, episodes: 3, faultsInjected: 4, violations: 1 },
      { topology: "ha", trials: 0, trialErrors: 0, episodes: 0, faultsInjected: 0, violations: 0 },
      { topology: "two-clusters", trials: 1, trialErrors: 1, episodes: 0, faultsInjected: 0, violations: 0 },
      { topology: "sharded", trials: 0, trialErrors: 0, episodes: 0, faultsInjected: 0, violations: 0 },
    ]);
  });

  it("renders the tables, the totals and every violation for people", () => {
    const text = renderReport(figures, results);
    const [two, four] = [formatDuration(2_000), formatDuration(4_000)];
    expect(text).toMatch(new RegExp(`cloud-outage +3 +0 +2 +1 +${two} +${four} +${four}\\n`));
    expect(text).not.toMatch(/^leader-kill/m); // kinds never injected are left out
    expect(text).toContain(
      "3 trial(s), 3 episodes, 4 faults injected, 1 invariant violation(s), 1 trial(s) the harness could not finish",
    );
    expect(text).toMatch(/^single +2 +3 +4 +1 +0\ntwo-clusters +1 +0 +0 +0 +1\n/m);
    expect(text).not.toMatch(/^(ha|sharded) /m); // topologies without a trial are left out
    expect(text).toMatch(/^no-foreign-write +0$/m);
    expect(text).toContain("trial 2 (single, seed 11): no-leak — cloud shape x: leaked");
    expect(text).toContain("trial 3 (two-clusters, seed 11): harness error — Error: cannot start");
    expect(renderMarkdownTables(figures)).toContain("| two-clusters | 1 | 0 | 0 | 0 | 1 |");
    expect(renderMarkdownTables(figures)).toContain("| no-foreign-write | 0 |");
    expect(renderMarkdownTables(figures)).toContain(
      `| cloud-outage | 3 | 0 | 2 | 1 | ${two} | ${four} | ${four} |`,
    );
  });
});

describe("percentiles", () => {
  it.each([
    { values: [], want: undefined, reason: "no value, no percentile" },
    { values: [5], want: { p50: 5, p99: 5, max: 5 }, reason: "one value is every percentile" },
    {
      values: [4, 1, 3, 2],
      want: { p50: 2, p99: 4, max: 4 },
      reason: "nearest rank: p50 of four is the 2nd",
    },
    {
      values: Array.from({ length: 100 }, (_, i) => 100 - i),
      want: { p50: 50, p99: 99, max: 100 },
      reason: "p99 of 100 values is the 99th smallest, never an interpolation",
    },
  ])("$reason", ({ values, want }) => {
    expect(percentiles(values)).toEqual(want);
  });
});

describe("renderText", () => {
  it("pads columns, aligns numbers right, and rules the header", () => {
    const text = renderText({
      headers: ["kind", "n"],
      align: ["left", "right"],
      rows: [
        ["a", "10"],
        ["long", "2"],
      ],
    });
    expect(text).toBe("kind   n\n----  --\na     10\nlong   2\n");
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(12_345)).toBe("12.3 s");
  });
});

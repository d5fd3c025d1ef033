import { describe, expect, test } from "vitest";
import { processKills, renderChaosSection, type ChaosRunFile } from "./docs.ts";
import type { FaultRecord } from "./faults.ts";
import { parseChaosArgs, type ChaosOptions } from "./options.ts";
import type { FaultKind } from "./plan.ts";
import { summarize } from "./report.ts";
import type { TrialResult } from "./trial.ts";

const fault = (kind: FaultKind, background = false): FaultRecord => ({
  kind,
  episode: 1,
  background,
  startedAtMs: 0,
  healedAtMs: 0,
  detail: "",
});

/** A trial with these faults and nothing else of note. */
const trial = (faults: FaultRecord[], violations: TrialResult["violations"] = []): TrialResult => ({
  trial: 1,
  seed: 7,
  topology: "single",
  clusters: [{ name: "a", ownerId: "k8s" }],
  startedAt: "2026-11-29T00:00:00.000Z",
  wallMs: 1_000,
  faults,
  settles: [],
  initialSettleMs: undefined,
  violations,
  workload: { creates: 1_200, updates: 3, deletes: 4, humanEdits: 5, skipped: 0 },
  expectations: { orphans: 0, disowned: 0, renamed: 0 },
  actions: [],
  cloudWrites: { total: 10, byControllers: 9, ownerChecked: 8 },
  identities: ["c1", "c2"],
});

describe("processKills", () => {
  const cases: { reason: string; faults: FaultRecord[]; expected: number }[] = [
    { reason: "no fault, no kill", faults: [], expected: 0 },
    {
      reason: "every kind that SIGKILLs a controller counts, a missed deletion's kill too",
      faults: [
        fault("controller-kill"),
        fault("leader-kill"),
        fault("kill-after-cloud-write"),
        fault("missed-deletion"),
      ],
      expected: 4,
    },
    {
      reason: "a pause, a cloud fault and a person's edits kill nothing",
      faults: [fault("leader-pause"), fault("cloud-outage"), fault("cloud-human-edit", true)],
      expected: 0,
    },
  ];
  test.each(cases)("$reason", ({ faults, expected }) => {
    expect(processKills(summarize([trial(faults)]))).toBe(expected);
  });
});

describe("renderChaosSection", () => {
  const options = parseChaosArgs(["--profile", "scale"]) as ChaosOptions;
  const run = (t: TrialResult): ChaosRunFile => ({
    command: "npm run chaos -- --seed 2026 --trials 8",
    code: { commit: "0123456789abcdef0123456789abcdef01234567", controllerChanged: false },
    options,
    startedAt: "2026-11-29T00:00:00.000Z",
    finishedAt: "2026-11-29T00:50:00.000Z",
    figures: summarize([t]),
    trials: [t],
  });
  test("the run line first, the command, the totals and the tables", () => {
    const text = renderChaosSection(run(trial([fault("controller-kill")])), "Run at commit 0123456 (x).");
    expect(
      text.startsWith("Run at commit 0123456 (x).\n\n```sh\nnpm run chaos -- --seed 2026 --trials 8\n```"),
    ).toBe(true);
    expect(text).toContain("1 trial of 200 Shapes each");
    expect(text).toContain("50 minutes of wall time");
    expect(text).toContain("**1 process kills**");
    expect(text).toContain("1,200 creates");
    expect(text).toContain("**Invariant violations: 0.**");
    expect(text).toContain("| topology | trials |");
    expect(text).not.toContain("The violations");
  });
  test("each violation listed, on one line", () => {
    const text = renderChaosSection(
      run(trial([], [{ invariant: "no-leak", subject: "shape x", detail: "still there\nmore" } as never])),
      "Run at commit 0123456 (x).",
    );
    expect(text).toContain("- trial 1 (single, seed 7): `no-leak` — shape x: still there\n");
  });
});

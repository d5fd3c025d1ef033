import type { CrashReport, LifecycleResult, PointResult } from "reconcile-kit/crash-points";
import { describe, expect, it } from "vitest";
import { findsAfter, renderCrashPoints, summaryLine, writesAfter, type RunMeta } from "./report.ts";

describe("writesAfter", () => {
  it.each([
    { labels: [], text: "nothing more", reason: "no write after the fault says so, never an empty cell" },
    { labels: ["a"], text: "a", reason: "one write, no count" },
    {
      labels: ["a", "b", "b", "c"],
      text: "a → b ×2 → c",
      reason: "a run of the same write is folded into one with its count",
    },
    {
      labels: ["a", "b", "a"],
      text: "a → b → a",
      reason: "only consecutive repeats fold: the order of what the controller did stays visible",
    },
    {
      labels: ["PATCH Shape status", "PATCH Shape status", "PATCH Shape status"],
      text: "PATCH Shape status ×3",
      reason: "labels with spaces fold the same, all of a list in one",
    },
  ])("$labels → $text: $reason", ({ labels, text }) => {
    expect(writesAfter(labels)).toBe(text);
  });
});

describe("findsAfter", () => {
  it.each([
    {
      fault: "crash-before" as const,
      status: undefined,
      parts: ["killed before the write reached the server", "nothing committed", "restarts"],
      reason: "the request never left the tap: no status to show",
    },
    {
      fault: "crash-after" as const,
      status: 201,
      parts: ["the write committed (HTTP 201)", "killed before hearing it", "restarts"],
      reason: "the server answered: its status says what committed",
    },
    {
      fault: "crash-after" as const,
      status: undefined,
      parts: ["the write committed, killed"],
      reason: "an unknown status is left out, not shown as undefined",
    },
    {
      fault: "fail" as const,
      status: 503,
      parts: ["failed with a 503", "nothing committed", "the same process goes on"],
      reason: "the tap's own 503: the status is not repeated",
    },
    {
      fault: "answer-lost" as const,
      status: 200,
      parts: ["the write committed (HTTP 200)", "the connection reset", "the same process goes on"],
      reason: "committed but never heard, without a kill",
    },
    {
      fault: "answer-lost" as const,
      status: undefined,
      parts: ["the write committed, the connection reset"],
      reason: "no status known: none shown",
    },
  ])("$fault (status $status): $reason", ({ fault, status, parts }) => {
    const text = findsAfter(fault, status);
    for (const part of parts) expect(text).toContain(part);
    expect(text).not.toContain("undefined");
  });
});

const point = (overrides: Partial<PointResult>): PointResult => ({
  lifecycle: "create",
  index: 1,
  side: "kube",
  write: "POST ShapeRef",
  occurrence: 1,
  fault: "crash-before",
  reached: true,
  status: undefined,
  after: [],
  recoveredMs: 1500,
  violations: [],
  ...overrides,
});

const CREATE: LifecycleResult = {
  id: "create",
  title: "a resource is created and converges",
  steps: ['kubectl apply (variant "first")'],
  skipped: undefined,
  recorded: [
    { side: "kube", label: "POST ShapeRef", occurrence: 1, status: 201 },
    { side: "external", label: "POST cloud shape", occurrence: 1, status: 201 },
  ],
  recordingViolations: [],
  points: [
    point({ after: ["POST ShapeRef", "POST cloud shape", "PATCH Shape status", "PATCH Shape status"] }),
    point({
      index: 2,
      side: "external",
      write: "POST cloud shape",
      fault: "crash-after",
      status: 201,
      after: ["POST cloud shape"],
      recoveredMs: undefined,
      violations: ["2 external objects created; the lifecycle needs 1"],
    }),
    point({
      index: 2,
      side: "external",
      write: "PATCH cloud shape",
      occurrence: 2,
      fault: "fail",
      reached: false,
    }),
  ],
};

const ADOPT: LifecycleResult = {
  id: "adopt",
  title: "an external object an earlier owner id of ours created is adopted",
  steps: [],
  skipped: "dns records has no earlier owner ids to adopt from",
  recorded: [],
  recordingViolations: [],
  points: [],
};

const REPORT: CrashReport = {
  subject: "shapes",
  lifecycles: [CREATE, ADOPT],
  tried: 2,
  notReached: 1,
  violations: 1,
  durationMs: 61_400,
};

const META: RunMeta = {
  command: "npm run crash-points -- --write-docs",
  commit: "0123456789abcdef0123456789abcdef01234567",
  dirty: false,
  date: "2026-11-26",
};

describe("summaryLine", () => {
  it.each([
    {
      report: REPORT,
      line: "shapes: 2 crash points tried over 1 lifecycle, 1 violation, 1 not reached (61 s)",
      reason: "a skipped lifecycle is not counted; points not reached are said",
    },
    {
      report: { ...REPORT, notReached: 0, violations: 0, durationMs: 1_600 },
      line: "shapes: 2 crash points tried over 1 lifecycle, 0 violations (2 s)",
      reason: "nothing unreached: no mention of it; the time rounds to the nearest second",
    },
  ])("$line: $reason", ({ report, line }) => {
    expect(summaryLine(report)).toBe(line);
  });
});

describe("renderCrashPoints", () => {
  const page = renderCrashPoints([REPORT], META);
  const rows = page.split("\n").filter((l) => /^\| \d+ \|/.test(l));

  it("starts with the command, the short commit and the date", () => {
    expect(page.split("\n")[0]).toBe(
      "Made by `npm run crash-points -- --write-docs` at commit 0123456 on 2026-11-26.",
    );
    expect(page).not.toContain("0123456789abcdef");
  });

  it.each([
    {
      meta: { ...META, dirty: true },
      text: "at commit 0123456 (with uncommitted changes) on",
      reason: "a dirty tree is said: the table may not match the commit",
    },
    {
      meta: { ...META, commit: undefined },
      text: "at an unknown commit on",
      reason: "no git: said, not a crash",
    },
  ])("says $text: $reason", ({ meta, text }) => {
    expect(renderCrashPoints([REPORT], meta)).toContain(text);
  });

  it("gives the totals over every subject, then a summary line each", () => {
    const dns: CrashReport = { ...REPORT, subject: "dns", tried: 3, notReached: 0, violations: 0 };
    const two = renderCrashPoints([REPORT, dns], META);
    expect(two).toContain("**5 crash points tried, 1 violation, 1 not reached.**");
    expect(two).toContain(`- ${summaryLine(REPORT)}`);
    expect(two).toContain(`- ${summaryLine(dns)}`);
    expect(two.indexOf("## shapes")).toBeLessThan(two.indexOf("## dns"));
    expect(renderCrashPoints([dns], META)).toContain("**3 crash points tried, 0 violations.**");
  });

  it("has a section per lifecycle, a skipped one with its reason and no table", () => {
    expect(page).toContain("## shapes");
    expect(page).toContain("### create: a resource is created and converges");
    expect(page).toContain('Steps: (1) kubectl apply (variant "first").');
    expect(page).toContain("1. Kubernetes POST ShapeRef, 2. external POST cloud shape.");
    expect(page).toContain(
      "### adopt: an external object an earlier owner id of ours created is adopted\n\n" +
        "Not explored: dns records has no earlier owner ids to adopt from.",
    );
  });

  it("has one table row per point", () => {
    expect(rows).toHaveLength(3);
  });

  it.each([
    {
      row: 0,
      cells: [
        "1",
        "Kubernetes POST ShapeRef",
        "crash-before",
        findsAfter("crash-before", undefined),
        "POST ShapeRef → POST cloud shape → PATCH Shape status ×2",
        "ok, 1.5 s",
      ],
      reason: "a passing point: what it found, what it did then, how long it took",
    },
    {
      row: 1,
      cells: [
        "2",
        "external POST cloud shape",
        "crash-after",
        "the write committed (HTTP 201), killed before hearing it; it restarts",
        "POST cloud shape",
        "**1 violation**: 2 external objects created; the lifecycle needs 1",
      ],
      reason: "a failing point: the violations counted in bold, then said",
    },
    {
      row: 2,
      cells: ["2", "external PATCH cloud shape (2)", "fail", "—", "—", "not reached"],
      reason:
        "an unreached point is never shown as passed, and says nothing of what it found; its occurrence shows",
    },
  ])("row $row: $reason", ({ row, cells }) => {
    expect(
      rows[row]
        ?.split("|")
        .slice(1, -1)
        .map((c) => c.trim()),
    ).toEqual(cells);
  });

  it("says when the lifecycle broke without any fault", () => {
    const broken: CrashReport = {
      ...REPORT,
      lifecycles: [
        { ...CREATE, recordingViolations: ["after the final kubectl delete: the resource exists"] },
      ],
    };
    expect(renderCrashPoints([broken], META)).toContain(
      "**Without any fault the lifecycle broke:** after the final kubectl delete: the resource exists",
    );
    expect(page).not.toContain("Without any fault");
  });
});

import { describe, expect, test } from "vitest";
import {
  pageOf,
  pageStatus,
  parseRunLine,
  replaceSection,
  runLine,
  type CommitFacts,
  type RunLine,
  type RunLineProblem,
} from "./evidence-pages.ts";

describe("parseRunLine", () => {
  const cases: { reason: string; page: string; expected: Partial<RunLine> | RunLineProblem }[] = [
    {
      reason: "the line npm run evidence writes names one commit",
      page: "# Title\n\nRun at commit 9b8a112 (2026-11-24, 1,000 Shapes and 10,000 Shapes).\n\n## More",
      expected: { commits: ["9b8a112"], dirty: false },
    },
    {
      reason: "a page of several runs at different commits names each",
      page: "Run at commit abc1234 (2026-11-24, 1,000 Shapes) and commit def5678 (2026-11-25, 10,000 Shapes).",
      expected: { commits: ["abc1234", "def5678"], dirty: false },
    },
    {
      reason: "a run of uncommitted code says so",
      page: "Run at commit abc1234 (2026-11-24, 1,000 Shapes, with uncommitted changes).",
      expected: { commits: ["abc1234"], dirty: true },
    },
    {
      reason: "'no uncommitted change' is a clean run",
      page: "Run at commit abc1234 (2026-11-25, no uncommitted change, 24 trials of 8 Shapes).",
      expected: { commits: ["abc1234"], dirty: false },
    },
    {
      reason: "the crash explorer's own line: the commit after its command, not hex-looking words in it",
      page: "Made by `npm run crash-points -- --json /tmp/deadbeef0.json` at commit 6206302 on 2026-11-27.",
      expected: { commits: ["6206302"], dirty: false },
    },
    {
      reason: "the crash explorer's line of a dirty tree",
      page: "Made by `npm run crash-points` at commit 6206302 (with uncommitted changes) on 2026-11-27.",
      expected: { commits: ["6206302"], dirty: true },
    },
    {
      reason: "prose that mentions a commit mid-line is no run line",
      page: "Two runs at commit `9b8a112` (issue 16), alone on the machine.\nRun at commit 1234567 (x).",
      expected: { commits: ["1234567"] },
    },
    { reason: "a page without a run line", page: "# Title\n\nNo run here.\n", expected: "no-run-line" },
    {
      reason: "two run lines: which one is the page's run is unclear",
      page: "Run at commit abc1234 (a).\n\nRun at commit def5678 (b).\n",
      expected: "several-run-lines",
    },
    { reason: "a run line without a commit", page: "Run at commit ??? (lost).\n", expected: "no-commit" },
  ];
  test.each(cases)("$reason", ({ page, expected }) => {
    const parsed = parseRunLine(page);
    if (typeof expected === "string") expect(parsed).toBe(expected);
    else expect(parsed).toMatchObject(expected);
  });

  test("reads back the line runLine writes", () => {
    const line = runLine("0123456789abcdef0123456789abcdef01234567", "2026-11-29", "8 trials of 200 Shapes");
    expect(line).toBe("Run at commit 0123456 (2026-11-29, 8 trials of 200 Shapes).");
    expect(parseRunLine(`x\n${line}\ny`)).toMatchObject({ commits: ["0123456"], dirty: false });
  });
});

describe("replaceSection", () => {
  const cases: { reason: string; page: string; expected: string | undefined }[] = [
    {
      reason: "replaces what lies between the markers, keeping them and what is around",
      page: "before\n<!-- s:begin (generated) -->\nold\nold\n<!-- s:end -->\nafter",
      expected: "before\n<!-- s:begin (generated) -->\n\nnew\n\n<!-- s:end -->\nafter",
    },
    { reason: "no begin marker", page: "before\nold\n<!-- s:end -->\n", expected: undefined },
    { reason: "no end marker", page: "<!-- s:begin -->\nold\n", expected: undefined },
    {
      reason: "an end marker before the begin marker does not count",
      page: "<!-- s:end -->\n<!-- s:begin -->\nold\n",
      expected: undefined,
    },
  ];
  test.each(cases)("$reason", ({ page, expected }) => {
    expect(replaceSection(page, "<!-- s:begin", "<!-- s:end -->", "new\n")).toBe(expected);
  });
});

describe("pageStatus", () => {
  const page = pageOf("chaos");
  const facts =
    (known: Record<string, number>) =>
    (commit: string): CommitFacts =>
      commit in known
        ? { resolved: commit.padEnd(40, "0"), behind: known[commit] }
        : { resolved: undefined, behind: undefined };
  const line = (commits: string[], dirty = false): RunLine => ({ commits, dirty, line: "…" });
  const cases: {
    reason: string;
    parsed: RunLine | RunLineProblem;
    known: Record<string, number>;
    expected: { verdict: string; commit: string | undefined; behind: number | undefined; text: RegExp };
  }[] = [
    {
      reason: "no commit since touched the code: current",
      parsed: line(["abc1234"]),
      known: { abc1234: 0 },
      expected: { verdict: "current", commit: "abc1234", behind: 0, text: /run at abc1234, current/ },
    },
    {
      reason: "commits since touched the code: behind by their number",
      parsed: line(["abc1234"]),
      known: { abc1234: 12 },
      expected: { verdict: "behind", commit: "abc1234", behind: 12, text: /12 commits behind/ },
    },
    {
      reason: "several runs: the one furthest behind decides",
      parsed: line(["abc1234", "def5678"]),
      known: { abc1234: 1, def5678: 3 },
      expected: { verdict: "behind", commit: "def5678", behind: 3, text: /the oldest of 2 runs/ },
    },
    {
      reason: "a commit this clone does not have cannot be judged",
      parsed: line(["abc1234"]),
      known: {},
      expected: { verdict: "unknown-commit", commit: "abc1234", behind: undefined, text: /does not have/ },
    },
    {
      reason: "a run of uncommitted code is flagged even when no commit followed",
      parsed: line(["abc1234"], true),
      known: { abc1234: 0 },
      expected: { verdict: "dirty-run", commit: "abc1234", behind: 0, text: /WITH uncommitted changes/ },
    },
    {
      reason: "a page without a run line says so",
      parsed: "no-run-line",
      known: {},
      expected: { verdict: "no-run-line", commit: undefined, behind: undefined, text: /names no run/ },
    },
  ];
  test.each(cases)("$reason", ({ parsed, known, expected }) => {
    const status = pageStatus(page, parsed, facts(known));
    expect(status).toMatchObject({
      page: "docs/reliability.md",
      verdict: expected.verdict,
      commit: expected.commit,
      behind: expected.behind,
    });
    expect(status.text).toMatch(expected.text);
  });
});

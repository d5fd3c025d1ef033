import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { EvidencePage } from "./evidence-pages.ts";
import { commitFacts, evidenceStatus } from "./evidence-status.ts";

/**
 * A temporary repository: a run at `run`, then commits touching the code a page measured, its tests, its
 * Markdown, and code it did not measure; every status is computed against it.
 */
let repo: string;
const commits: Record<string, string> = {};
const git = (...args: string[]) =>
  execFileSync("git", args, {
    cwd: repo,
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
    },
  }).trim();
const commit = (name: string, files: Record<string, string>) => {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(repo, file)), { recursive: true });
    writeFileSync(join(repo, file), text);
  }
  git("add", "-A");
  git("commit", "-q", "-m", name);
  commits[name] = git("rev-parse", "HEAD");
};

const PAGE: EvidencePage = { measurement: "chaos", file: "docs/run.md", code: ["library/", "controller/"] };

beforeAll(() => {
  repo = mkdtempSync(join(tmpdir(), "evidence-status-"));
  git("init", "-q", "-b", "main");
  commit("run", { "library/a.ts": "1", "controller/b.ts": "1", "bench/c.ts": "1" });
  commit("library code", { "library/a.ts": "2" });
  commit("a test only", { "library/a.test.ts": "x" });
  commit("a README only", { "controller/README.md": "x" });
  commit("code the page did not measure", { "bench/c.ts": "2" });
  commit("controller code", { "controller/b.ts": "2" });
});

afterAll(() => {
  rmSync(repo, { recursive: true, force: true });
});

describe("commitFacts", () => {
  const cases: { reason: string; from: string; expected: number }[] = [
    {
      reason: "counts the commits since that touched the code, not tests, Markdown or other code",
      from: "run",
      expected: 2,
    },
    { reason: "a later run: only what came after it", from: "a README only", expected: 1 },
    { reason: "a run at HEAD is 0 behind", from: "controller code", expected: 0 },
  ];
  test.each(cases)("$reason", ({ from, expected }) => {
    const sha = commits[from] as string;
    expect(commitFacts(repo, sha.slice(0, 7), PAGE.code)).toEqual({ resolved: sha, behind: expected });
  });

  test("a commit the repository does not have: unknown", () => {
    expect(commitFacts(repo, "0000000", PAGE.code)).toEqual({ resolved: undefined, behind: undefined });
  });
});

describe("evidenceStatus", () => {
  const cases: { reason: string; page: (() => string) | undefined; verdict: string; behind?: number }[] = [
    {
      reason: "a page run at the first commit is 2 commits behind",
      page: () => `# Run\n\nRun at commit ${commits.run?.slice(0, 7)} (2026-11-29, 1 trial).\n`,
      verdict: "behind",
      behind: 2,
    },
    {
      reason: "a page run at HEAD is current",
      page: () => `Run at commit ${commits["controller code"]?.slice(0, 7)} (2026-11-29, 1 trial).\n`,
      verdict: "current",
      behind: 0,
    },
    { reason: "a missing page names no run", page: undefined, verdict: "no-run-line" },
  ];
  test.each(cases)("$reason", ({ page, verdict, behind }) => {
    const file = join(repo, PAGE.file);
    rmSync(file, { force: true });
    if (page) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, page());
    }
    const [status] = evidenceStatus(repo, [PAGE]);
    expect(status?.verdict).toBe(verdict);
    if (behind !== undefined) expect(status?.behind).toBe(behind);
  });
});

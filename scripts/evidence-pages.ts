/**
 * The pages whose figures come from a committed run (docs/benchmarks.md, docs/reliability.md,
 * docs/crash-points.md), how each names its run's commit, and the pure parts of `npm run evidence` and
 * `npm run evidence:status`: reading that line, replacing a generated section, judging how far behind a run is.
 * No I/O here; the commands are scripts/evidence.ts and scripts/evidence-status.ts.
 */

/** The committed measurements, each with its page. */
export const MEASUREMENTS = ["bench", "chaos", "crash-points"] as const;

/** A committed measurement. */
export type Measurement = (typeof MEASUREMENTS)[number];

/** One page that shows a committed run. */
export interface EvidencePage {
  measurement: Measurement;
  /** The page, from the repository's root. */
  file: string;
  /**
   * The code the run measured, as git pathspecs from the root: a commit touching one of these since the
   * run makes the page describe older code. Tests and Markdown are left out (they change no behaviour).
   */
  code: readonly string[];
}

/** What a commit may touch without changing the code a run measured. */
export const NOT_CODE: readonly string[] = [":(exclude,glob)**/*.test.ts", ":(exclude,glob)**/*.md"];

/** The three pages, in the order the commands report them. */
export const PAGES: readonly EvidencePage[] = [
  { measurement: "bench", file: "docs/benchmarks.md", code: ["library/", "controller/", "mock-cloud/"] },
  { measurement: "chaos", file: "docs/reliability.md", code: ["library/", "controller/", "mock-cloud/"] },
  {
    measurement: "crash-points",
    file: "docs/crash-points.md",
    code: ["library/", "controller/", "examples/dns-controller/", "mock-cloud/"],
  },
];

/** The page of a measurement. */
export function pageOf(measurement: Measurement): EvidencePage {
  const page = PAGES.find((p) => p.measurement === measurement);
  if (!page) throw new Error(`no page for ${measurement}`);
  return page;
}

/** The commit a page names for its run, as read from its one run line. */
export interface RunLine {
  /** Every commit the line names (abbreviated or full), in order; a page of several runs may name several. */
  commits: string[];
  /** True when the line says the run had uncommitted changes. */
  dirty: boolean;
  /** The line itself. */
  line: string;
}

/** Why a page's run line could not be read. */
export type RunLineProblem = "no-run-line" | "several-run-lines" | "no-commit";

const SHA = /\b[0-9a-f]{7,40}\b/g;

/**
 * Finds a page's run line and reads its commits. The line is `Run at commit <sha> (…).` (several runs:
 * `Run at commit <sha> (…) and commit <sha> (…).`), at the start of a line; docs/crash-points.md's generated
 * part, written by the crash explorer, says `Made by \`<command>\` at commit <sha> … on <date>.` instead.
 * Exactly one such line per page, else a problem.
 */
export function parseRunLine(page: string): RunLine | RunLineProblem {
  const lines = page
    .split("\n")
    .filter((l) => l.startsWith("Run at commit ") || /^Made by `[^`]*` at commit /.test(l));
  if (lines.length === 0) return "no-run-line";
  if (lines.length > 1) return "several-run-lines";
  const line = lines[0] as string;
  // The crash explorer's line: only what follows its command (which could contain hex-looking words).
  const text = line.startsWith("Made by ") ? line.slice(line.lastIndexOf("` at commit ") + 1) : line;
  const commits = [...text.matchAll(SHA)].map((m) => m[0]);
  if (commits.length === 0) return "no-commit";
  return { commits, dirty: /uncommitted change/.test(text) && !/no uncommitted change/.test(text), line };
}

/** The run line `npm run evidence` writes: the commit (short), the date, and what the run was. */
export function runLine(commit: string, date: string, what: string): string {
  return `Run at commit ${commit.slice(0, 7)} (${date}, ${what}).`;
}

/**
 * Replaces what lies between a page's `begin` and `end` markers (each a whole line starting with the
 * given text) with `body`, keeping the markers; undefined when the page lacks them in that order.
 */
export function replaceSection(page: string, begin: string, end: string, body: string): string | undefined {
  const lines = page.split("\n");
  const b = lines.findIndex((l) => l.startsWith(begin));
  const e = lines.findIndex((l, i) => i > b && l.startsWith(end));
  if (b < 0 || e < 0) return undefined;
  return [...lines.slice(0, b + 1), "", body.trimEnd(), "", ...lines.slice(e)].join("\n");
}

/** What `evidence:status` knows of one commit a page names. */
export interface CommitFacts {
  /** The full commit, or undefined when this clone does not know it. */
  resolved: string | undefined;
  /** Commits since it (up to HEAD) that touched the page's code; undefined when unknown. */
  behind: number | undefined;
}

/** The verdict on one page. */
export interface PageStatus {
  page: string;
  measurement: Measurement;
  /** The commit the run names (the oldest when several: the one furthest behind), short. */
  commit: string | undefined;
  /** Commits since the run that touched its code (the most of its commits'). */
  behind: number | undefined;
  verdict: "current" | "behind" | "unknown-commit" | "dirty-run" | RunLineProblem;
  /** One line for people. */
  text: string;
}

/**
 * Judges a page from its run line and what git says of each commit it names: current when no commit since
 * touched its code, behind by the most commits any of its runs is behind, and the problems a status reader
 * must see (no line, a commit unknown here, a run of uncommitted code).
 */
export function pageStatus(
  page: EvidencePage,
  parsed: RunLine | RunLineProblem,
  facts: (commit: string) => CommitFacts,
): PageStatus {
  const base = { page: page.file, measurement: page.measurement };
  const code = page.code.join(", ");
  if (typeof parsed === "string") {
    const why = {
      "no-run-line": "names no run (no line `Run at commit <sha> (…)`)",
      "several-run-lines": "has several run lines; a page names its run once",
      "no-commit": "has a run line without a commit",
    }[parsed];
    return { ...base, commit: undefined, behind: undefined, verdict: parsed, text: `${page.file}: ${why}` };
  }
  const known = parsed.commits.map((c) => ({ commit: c, ...facts(c) }));
  const unknown = known.find((k) => k.resolved === undefined || k.behind === undefined);
  if (unknown) {
    return {
      ...base,
      commit: unknown.commit.slice(0, 7),
      behind: undefined,
      verdict: "unknown-commit",
      text: `${page.file}: run at ${unknown.commit.slice(0, 7)}, a commit this clone does not have`,
    };
  }
  const furthest = known.reduce((a, b) => ((b.behind ?? 0) > (a.behind ?? 0) ? b : a));
  const behind = furthest.behind ?? 0;
  const commit = furthest.commit.slice(0, 7);
  const several = known.length > 1 ? ` (the oldest of ${known.length} runs)` : "";
  if (parsed.dirty) {
    return {
      ...base,
      commit,
      behind,
      verdict: "dirty-run",
      text: `${page.file}: run at ${commit}${several} WITH uncommitted changes; ${plural(behind, "commit")} since touched ${code}`,
    };
  }
  return {
    ...base,
    commit,
    behind,
    verdict: behind === 0 ? "current" : "behind",
    text:
      behind === 0
        ? `${page.file}: run at ${commit}${several}, current (no commit since touched ${code})`
        : `${page.file}: run at ${commit}${several}, ${plural(behind, "commit")} behind (touching ${code})`,
  };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

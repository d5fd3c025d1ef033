/**
 * `npm run evidence:status` — per page of a committed run (docs/benchmarks.md, docs/reliability.md,
 * docs/crash-points.md): the run's commit and how many commits since have touched the code it measured. One
 * line a page. Exit code 0 when every run is current, 1 when one is behind or cannot be judged, 2 for a bad
 * command line.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  NOT_CODE,
  PAGES,
  pageStatus,
  parseRunLine,
  type CommitFacts,
  type EvidencePage,
  type PageStatus,
} from "./evidence-pages.ts";

/** Runs git in `root`; undefined when it fails (an unknown commit, say). */
function git(root: string, args: readonly string[]): string | undefined {
  try {
    return execFileSync("git", args, {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return undefined;
  }
}

/** What git in `root` says of `commit`: its full name, and the commits since it that touched `code`. */
export function commitFacts(root: string, commit: string, code: readonly string[]): CommitFacts {
  const resolved = git(root, ["rev-parse", "--verify", "--quiet", `${commit}^{commit}`]);
  if (!resolved) return { resolved: undefined, behind: undefined };
  const count = git(root, ["rev-list", "--count", `${resolved}..HEAD`, "--", ...code, ...NOT_CODE]);
  return { resolved, behind: count === undefined ? undefined : Number(count) };
}

/** The status of each page of the repository at `root` (its working tree's pages, its HEAD). */
export function evidenceStatus(root: string, pages: readonly EvidencePage[] = PAGES): PageStatus[] {
  return pages.map((page) => {
    let text: string;
    try {
      text = readFileSync(join(root, page.file), "utf8");
    } catch {
      text = "";
    }
    return pageStatus(page, parseRunLine(text), (c) => commitFacts(root, c, page.code));
  });
}

function main(argv: readonly string[]): number {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`npm run evidence:status

Per page of a committed run, the run's commit and how many commits since have touched the code it measured
(tests and Markdown left out). Exit code 0 when every run is current, 1 otherwise. The runs: npm run evidence.
`);
    return 0;
  }
  if (argv.length > 0) {
    process.stderr.write(`evidence:status: unknown argument ${JSON.stringify(argv[0])} (see --help)\n`);
    return 2;
  }
  const root = git(import.meta.dirname, ["rev-parse", "--show-toplevel"]);
  if (!root) {
    process.stderr.write("evidence:status: not in a git checkout: a run's commit means nothing here\n");
    return 1;
  }
  const head = git(root, ["rev-parse", "--short", "HEAD"]) ?? "?";
  const statuses = evidenceStatus(root);
  process.stdout.write(`HEAD is ${head}\n`);
  for (const s of statuses) process.stdout.write(`${s.text}\n`);
  return statuses.every((s) => s.verdict === "current") ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`evidence:status: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}

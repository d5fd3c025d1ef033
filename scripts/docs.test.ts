/**
 * The teaching docs cannot rot: every relative link in docs/ and in every README leads to a file or folder
 * that exists, every `#anchor` to a heading, every code span that names a repository path names one that
 * exists (from the root, the page's folder or library/src; a bare file name, some tracked file's), and every
 * code citation — a link whose
 * text is a symbol in a code span and whose target is a source file, e.g.
 * [`#finalize`](../library/src/reconcile/reconciler.ts) — names a function, class, method, interface, type
 * or constant declared in that file. Rename `#finalize` and this test says which page to fix. Every scenario
 * page links, under `## Proven by`, the e2e tests that prove it: rename or remove one and its link fails. A
 * table's `lines` column says how long the files its rows link are: edit one and this test gives the new count.
 * The README's share of the pattern in the repository's TypeScript is computed from the tree, not written down.
 * The glossary is complete and used: every word of the project three pages use has an entry (its
 * `<!-- terms: -->` line lists it), and each page links a term to its entry where it first uses it.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, extname, join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, test } from "vitest";
import { parseAllDocuments } from "yaml";

const ROOT = join(import.meta.dirname, "..");

/**
 * The markdown files this test keeps honest: everything under docs/, and every README git tracks (the root's,
 * each folder's and package's, the library's folders'). The API reports under library/api/ are generated.
 */
function markdownFiles(): string[] {
  return execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*.md"], {
    cwd: ROOT,
    encoding: "utf8",
  })
    .split("\n")
    .filter((f) => f !== "" && (f.startsWith("docs/") || /(^|\/)README\.md$/.test(f)))
    .map((f) => join(ROOT, f))
    .filter((path, i, all) => existsSync(path) && all.indexOf(path) === i)
    .sort();
}

/** A link or a code span, with the line it is on. */
interface Found {
  line: number;
  text: string;
  target?: string;
}

/** Links and inline code spans outside fenced code blocks (diagrams and examples are not checked here). */
export function scanMarkdown(markdown: string): { links: Found[]; spans: Found[]; headings: string[] } {
  const links: Found[] = [];
  const spans: Found[] = [];
  const headings: string[] = [];
  let fenced = false;
  markdown.split("\n").forEach((raw, index) => {
    const line = index + 1;
    if (/^\s*(```|~~~)/.test(raw)) {
      fenced = !fenced;
      return;
    }
    if (fenced) return;
    const heading = /^#{1,6}\s+(.*)$/.exec(raw);
    if (heading?.[1]) headings.push(heading[1]);
    const link = /!?\[((?:[^[\]]|\[[^\]]*\])*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;
    for (const m of raw.matchAll(link)) links.push({ line, text: m[1] ?? "", target: m[2] ?? "" });
    // A code span in a link's text is checked through the link (its path is relative to the page).
    for (const m of raw
      .replace(link, "")
      .replace(/\\`/g, "")
      .matchAll(/`([^`]+)`/g)) {
      spans.push({ line, text: m[1] ?? "" });
    }
  });
  return { links, spans, headings };
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slugOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** Every anchor of a markdown file (a repeated heading gets -1, -2, ... as on GitHub). */
function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const heading of scanMarkdown(readFileSync(path, "utf8")).headings) {
    const slug = slugOf(heading);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/**
 * The names a TypeScript file declares, as a doc may cite them: top-level functions, classes, interfaces,
 * types, enums and variables (`Name`), their members (`Name.member`, `Name.#private`), and methods and
 * members anywhere by their bare name (`reconcile`, `#finalize`).
 */
export function declaredNames(source: string, fileName = "file.ts"): Set<string> {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const names = new Set<string>();
  const nameOf = (node: { name?: ts.Node }): string | undefined =>
    node.name &&
    (ts.isIdentifier(node.name) || ts.isPrivateIdentifier(node.name) || ts.isStringLiteral(node.name))
      ? node.name.text
      : undefined;
  const visit = (node: ts.Node, owner: string | undefined): void => {
    let next = owner;
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isClassDeclaration(node) ||
      ts.isInterfaceDeclaration(node) ||
      ts.isTypeAliasDeclaration(node) ||
      ts.isEnumDeclaration(node)
    ) {
      const name = nameOf(node);
      if (name) names.add(name);
      if (!ts.isFunctionDeclaration(node)) next = name;
    } else if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name)) {
      names.add(node.name.text);
    } else if (
      ts.isMethodDeclaration(node) ||
      ts.isPropertyDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node) ||
      ts.isMethodSignature(node) ||
      ts.isPropertySignature(node)
    ) {
      const name = nameOf(node);
      if (name) {
        names.add(name);
        if (owner) names.add(`${owner}.${name}`);
      }
    } else if (ts.isConstructorDeclaration(node) && owner) {
      names.add(`${owner}.constructor`);
    }
    ts.forEachChild(node, (child) => visit(child, next));
  };
  visit(file, undefined);
  return names;
}

/** A symbol as docs cite it: `name`, `name()`, `Type.member`, `#private`, `Type.#private`. */
const SYMBOL = /^(#?[A-Za-z_$][\w$]*(?:\.#?[A-Za-z_$][\w$]*)?)(?:\(\))?$/;

/** A file name as a link's text (`handlers.ts`): a path label, not a symbol. */
const FILE_NAME = /\.(ts|js|md|ya?ml|go|json|sh|mod)$/;

/** A repository path in a code span: no spaces or colons, a folder with `/`, and an extension or a trailing `/`. */
const REPO_PATH = /^[\w.-]+(?:\/[\w.-]+)*(?:\.[a-z]+|\/)$/;

/** A path without an extension (`library/src/core/sharding`): one when its first folder is one of the tree's. */
const FOLDER_PATH = /^([\w-]+)(?:\/[\w.-]+)+$/;

/** A file's bare name in a code span (`fence.ts`, `plugin.ts`): some tracked file has that name. */
const BARE_FILE = /^[\w-][\w.-]*\.(ts|js|mjs|cjs|md|ya?ml|go|json|sh|sql|svg|png)$/;

/** Where a path a page names may start: the repository's root, the page's folder, the library's sources. */
function pathBases(page: string): string[] {
  return [ROOT, dirname(page), join(ROOT, "library", "src")];
}

/**
 * Folders git ignores (generated: the demo's state, test artifacts, the builds — `dist/` as a package's README
 * names it, from its own folder): paths there may not exist yet. A clean checkout has no build when this runs.
 */
const GENERATED = [
  ".demo/",
  "data/",
  "e2e/artifacts/",
  "bench/results/",
  "node_modules/",
  "dist/",
  "controller/dist/",
  "library/dist/",
];

/**
 * What the tools write at run time, named by the pages without their folder (that folder is generated):
 * the chaos run's request log, the cluster cache's manifest, and `.demo/cluster/`'s contents.
 */
const RUNTIME_NAMES = ["requests.json", "manifest.json", "state.json", "pki/", "etcd/", "logs/"];

const files = markdownFiles();

describe("the docs' links and citations", () => {
  test("there are docs to check", () => {
    expect(files.map((f) => relative(ROOT, f))).toEqual(
      expect.arrayContaining(["docs/README.md", "deploy/README.md", "README.md", "controller/README.md"]),
    );
  });

  test.each(files.map((f) => [relative(ROOT, f), f]))("%s", (_name, path) => {
    expect(problemsOf(path, readFileSync(path, "utf8"))).toEqual([]);
  });

  // A claim a scenario makes is proven by an end-to-end test: each page links the tests that prove it.
  const scenarios = files.filter((f) => relative(ROOT, f).startsWith(join("docs", "scenarios")));
  test.each(scenarios.map((f) => [relative(ROOT, f), f]))(
    "%s names the e2e tests that prove it",
    (_n, path) => {
      expect(provenBy(readFileSync(path, "utf8")), "links to e2e/*.test.ts under ## Proven by").not.toEqual(
        [],
      );
    },
  );
});

/** The controller-side files follow-one-shape.md may ask a reader to open: at most this many. */
export const MUST_OPEN_AT_MOST = 8;

/**
 * follow-one-shape.md's reading lists: the controller-side files (under library/ or controller/) linked
 * between `<!-- must-open -->` and `<!-- /must-open -->`, those between `<!-- on-trust -->` and
 * `<!-- /on-trust -->`, and every controller-side file the page links anywhere. Paths are the link
 * targets without `../` and anchors.
 */
export function followOneShape(markdown: string): {
  mustOpen: string[];
  onTrust: string[];
  linked: string[];
} {
  const controllerSide = (text: string) => [
    ...new Set(
      scanMarkdown(text)
        .links.map(({ target = "" }) => target.split("#")[0]?.replace(/^(\.\.\/)+/, "") ?? "")
        .filter((t) => /^(library|controller)\/.*\.ts$/.test(t)),
    ),
  ];
  const between = (tag: string) => {
    const start = markdown.indexOf(`<!-- ${tag} -->`);
    const end = markdown.indexOf(`<!-- /${tag} -->`);
    return start === -1 || end < start ? "" : markdown.slice(start, end);
  };
  return {
    mustOpen: controllerSide(between("must-open")),
    onTrust: controllerSide(between("on-trust")),
    linked: controllerSide(markdown),
  };
}

describe("follow-one-shape.md names every file a reader opens", () => {
  const page = followOneShape(readFileSync(join(ROOT, "docs", "follow-one-shape.md"), "utf8"));
  test(`at most ${MUST_OPEN_AT_MOST} controller-side files to open, none also taken on trust`, () => {
    expect(page.mustOpen.length).toBeGreaterThan(0);
    expect(page.mustOpen.length).toBeLessThanOrEqual(MUST_OPEN_AT_MOST);
    expect(page.mustOpen.filter((f) => page.onTrust.includes(f))).toEqual([]);
  });
  test("every controller-side file the page links is in one of its two lists", () => {
    expect(page.linked.filter((f) => !page.mustOpen.includes(f) && !page.onTrust.includes(f))).toEqual([]);
  });
});

const isFolder = (path: string) => existsSync(path) && statSync(path).isDirectory();

let names: Set<string> | undefined;
/** The names of the files git tracks (and of new files not ignored), without their folders. */
function trackedNames(): Set<string> {
  names ??= new Set(
    execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], {
      cwd: ROOT,
      encoding: "utf8",
    })
      .split("\n")
      .map((f) => f.slice(f.lastIndexOf("/") + 1)),
  );
  return names;
}

/**
 * What is wrong with the links, citations and repository paths of the markdown file at `path` (its text
 * given): one line per problem, with its line number. Empty: nothing.
 */
export function problemsOf(path: string, text: string): string[] {
  const { links, spans } = scanMarkdown(text);
  const problems: string[] = [];
  for (const { line, text: label, target = "" } of links) {
    if (/^[a-z]+:/i.test(target)) continue; // http(s), mailto
    const [file = "", anchor] = target.split("#", 2);
    const resolved = file === "" ? path : join(dirname(path), decodeURIComponent(file));
    if (!existsSync(resolved)) {
      problems.push(`line ${line}: the link to ${target} leads nowhere`);
      continue;
    }
    if (anchor !== undefined && extname(resolved) === ".md" && !anchorsOf(resolved).has(anchor)) {
      problems.push(`line ${line}: ${relative(ROOT, resolved)} has no heading #${anchor}`);
    }
    const cited = /^`([^`]+)`$/.exec(label)?.[1];
    const symbol = cited === undefined || FILE_NAME.test(cited) ? undefined : SYMBOL.exec(cited)?.[1];
    if (symbol === undefined || !statSync(resolved).isFile()) continue;
    const source = readFileSync(resolved, "utf8");
    if (extname(resolved) === ".ts") {
      if (!declaredNames(source, resolved).has(symbol)) {
        problems.push(`line ${line}: ${relative(ROOT, resolved)} declares no ${symbol}`);
      }
    } else if (extname(resolved) === ".go") {
      if (!new RegExp(`^func (\\([^)]*\\) )?${symbol}\\(`, "m").test(source)) {
        problems.push(`line ${line}: ${relative(ROOT, resolved)} declares no func ${symbol}`);
      }
    }
  }
  for (const { line, text: span } of spans) {
    if (GENERATED.some((g) => span.startsWith(g)) || RUNTIME_NAMES.includes(span)) continue;
    const bases = pathBases(path);
    const pathLike =
      (REPO_PATH.test(span) && span.includes("/")) ||
      (FOLDER_PATH.test(span) && bases.some((b) => isFolder(join(b, FOLDER_PATH.exec(span)?.[1] ?? ""))));
    if (pathLike) {
      // From the repository's root, the page's folder (`src/app.ts` in mock-cloud/README.md), or library/src.
      if (!bases.some((b) => existsSync(join(b, span))))
        problems.push(`line ${line}: \`${span}\` is not a path in the repository`);
    } else if (BARE_FILE.test(span) && !trackedNames().has(span)) {
      problems.push(`line ${line}: no file in the repository is named \`${span}\``);
    }
  }
  return [...problems, ...lineCountProblems(path, text)];
}

/**
 * A table with a `lines` column states how long the files linked in each row's first cell are, together
 * (`wc -l`: the newlines). One problem per row whose number is not the files' count any more, with the count.
 */
export function lineCountProblems(path: string, text: string): string[] {
  const problems: string[] = [];
  const cells = (row: string) => row.trim().replace(/^\|/, "").replace(/\|$/, "").split("|");
  let column = -1;
  text.split("\n").forEach((raw, index) => {
    if (!raw.trim().startsWith("|")) {
      column = -1;
      return;
    }
    const row = cells(raw);
    if (column === -1) {
      column = row.findIndex((cell) => cell.trim() === "lines");
      return;
    }
    const stated = row[column]?.trim() ?? "";
    if (!/^\d+$/.test(stated)) return; // the header's separator row
    const files = scanMarkdown(row[0] ?? "").links.map(({ target = "" }) =>
      join(dirname(path), decodeURIComponent(target.split("#")[0] ?? "")),
    );
    const present = files.filter((f) => existsSync(f) && statSync(f).isFile());
    if (present.length === 0) return; // a link that leads nowhere is reported as such
    const counted = present.reduce((sum, f) => sum + readFileSync(f, "utf8").split("\n").length - 1, 0);
    if (counted !== Number(stated)) {
      problems.push(`line ${index + 1}: says ${stated} lines, the files linked there have ${counted}`);
    }
  });
  return problems;
}

/** The end-to-end tests (`e2e/*.test.ts`) a page links under its `## Proven by` heading. */
export function provenBy(markdown: string): string[] {
  let inSection = false;
  const tests: string[] = [];
  let fenced = false;
  for (const raw of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(raw)) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    const heading = /^(#{1,6})\s+(.*)$/.exec(raw);
    if (heading) inSection = heading[1] === "##" && heading[2]?.trim() === "Proven by";
    if (!inSection) continue;
    for (const { target = "" } of scanMarkdown(raw).links) {
      if (/(^|\/)e2e\/[^#]*\.test\.ts(#.*)?$/.test(target)) tests.push(target);
    }
  }
  return tests;
}

describe("the checker itself", () => {
  const cases: { reason: string; source: string; present: string[]; absent: string[] }[] = [
    {
      reason: "functions, classes and their members, private ones too",
      source: "export function run() {}\nclass A { #hidden() {} visible = 1; get g() { return 1; } }",
      present: ["run", "A", "A.#hidden", "#hidden", "A.visible", "A.g"],
      absent: ["A.run", "B", "hidden"],
    },
    {
      reason: "interfaces and their members, types and constants",
      source:
        "export interface R { reconcile(k: string): void; name: string }\ntype T = 1;\nexport const X = 1;",
      present: ["R", "R.reconcile", "reconcile", "R.name", "T", "X"],
      absent: ["R.X"],
    },
    {
      reason: "methods of an object literal a function returns, by their bare name",
      source: "export function make() { return { async start() {}, stop() {} }; }",
      present: ["make", "start", "stop"],
      absent: ["make.start"],
    },
  ];
  test.each(cases)("declaredNames: $reason", ({ source, present, absent }) => {
    const names = declaredNames(source);
    for (const n of present) expect(names, n).toContain(n);
    for (const n of absent) expect(names, n).not.toContain(n);
  });

  // A page that cites a test as its proof fails once that test is renamed or removed.
  const page = join(ROOT, "docs", "scenarios", "page.md");
  const linkCases: { reason: string; markdown: string; problems: string[] }[] = [
    {
      reason: "a link to a test file that exists is fine",
      markdown: "Proven by [`scripts/docs.test.ts`](../../scripts/docs.test.ts).",
      problems: [],
    },
    {
      reason: "a link to a test file that was renamed or removed leads nowhere",
      markdown: "x\nProven by [`e2e/renamed-away.test.ts`](../../e2e/renamed-away.test.ts).",
      problems: ["line 2: the link to ../../e2e/renamed-away.test.ts leads nowhere"],
    },
    {
      reason: "a test file named in a code span must exist too",
      markdown: "Run `e2e/renamed-away.test.ts` alone.",
      problems: ["line 1: `e2e/renamed-away.test.ts` is not a path in the repository"],
    },
    {
      reason: "a path in a code span may be relative to the page's folder",
      markdown: "`../glossary.md` and `../../e2e/`",
      problems: [],
    },
    {
      reason: "a folder named without a trailing slash must exist when it starts in one of the tree's",
      markdown: "`library/src/core/sharding` and `library/src/leadership` and `default/red-square`",
      problems: ["line 1: `library/src/core/sharding` is not a path in the repository"],
    },
    {
      reason: "a path may start in library/src, as the library's folders name each other",
      markdown: "`reconcile/ownership.ts`, `leadership/`; `reconcile/gone.ts`",
      problems: ["line 1: `reconcile/gone.ts` is not a path in the repository"],
    },
    {
      reason: "a file's bare name must be some tracked file's name",
      markdown: "`fence.ts` and `docs.test.ts`\n`result-of-old.ts`",
      problems: ["line 2: no file in the repository is named `result-of-old.ts`"],
    },
    {
      reason: "a citation of a symbol the linked file does not declare",
      markdown: "[`noSuchCheck`](../../scripts/docs.test.ts)",
      problems: ["line 1: scripts/docs.test.ts declares no noSuchCheck"],
    },
  ];
  test.each(linkCases)("problemsOf: $reason", ({ markdown, problems }) => {
    expect(problemsOf(page, markdown)).toEqual(problems);
  });

  // A table's `lines` column is the line count of the files its rows link in their first cell, summed.
  const here = join(ROOT, "scripts", "page.md");
  const lines = (path: string) => readFileSync(join(ROOT, path), "utf8").split("\n").length - 1;
  const table = (rows: string[]) => ["| file | lines | what |", "| --- | ---: | --- |", ...rows].join("\n");
  const countCases: { reason: string; markdown: string; problems: string[] }[] = [
    {
      reason: "a row's count is its files' lines, summed",
      markdown: table([
        `| [a](docs.test.ts) | ${lines("scripts/docs.test.ts")} | one |`,
        `| [a](docs.test.ts), [b](../package.json) | ${lines("scripts/docs.test.ts") + lines("package.json")} | two |`,
      ]),
      problems: [],
    },
    {
      reason: "a stale count is named, with the count to write",
      markdown: `text\n\n${table(["| [a](../package.json) | 1 | stale |"])}`,
      problems: [`line 5: says 1 lines, the files linked there have ${lines("package.json")}`],
    },
    {
      reason: "a table without a lines column is not read",
      markdown: "| file | what |\n| --- | --- |\n| [a](../package.json) | 1 |",
      problems: [],
    },
  ];
  test.each(countCases)("lineCountProblems: $reason", ({ markdown, problems }) => {
    expect(lineCountProblems(here, markdown)).toEqual(problems);
  });

  const proofCases: { reason: string; markdown: string; tests: string[] }[] = [
    {
      reason: "the e2e tests linked under ## Proven by",
      markdown: "## Proven by\n\n[`e2e/a.test.ts`](../../e2e/a.test.ts), [b](../../e2e/b.test.ts#x)",
      tests: ["../../e2e/a.test.ts", "../../e2e/b.test.ts#x"],
    },
    {
      reason: "links elsewhere on the page, or to other files, are no proof",
      markdown:
        "[`e2e/a.test.ts`](../../e2e/a.test.ts)\n## Proven by\n[unit](../x.test.ts) [doc](../README.md)\n## Next\n[c](../../e2e/c.test.ts)",
      tests: [],
    },
    {
      reason: "a page without the section proves nothing",
      markdown: "# Title\n[`e2e/a.test.ts`](../../e2e/a.test.ts)",
      tests: [],
    },
  ];
  test.each(proofCases)("provenBy: $reason", ({ markdown, tests }) => {
    expect(provenBy(markdown)).toEqual(tests);
  });

  const followCases: {
    reason: string;
    markdown: string;
    mustOpen: string[];
    onTrust: string[];
    linked: string[];
  }[] = [
    {
      reason: "the lists are read between their markers, and the page's other links count as linked",
      markdown:
        "[a](../library/src/a.ts) [m](../mock-cloud/src/x.ts)\n<!-- must-open -->\n1. [b](../library/src/b.ts#f)\n<!-- /must-open -->\n<!-- on-trust -->\n- [c](../controller/src/c.ts)\n<!-- /on-trust -->",
      mustOpen: ["library/src/b.ts"],
      onTrust: ["controller/src/c.ts"],
      linked: ["library/src/a.ts", "library/src/b.ts", "controller/src/c.ts"],
    },
    {
      reason: "a page without the markers has empty lists, so the check fails on it",
      markdown: "[a](../library/src/a.ts)",
      mustOpen: [],
      onTrust: [],
      linked: ["library/src/a.ts"],
    },
  ];
  test.each(followCases)("followOneShape: $reason", ({ reason: _reason, markdown, ...lists }) => {
    expect(followOneShape(markdown)).toEqual(lists);
  });

  test("links and spans in fenced blocks are not read; headings become GitHub anchors", () => {
    const { links, spans, headings } = scanMarkdown(
      "# The `Shape` story: create & repair\n[a](x.md) `b/c.ts` [`d.ts`](../d.ts)\n```\n[no](y.md) `no/z.ts`\n```\n",
    );
    expect(links.map((l) => l.target)).toEqual(["x.md", "../d.ts"]);
    expect(spans.map((s) => s.text)).toEqual(["Shape", "b/c.ts"]);
    expect(headings.map(slugOf)).toEqual(["the-shape-story-create--repair"]);
  });
});

/**
 * The README's "The pattern is about X of the repository's Y lines of TypeScript (tests not counted): Z %",
 * as the tree makes it: X the lines of the files linked between "Read those:" and "Take on trust" (a folder:
 * every TypeScript file under it), Y those of every TypeScript file git tracks, tests (`*.test.ts`) left
 * out of both. "About": X and Y may be off by 3 % of what the tree counts (a round number stays true while
 * a few lines come and go), Z is the counted share to the percent. Undefined when the README says no such
 * sentence.
 */
export function patternShare(readme: string, linesOf: (path: string) => number, tracked: readonly string[]) {
  const said =
    /The pattern is about ([\d,]+) of the repository's ([\d,]+) lines of TypeScript\s+\(tests not counted\): (\d+) %/.exec(
      readme,
    );
  if (!said) return undefined;
  const read = readme.slice(readme.indexOf("Read those:"), readme.indexOf("Take on trust"));
  const sources = tracked.filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"));
  const linked = new Set<string>();
  for (const { target = "" } of scanMarkdown(read).links) {
    const path = target.split("#")[0] ?? "";
    for (const f of sources) if (f === path || (path.endsWith("/") && f.startsWith(path))) linked.add(f);
  }
  const sum = (files: Iterable<string>) => [...files].reduce((n, f) => n + linesOf(f), 0);
  const pattern = sum(linked);
  const total = sum(sources);
  const number = (text: string) => Number(text.replaceAll(",", ""));
  const about = (stated: number, counted: number) =>
    Math.abs(stated - counted) <= 0.03 * counted ? stated : counted;
  const stated = { pattern: number(said[1] ?? ""), total: number(said[2] ?? ""), percent: Number(said[3]) };
  return {
    said: stated,
    counted: {
      pattern: about(stated.pattern, pattern),
      total: about(stated.total, total),
      percent: Math.round((100 * pattern) / total),
    },
  };
}

describe("numbers the README states about the code", () => {
  test("the pattern's share of the TypeScript is the tree's", () => {
    const tracked = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).split("\n");
    const linesOf = (f: string) => readFileSync(join(ROOT, f), "utf8").split("\n").length - 1;
    const share = patternShare(readFileSync(join(ROOT, "README.md"), "utf8"), linesOf, tracked);
    expect(share, "the README's sentence on the pattern's share").toBeDefined();
    expect(share?.said).toEqual(share?.counted);
  });

  test("patternShare reads the sentence and counts the linked files and folders", () => {
    const readme =
      "The pattern is about 100 of the repository's 1,020 lines of TypeScript\n(tests not counted): 10 %. " +
      "Read those: [a](a/) and [b](b.ts). Take on trust [c](c.ts).";
    const lines: Record<string, number> = { "a/x.ts": 60, "a/x.test.ts": 500, "b.ts": 40, "c.ts": 900 };
    expect(patternShare(readme, (f) => lines[f] ?? 0, Object.keys(lines))).toEqual({
      said: { pattern: 100, total: 1020, percent: 10 },
      counted: { pattern: 100, total: 1020, percent: 10 },
    });
    const wrong = readme.replace("1,020", "2,000");
    expect(patternShare(wrong, (f) => lines[f] ?? 0, Object.keys(lines))?.counted.total).toBe(1000);
  });
});

/** A glossary entry: its heading's anchor, and the words it defines (the `<!-- terms: a, b -->` line under it). */
export interface GlossaryEntry {
  anchor: string;
  terms: string[];
}

/** The glossary's entries, one per `## ` heading, in the page's order. */
export function glossaryEntries(markdown: string): GlossaryEntry[] {
  const entries: GlossaryEntry[] = [];
  for (const raw of markdown.split("\n")) {
    const heading = /^##\s+(.*)$/.exec(raw);
    if (heading?.[1]) entries.push({ anchor: slugOf(heading[1]), terms: [] });
    const terms = /^<!--\s*terms:(.*)-->\s*$/.exec(raw.trim());
    const entry = entries.at(-1);
    if (terms?.[1] && entry)
      entry.terms.push(
        ...terms[1]
          .split(",")
          .map((t) => t.trim())
          .filter(Boolean),
      );
  }
  return entries;
}

/**
 * A term where it occurs as a word (a plural too: `finalizers`); case matters only in a term with a capital
 * (`NameConflict`, `atProvider`), not in a word (`ring`, `Ring`).
 */
export function termPattern(term: string): RegExp {
  const escaped = term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(?<![\\w-])${escaped}(?:s|es)?(?![\\w-])`, /[A-Z]/.test(term) ? "g" : "gi");
}

/**
 * The lines of a page a program writes (1-based): between `<!-- name:begin (generated ...) -->` and
 * `<!-- name:end -->`; and in a generated page that keeps hand-written parts (`<!-- name:start (hand-written;
 * kept when the file is regenerated) -->` to `<!-- name:end -->`, docs/benchmarks.md), every line outside them.
 */
export function generatedLines(markdown: string): Set<number> {
  const lines = markdown.split("\n");
  const generated = new Set<number>();
  const keepsHandWritten = lines.some((l) => /^<!--\s*[\w-]+:start \(hand-written/.test(l.trim()));
  let inside: "generated" | "hand-written" | undefined;
  lines.forEach((raw, index) => {
    const line = raw.trim();
    const begin = /^<!--\s*[\w-]+:(?:begin|start)\s*\((generated|hand-written)/.exec(line);
    if (begin) inside = begin[1] === "generated" ? "generated" : "hand-written";
    const isGenerated = inside === "generated" || (keepsHandWritten && inside !== "hand-written");
    if (isGenerated) generated.add(index + 1);
    if (/^<!--\s*[\w-]+:end\s*-->$/.test(line)) inside = undefined;
  });
  return generated;
}

/**
 * A page's text as words are found in it: the lines outside fences, headings, comments and what a program
 * writes ({@link generatedLines}: a regenerated page cannot keep links written into it), with their links,
 * and the terms the line uses in another sense (`<!-- other sense: plugin -->`: Compose's plugin).
 */
function proseLines(markdown: string): { line: number; raw: string; otherSense: string[] }[] {
  const lines: { line: number; raw: string; otherSense: string[] }[] = [];
  const originals = markdown.split("\n");
  const generated = generatedLines(markdown);
  let fenced = false;
  markdown
    .replace(/<!--[\s\S]*?-->/g, (comment) => comment.replace(/[^\n]/g, " "))
    .split("\n")
    .forEach((raw, index) => {
      if (/^\s*(```|~~~)/.test(raw)) {
        fenced = !fenced;
        return;
      }
      const otherSense = [...(originals[index] ?? "").matchAll(/<!--\s*other sense:([^>]*)-->/g)].flatMap(
        (m) => (m[1] ?? "").split(",").map((t) => t.trim()),
      );
      if (!fenced && !generated.has(index + 1) && !/^#{1,6}\s/.test(raw))
        lines.push({ line: index + 1, raw, otherSense });
    });
  return lines;
}

const LINK = /!?\[((?:[^[\]]|\[[^\]]*\])*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;

/**
 * Where a term of `entry` is first used on a page, in reading order: inside a link to its glossary entry
 * (`linked`), or elsewhere as a word of the prose or a code span that is the term itself (`` `NameConflict` ``).
 * A word inside a link that leads elsewhere is not a use (a link cannot hold another), nor a term its line
 * says it uses in another sense. Undefined: never used.
 */
export function firstUse(
  markdown: string,
  entry: GlossaryEntry,
  linksToEntry: (target: string) => boolean,
): { line: number; at: number; text: string; term: string; linked: boolean } | undefined {
  const patterns = entry.terms.map((term) => ({ term, pattern: termPattern(term) }));
  for (const { line, raw, otherSense } of proseLines(markdown)) {
    const found: { at: number; text: string; term: string; linked: boolean }[] = [];
    const blank = (text: string) => " ".repeat(text.length);
    for (const m of raw.matchAll(LINK)) {
      if (linksToEntry(m[2] ?? "")) found.push({ at: m.index, text: m[0], term: m[1] ?? "", linked: true });
    }
    const withoutLinks = raw.replace(LINK, blank);
    for (const m of withoutLinks.matchAll(/`([^`]+)`/g)) {
      const span = m[1] ?? "";
      for (const { term, pattern } of patterns) {
        pattern.lastIndex = 0;
        const hit = pattern.exec(span);
        if (hit?.index === 0 && hit[0].length === span.length)
          found.push({ at: m.index, text: m[0], term, linked: false });
      }
    }
    const prose = withoutLinks.replace(/`[^`]+`/g, blank);
    for (const { term, pattern } of patterns) {
      for (const hit of prose.matchAll(pattern))
        found.push({ at: hit.index, text: hit[0], term, linked: false });
    }
    const first = found.filter(({ term }) => !otherSense.includes(term)).sort((a, b) => a.at - b.at)[0];
    if (first) return { line, ...first };
  }
  return undefined;
}

/**
 * Terms a page uses before (or without) linking them: for each glossary entry whose term the page uses, the
 * first use must be a link to the entry (`glossary.md#anchor`, relative to the page). One line per term.
 */
export function glossaryLinkProblems(path: string, markdown: string, entries: GlossaryEntry[]): string[] {
  const glossary = join(ROOT, "docs", "glossary.md");
  const problems: string[] = [];
  for (const entry of entries) {
    const links = (target: string) => {
      const [file = "", anchor] = target.split("#", 2);
      return anchor === entry.anchor && join(dirname(path), decodeURIComponent(file)) === glossary;
    };
    const use = firstUse(markdown, entry, links);
    if (use && !use.linked) {
      problems.push(
        `line ${use.line}: "${use.term}" is first used unlinked: link it to ${relative(dirname(path), glossary)}#${entry.anchor}`,
      );
    }
  }
  return problems;
}

/**
 * Words of the project that need a glossary entry once three pages use them, beside the glossary's own
 * terms: add a word here when it starts to spread (the test then says whether it has reached three pages).
 */
export const WATCHED = [
  "reshard",
  "bookmark",
  "crash point",
  "owner label",
  "decorator",
  "topology",
  "managed field",
  "handover",
  "intent reconciler",
  "requeue",
];

/** The classes, interfaces, types, enums, functions and constants the tracked TypeScript declares, by name. */
function declaredInTree(): Set<string> {
  const out = execFileSync(
    "git",
    ["grep", "-hoE", "(class|interface|type|enum|function|const) [A-Z][A-Za-z0-9]*", "--", "*.ts"],
    { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
  return new Set(out.split("\n").map((l) => l.slice(l.indexOf(" ") + 1)));
}

/** The pages (of `pages`) on which `term` occurs as a word, outside fences and headings. */
export function pagesUsing(term: string, pages: { path: string; text: string }[]): string[] {
  const pattern = termPattern(term);
  return pages
    .filter(({ text }) =>
      proseLines(text).some(({ raw }) => {
        pattern.lastIndex = 0;
        return pattern.test(raw.replace(LINK, (_m, label: string) => label));
      }),
    )
    .map(({ path }) => path);
}

/**
 * What the glossary lacks: each of `words` that three pages or more use while no entry lists it among its
 * terms, and each code span of a capitalised name of the domain (a condition or Event reason: `NameConflict`,
 * `CreatedCloudShape`; a kind: `ShapeRef`) that three pages or more show while the glossary names it nowhere.
 * A name the code declares (`ExternalInformer`: in `declared`) is the code's, explained by its doc comment.
 * One line each, with its pages.
 */
export function missingFromGlossary(
  glossary: string,
  pages: { path: string; text: string }[],
  words: readonly string[],
  declared: ReadonlySet<string> = new Set(),
): string[] {
  const entries = glossaryEntries(glossary);
  const defined = new Set(entries.flatMap((e) => e.terms.map((t) => t.toLowerCase())));
  const problems: string[] = [];
  for (const word of words) {
    if (defined.has(word.toLowerCase())) continue;
    const using = pagesUsing(word, pages);
    if (using.length >= 3)
      problems.push(`"${word}" has no entry, and ${using.length} pages use it: ${using.join(", ")}`);
  }
  const named = new Map<string, Set<string>>();
  for (const { path, text } of pages) {
    for (const { raw } of proseLines(text)) {
      for (const m of raw
        .replace(LINK, (_m, label: string) => label)
        .matchAll(/`([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)`/g)) {
        const name = m[1] ?? "";
        named.set(name, (named.get(name) ?? new Set()).add(path));
      }
    }
  }
  for (const [name, using] of named) {
    if (using.size >= 3 && !declared.has(name) && !glossary.includes(`\`${name}`)) {
      problems.push(
        `\`${name}\` is named nowhere in the glossary, and ${using.size} pages show it: ${[...using].join(", ")}`,
      );
    }
  }
  return problems.sort();
}

describe("the glossary", () => {
  const glossaryPath = join(ROOT, "docs", "glossary.md");
  const entries = glossaryEntries(readFileSync(glossaryPath, "utf8"));
  const pages = files.filter((f) => f !== glossaryPath);
  test("every term three pages use has an entry", () => {
    const texts = pages.map((path) => ({ path: relative(ROOT, path), text: readFileSync(path, "utf8") }));
    expect(missingFromGlossary(readFileSync(glossaryPath, "utf8"), texts, WATCHED, declaredInTree())).toEqual(
      [],
    );
  });
  test.each(pages.map((f) => [relative(ROOT, f), f]))(
    "%s links each term where it first uses it",
    (_n, path) => {
      expect(glossaryLinkProblems(path, readFileSync(path, "utf8"), entries)).toEqual([]);
    },
  );
});

describe("the glossary checker itself", () => {
  const glossary = [
    "# Glossary",
    "## Shard and ring",
    "<!-- terms: shard, ring -->",
    "text",
    "## NameConflict",
    "<!-- terms: NameConflict -->",
    "## Hold",
  ].join("\n");
  const entries = glossaryEntries(glossary);
  test("glossaryEntries: each heading's anchor with the terms under it", () => {
    expect(entries).toEqual([
      { anchor: "shard-and-ring", terms: ["shard", "ring"] },
      { anchor: "nameconflict", terms: ["NameConflict"] },
      { anchor: "hold", terms: [] },
    ]);
  });

  const page = join(ROOT, "docs", "scenarios", "page.md");
  const cases: { reason: string; markdown: string; problems: string[] }[] = [
    {
      reason: "a term linked where it is first used, in any case or plural",
      markdown:
        "The [Rings](../glossary.md#shard-and-ring) turn; a ring.\n[`NameConflict`](../glossary.md#nameconflict)",
      problems: [],
    },
    {
      reason: "a term used before its link",
      markdown: "A ring of replicas.\n\nThe [ring](../glossary.md#shard-and-ring).",
      problems: ['line 1: "ring" is first used unlinked: link it to ../glossary.md#shard-and-ring'],
    },
    {
      reason:
        "a code span that is the term counts, a longer one or a capitalised term in another case does not",
      markdown: "`ring-size`, nameconflict, `NameConflict` here",
      problems: ['line 1: "NameConflict" is first used unlinked: link it to ../glossary.md#nameconflict'],
    },
    {
      reason: "headings, fences, comments, other links' text and generated sections are not uses",
      markdown: [
        "# The ring",
        "```",
        "ring",
        "```",
        "<!-- ring -->",
        "[a ring](../README.md)",
        "<!-- table:begin (generated by npm run x) -->",
        "ring",
        "<!-- table:end -->",
        "Then the [ring](../glossary.md#shard-and-ring).",
      ].join("\n"),
      problems: [],
    },
    {
      reason: "a line that says it uses a term in another sense",
      markdown: "Sounds ring a bell. <!-- other sense: ring -->\nA shard.",
      problems: ['line 2: "shard" is first used unlinked: link it to ../glossary.md#shard-and-ring'],
    },
    {
      reason: "a link to the wrong entry is no link to this one",
      markdown: "The [ring](../glossary.md#nameconflict), a ring.",
      problems: ['line 1: "ring" is first used unlinked: link it to ../glossary.md#shard-and-ring'],
    },
  ];
  test.each(cases)("glossaryLinkProblems: $reason", ({ markdown, problems }) => {
    expect(glossaryLinkProblems(page, markdown, entries)).toEqual(problems);
  });

  test("generatedLines: generated sections, and a generated page's hand-written parts left out", () => {
    expect([...generatedLines("a\n<!-- x:begin (generated by y) -->\nb\n<!-- x:end -->\nc")]).toEqual([
      2, 3, 4,
    ]);
    expect([
      ...generatedLines(
        "a\n<!-- r:start (hand-written; kept when the file is regenerated) -->\nb\n<!-- r:end -->\nc",
      ),
    ]).toEqual([1, 5]);
  });

  const pages = (texts: string[]) => texts.map((text, i) => ({ path: `p${i}.md`, text }));
  const missingCases: { reason: string; pages: string[]; problems: string[] }[] = [
    {
      reason: "a watched word on three pages without an entry",
      pages: ["a reshard", "two reshards", "## reshard\nno", "one more reshard"],
      problems: ['"reshard" has no entry, and 3 pages use it: p0.md, p1.md, p3.md'],
    },
    {
      reason: "a watched word on two pages only, or one with an entry, is fine",
      pages: ["a reshard", "a reshard", "a ring", "a ring", "a ring"],
      problems: [],
    },
    {
      reason:
        "a domain name in code on three pages that the glossary never names; a name the code declares is not",
      pages: [
        "`DriftLeftAlone` `ExternalInformer`",
        "`DriftLeftAlone` `ExternalInformer`",
        "`DriftLeftAlone` `ExternalInformer`",
      ],
      problems: [
        "`DriftLeftAlone` is named nowhere in the glossary, and 3 pages show it: p0.md, p1.md, p2.md",
      ],
    },
  ];
  test.each(missingCases)("missingFromGlossary: $reason", ({ pages: texts, problems }) => {
    expect(
      missingFromGlossary(glossary, pages(texts), ["reshard", "ring"], new Set(["ExternalInformer"])),
    ).toEqual(problems);
  });
});

const NUMBER_WORDS = [
  "zero",
  "one",
  "two",
  "three",
  "four",
  "five",
  "six",
  "seven",
  "eight",
  "nine",
  "ten",
  "eleven",
  "twelve",
  "thirteen",
  "fourteen",
  "fifteen",
  "sixteen",
  "seventeen",
  "eighteen",
  "nineteen",
  "twenty",
];

/** A count as a page writes it: digits (`1,234`) or a word up to twenty (`six`, `Ten`). */
export function countOf(text: string): number | undefined {
  if (/^\d[\d,]*$/.test(text)) return Number(text.replaceAll(",", ""));
  const word = NUMBER_WORDS.indexOf(text.toLowerCase());
  return word === -1 ? undefined : word;
}

/** A count a page states about the code, where it says it, and how the tree counts it. */
interface StatedCount {
  page: string;
  /** The sentence, its count captured first (digits or a word). */
  said: RegExp;
  counted: (text: string) => number | Promise<number>;
}

/** How many verbs the (Cluster)Roles of a manifest grant: those named in `names`, or all of them. */
function verbsOf(manifest: string, names?: string[]): number {
  return parseAllDocuments(readFileSync(join(ROOT, manifest), "utf8"))
    .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; rules?: { verbs?: string[] }[] })
    .filter(
      (d) => /^(Cluster)?Role$/.test(d.kind ?? "") && (!names || names.includes(d.metadata?.name ?? "")),
    )
    .reduce((n, d) => n + (d.rules ?? []).reduce((m, r) => m + (r.verbs?.length ?? 0), 0), 0);
}

/**
 * The declaration of a top-level interface, type or constant `name`, wherever the tracked TypeScript (tests left
 * out) declares it: a file may move and the count stays checked.
 */
function declarationOf(name: string): ts.Node {
  const found = execFileSync(
    "git",
    ["grep", "-lE", `(interface|type|const) ${name}\\b`, "--", "*.ts", ":!*.test.ts"],
    { cwd: ROOT, encoding: "utf8" },
  )
    .split("\n")
    .filter(Boolean);
  for (const path of found) {
    const file = ts.createSourceFile(
      path,
      readFileSync(join(ROOT, path), "utf8"),
      ts.ScriptTarget.Latest,
      true,
    );
    for (const node of file.statements) {
      if ((ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) && node.name.text === name)
        return node;
      if (ts.isVariableStatement(node)) {
        const declared = node.declarationList.declarations.find(
          (d) => ts.isIdentifier(d.name) && d.name.text === name,
        );
        if (declared?.initializer) return declared.initializer;
      }
    }
  }
  throw new Error(`no tracked TypeScript declares ${name}`);
}

/**
 * How many things a declaration lists: a union type's members, an array's elements, an interface's required
 * methods (`except` left out).
 */
function membersOf(name: string, except: string[] = []): number {
  let node = declarationOf(name);
  if (ts.isTypeAliasDeclaration(node)) node = node.type;
  while (ts.isAsExpression(node) || ts.isSatisfiesExpression(node)) node = node.expression;
  if (ts.isUnionTypeNode(node)) return node.types.length;
  if (ts.isArrayLiteralExpression(node)) return node.elements.length;
  if (ts.isInterfaceDeclaration(node)) {
    return node.members.filter(
      (m) => ts.isMethodSignature(m) && !m.questionToken && !except.includes(m.name.getText()),
    ).length;
  }
  throw new Error(`cannot count the members of ${name}`);
}

/**
 * The counts the pages state about the code, each counted from the tree: a page that says another number (or
 * no longer says the sentence) fails with both. The README's share of the pattern is {@link patternShare}'s,
 * tables' `lines` columns {@link lineCountProblems}'s, the crash points {@link crashPointProblems}'s.
 */
export const STATED_COUNTS: StatedCount[] = [
  {
    page: "docs/writing-your-own.md",
    said: /It has (\w+) entry points/,
    counted: () =>
      Object.keys(
        (JSON.parse(readFileSync(join(ROOT, "library", "package.json"), "utf8")) as { exports: object })
          .exports,
      ).filter((k) => k !== "./package.json").length,
  },
  {
    page: "docs/follow-one-shape.md",
    said: /\*\*(\w+) files\*\* that a reader must open/,
    counted: (text) => followOneShape(text).mustOpen.length,
  },
  {
    page: "docs/follow-one-shape.md",
    said: /The cloud's part is (\w+) files/,
    counted: (text) => {
      const paragraph = text.slice(text.indexOf("The cloud's part is")).split("\n\n")[0] ?? "";
      const files = scanMarkdown(paragraph).links.map(({ target = "" }) => target.split("#")[0] ?? "");
      return new Set(files.filter((f) => /mock-cloud\/src\/.+\.ts$/.test(f))).size;
    },
  },
  {
    page: "deploy/README.md",
    said: /ClusterRole and leader-election Role grant \((\w+) of them\)/,
    counted: () => verbsOf("deploy/rbac.yaml", ["shapes-controller", "shapes-controller-leader-election"]),
  },
  {
    page: "deploy/README.md",
    said: /and the (\w+) of the sharding component's\s+Role/,
    counted: () => verbsOf("deploy/sharding/rbac.yaml"),
  },
  {
    page: "README.md",
    said: /every write at (\w+) faults/,
    counted: () => membersOf("TAP_FAULTS"),
  },
  {
    page: "crash-points/README.md",
    said: /is tried at (\w+) faults/,
    counted: () => membersOf("TAP_FAULTS"),
  },
  {
    page: "chaos/README.md",
    said: /(\w+) topologies \(`--topology`\)/,
    counted: () => membersOf("TOPOLOGIES"),
  },
  {
    page: "docs/follow-one-shape.md",
    said: /the (\w+) results a reconcile can\s+return/,
    counted: () => membersOf("ReconcileResult"),
  },
  {
    page: "docs/follow-one-shape.md",
    said: /the (\w+)\s+cloud calls and the rename/,
    counted: () => membersOf("ExternalClient", ["classify"]),
  },
  {
    page: "controller/README.md",
    said: /the (\w+) cloud calls and the rename/,
    counted: () => membersOf("ExternalClient", ["classify"]),
  },
  {
    page: "docs/writing-your-own.md",
    said: /ExternalClient`\]\([^)]*\), (\w+) calls and one reader/,
    counted: () => membersOf("ExternalClient", ["classify"]),
  },
  {
    page: "README.md",
    said: /The tour walks (\w+) of the story's \w+ scenarios/,
    counted: async () => (await import("../demo/tour-steps.ts")).STEPS.length,
  },
  {
    page: "README.md",
    said: /The tour walks \w+ of the story's (\w+) scenarios/,
    counted: () => readdirSync(join(ROOT, "docs", "scenarios")).filter((f) => /^\d+-.*\.md$/.test(f)).length,
  },
];

/**
 * docs/crash-points.md's hand-written sentences that say how many points the committed run tried and how many
 * violations it found ("**352 points tried, 0 violations**") against the generated section's total, and that
 * total against the sum of its per-controller lines. One line per disagreement.
 */
export function crashPointProblems(markdown: string): string[] {
  const generated = generatedLines(markdown);
  const lines = markdown.split("\n");
  const inGenerated = lines.filter((_l, i) => generated.has(i + 1)).join("\n");
  // The renderer's total (crash-points/report.ts), with the points not reached when some were not.
  const total = /\*\*([\d,]+) crash points tried, ([\d,]+) violations?(?:, [\d,]+ not reached)?\.?\*\*/.exec(
    inGenerated,
  );
  if (!total) return generated.size === 0 ? [] : ["the generated section states no total"];
  const tried = countOf(total[1] ?? "");
  const violations = countOf(total[2] ?? "");
  const problems: string[] = [];
  const parts = [
    ...inGenerated.matchAll(
      /^- [^:]+: ([\d,]+) crash points tried over \d+ lifecycles?, ([\d,]+) violations?/gm,
    ),
  ];
  const sum = (i: 1 | 2) => parts.reduce((n, m) => n + (countOf(m[i] ?? "") ?? 0), 0);
  if (parts.length > 0 && (sum(1) !== tried || sum(2) !== violations)) {
    problems.push(
      `the generated total says ${tried} tried, ${violations} violations; its lines add up to ${sum(1)}, ${sum(2)}`,
    );
  }
  lines.forEach((raw, i) => {
    if (generated.has(i + 1)) return;
    for (const m of raw.matchAll(/([\d,]+) (?:crash )?points tried, ([\d,]+) violations?/g)) {
      if (countOf(m[1] ?? "") !== tried || countOf(m[2] ?? "") !== violations) {
        problems.push(
          `line ${i + 1}: says ${m[1]} tried, ${m[2]} violations; the committed run's table: ${tried}, ${violations}`,
        );
      }
    }
  });
  return problems;
}

describe("counts the pages state about the code", () => {
  test.each(STATED_COUNTS.map((c) => [`${c.page}: ${c.said.source}`, c] as const))(
    "%s",
    async (_n, stated) => {
      const text = readFileSync(join(ROOT, stated.page), "utf8");
      const said = stated.said.exec(text);
      expect(said?.[1], `${stated.page} says ${stated.said.source}`).toBeDefined();
      expect(countOf(said?.[1] ?? "")).toBe(await stated.counted(text));
    },
  );

  test("docs/crash-points.md states the committed run's own figures", () => {
    expect(crashPointProblems(readFileSync(join(ROOT, "docs", "crash-points.md"), "utf8"))).toEqual([]);
  });

  test("countOf reads digits and words", () => {
    expect([countOf("1,234"), countOf("Six"), countOf("twelve"), countOf("many")]).toEqual([
      1234,
      6,
      12,
      undefined,
    ]);
  });

  const run = [
    "- **352 points tried, 0 violations**, for both.",
    "<!-- crash-points:begin (generated by npm run crash-points -- --write-docs) -->",
    "**352 crash points tried, 0 violations.**",
    "- shapes: 188 crash points tried over 11 lifecycles, 0 violations (334 s)",
    "- dns records: 164 crash points tried over 10 lifecycles, 0 violations (293 s)",
    "<!-- crash-points:end -->",
  ];
  const crashCases: { reason: string; markdown: string[]; problems: string[] }[] = [
    { reason: "prose and table agree", markdown: run, problems: [] },
    {
      reason: "the prose kept an earlier run's figures",
      markdown: [run[0]?.replace("352", "340") ?? "", ...run.slice(1)],
      problems: ["line 1: says 340 tried, 0 violations; the committed run's table: 352, 0"],
    },
    {
      reason: "a run with points not reached states them after its violations",
      markdown: [
        ...run.slice(0, 2),
        "**352 crash points tried, 0 violations, 3 not reached.**",
        "- shapes: 188 crash points tried over 11 lifecycles, 0 violations, 3 not reached (334 s)",
        ...run.slice(4),
      ],
      problems: [],
    },
    {
      reason: "a total that is not its lines' sum",
      markdown: [...run.slice(0, 3), run[3]?.replace("188", "180") ?? "", ...run.slice(4)],
      problems: ["the generated total says 352 tried, 0 violations; its lines add up to 344, 0"],
    },
  ];
  test.each(crashCases)("crashPointProblems: $reason", ({ markdown, problems }) => {
    expect(crashPointProblems(markdown.join("\n"))).toEqual(problems);
  });
});

/**
 * docs/reliability.md's sentences on the committed chaos run against its table by topology: the trials (in
 * the command and the prose), episodes, faults injected and violations of all topologies, and the ring's
 * episodes and faults (the `sharded` row). A sentence the page no longer says is not checked; the table must
 * be there. One line per disagreement.
 */
export function chaosRunProblems(markdown: string): string[] {
  const lines = markdown.split("\n");
  const header = lines.findIndex((l) => /^\|\s*topology\s*\|\s*trials\s*\|/.test(l));
  if (header === -1) return ["no table of the run by topology (| topology | trials | ...)"];
  const cells = (row: string) =>
    row
      .trim()
      .replace(/^\||\|$/g, "")
      .split("|")
      .map((c) => c.trim());
  const columns = cells(lines[header] ?? "");
  const rows: string[][] = [];
  for (const raw of lines.slice(header + 2)) {
    if (!raw.trim().startsWith("|")) break;
    rows.push(cells(raw));
  }
  const column = (name: string, only?: string) =>
    rows
      .filter((r) => only === undefined || r[0] === only)
      .reduce((n, r) => n + (countOf(r[columns.indexOf(name)] ?? "") ?? 0), 0);
  const claims: { said: RegExp; counted: number[]; what: string }[] = [
    { said: /--trials (\d+)/, counted: [column("trials")], what: "trials" },
    { said: /([\d,]+) trials, each on a fresh stack/, counted: [column("trials")], what: "trials" },
    {
      said: /([\d,]+) episodes, \*\*([\d,]+) faults injected/,
      counted: [column("episodes"), column("faults injected")],
      what: "episodes and faults",
    },
    { said: /\*\*Invariant violations: ([\d,]+)/, counted: [column("violations")], what: "violations" },
    {
      said: /The ring's trials: ([\d,]+) episodes, ([\d,]+) faults/,
      counted: [column("episodes", "sharded"), column("faults injected", "sharded")],
      what: "the ring's episodes and faults",
    },
  ];
  const problems: string[] = [];
  for (const { said, counted, what } of claims) {
    const index = lines.findIndex((l) => said.test(l));
    if (index === -1) continue;
    const stated = (said.exec(lines[index] ?? "") ?? []).slice(1).map((n) => countOf(n));
    if (stated.join() !== counted.join()) {
      problems.push(
        `line ${index + 1}: says ${stated.join(", ")} ${what}; the table by topology: ${counted.join(", ")}`,
      );
    }
  }
  return problems;
}

describe("the committed chaos run's figures", () => {
  test("docs/reliability.md's sentences agree with its table", () => {
    expect(chaosRunProblems(readFileSync(join(ROOT, "docs", "reliability.md"), "utf8"))).toEqual([]);
  });

  const page = [
    "npm run chaos -- --seed 1 --trials 4",
    "- 4 trials, each on a fresh stack",
    "- 9 episodes, **12 faults injected** (...)",
    "- The ring's trials: 5 episodes, 7 faults, ...",
    "- **Invariant violations: 1.**",
    "",
    "| topology | trials | episodes | faults injected | violations | harness errors |",
    "| --- | --: | --: | --: | --: | --: |",
    "| single | 2 | 4 | 5 | 1 | 0 |",
    "| sharded | 2 | 5 | 7 | 0 | 0 |",
  ];
  const cases: { reason: string; markdown: string[]; problems: string[] }[] = [
    { reason: "sentences and table agree", markdown: page, problems: [] },
    {
      reason: "a sentence kept from an earlier run",
      markdown: [page[0] ?? "", "- 24 trials, each on a fresh stack", ...page.slice(2)],
      problems: ["line 2: says 24 trials; the table by topology: 4"],
    },
    {
      reason: "the ring's figures are the sharded row's",
      markdown: [...page.slice(0, 3), "- The ring's trials: 9 episodes, 12 faults", ...page.slice(4)],
      problems: ["line 4: says 9, 12 the ring's episodes and faults; the table by topology: 5, 7"],
    },
  ];
  test.each(cases)("chaosRunProblems: $reason", ({ markdown, problems }) => {
    expect(chaosRunProblems(markdown.join("\n"))).toEqual(problems);
  });
});

/**
 * Links each term where a page first uses it unlinked: the first use becomes a link to its entry
 * (`DOCS_LINK_TERMS=1 npx vitest run --project unit scripts/docs.test.ts -t "link the glossary"`; then
 * `npx prettier --write` the pages). A use in another sense gets `<!-- other sense: term -->` on its line.
 */
describe.runIf(process.env.DOCS_LINK_TERMS === "1")("link the glossary's terms", () => {
  test("every page's first uses", () => {
    const glossaryPath = join(ROOT, "docs", "glossary.md");
    const entries = glossaryEntries(readFileSync(glossaryPath, "utf8"));
    for (const path of files.filter((f) => f !== glossaryPath)) {
      const before = readFileSync(path, "utf8");
      let text = before;
      for (const entry of entries) {
        const links = (target: string) => {
          const [file = "", anchor] = target.split("#", 2);
          return anchor === entry.anchor && join(dirname(path), decodeURIComponent(file)) === glossaryPath;
        };
        const use = firstUse(text, entry, links);
        if (!use || use.linked) continue;
        const lines = text.split("\n");
        const raw = lines[use.line - 1] ?? "";
        const link = `[${use.text}](${relative(dirname(path), glossaryPath)}#${entry.anchor})`;
        lines[use.line - 1] = raw.slice(0, use.at) + link + raw.slice(use.at + use.text.length);
        text = lines.join("\n");
      }
      if (text !== before) writeFileSync(path, text);
    }
  });
});

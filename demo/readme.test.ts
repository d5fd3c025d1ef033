/**
 * Keeps the README's demo walkthrough true: its links lead somewhere, the npm scripts it tells people to
 * run exist, the example files it applies exist, and its table of `npm start` flags is the command's own.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { START_USAGE } from "./options.ts";
import { REPO_ROOT } from "./paths.ts";

const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
const scripts = Object.keys(
  (JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> })
    .scripts,
);

describe("README.md", () => {
  it("links only to files and folders that exist", () => {
    const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)]
      .map((m) => m[1] ?? "")
      .filter((t) => !/^(https?:|mailto:|#)/.test(t))
      .map((t) => t.split("#")[0] ?? "");
    expect(targets.length).toBeGreaterThan(10);
    expect(targets.filter((t) => !existsSync(join(REPO_ROOT, t)))).toEqual([]);
  });

  it("tells people to run only npm scripts that exist", () => {
    const used = new Set([...readme.matchAll(/npm run (?:-s )?([a-z][\w:-]*)/g)].map((m) => m[1] ?? ""));
    expect([...used].sort()).toEqual(expect.arrayContaining(["cluster", "kubectl", "tour"]));
    expect([...used].filter((s) => !scripts.includes(s))).toEqual([]);
    expect(scripts).toEqual(expect.arrayContaining(["start", "test"]));
  });

  it("applies only example files that exist", () => {
    const files = [...readme.matchAll(/crds\/examples\/[\w.-]+\.yaml|\b[\w-]+\.yaml\b/g)].map((m) => m[0]);
    expect(files.length).toBeGreaterThan(3);
    for (const file of files) {
      const candidates = [
        join(REPO_ROOT, file),
        join(REPO_ROOT, "crds", "examples", file),
        join(REPO_ROOT, "deploy", file),
      ];
      expect(
        candidates.some((c) => existsSync(c)),
        `${file} exists`,
      ).toBe(true);
    }
  });

  it("documents exactly the flags of npm start", () => {
    const documented = [...readme.matchAll(/^\| `(--[a-z-]+)/gm)].map((m) => m[1]);
    const actual = [...START_USAGE.matchAll(/^ {2}(--[a-z-]+)/gm)]
      .map((m) => m[1])
      .filter((f) => f !== "--help");
    expect(actual).toEqual(expect.arrayContaining(["--port", "--metrics-port", "--state-dir"]));
    expect(documented.sort()).toEqual(actual.sort());
  });
});

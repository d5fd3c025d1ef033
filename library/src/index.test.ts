/**
 * The public surface stays chosen by hand. The API reports (api/*.api.md, which `npm run api` checks against
 * the build) say what each entry point exports: the root names at most 100 symbols and refers to none it
 * does not export, and no symbol or member of any entry point is without its doc comment.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";

const API = join(import.meta.dirname, "..", "api");

/** What an API report declares: its exported names, and each `// (undocumented)` as `Symbol.member`. */
function readReport(file: string) {
  const lines = readFileSync(join(API, file), "utf8").split("\n");
  const names: string[] = [];
  const undocumented: string[] = [];
  let current = "";
  lines.forEach((line, i) => {
    const declared =
      /^export (?:declare )?(?:abstract )?(?:class|function|const|type|interface|enum) (\w+)/.exec(line);
    if (declared) {
      current = declared[1]!;
      names.push(current);
      if (lines[i - 1]?.includes("(undocumented)")) undocumented.push(current);
    } else if (line.includes("(undocumented)")) {
      const next = lines.slice(i + 1).find((l) => !l.trim().startsWith("//")) ?? "";
      const member = /^\s*(?:readonly |static |protected |abstract |async |get |set )*(\w+)/.exec(next)?.[1];
      undocumented.push(`${current}.${member}`);
    }
  });
  const forgotten = [...lines.join("\n").matchAll(/ae-forgotten-export\) The symbol "(\w+)"/g)].map(
    (m) => m[1],
  );
  return { names, undocumented, forgotten };
}

describe("the public surface", () => {
  test.each([
    {
      reason: "the root: the plugin contract, the reconcilers, the manager, what an operator needs",
      report: "reconcile-kit.api.md",
      maxNames: 100,
      selfContained: true,
    },
    {
      reason:
        "reconcile-kit/parts: the building blocks the repo's harnesses take apart (its types are the root's)",
      report: "reconcile-kit-parts.api.md",
      maxNames: undefined,
      selfContained: false,
    },
    ...[
      ["reconcile-kit/testing: the fakes a plugin's unit tests run on", "reconcile-kit-testing.api.md"],
      [
        "reconcile-kit/conformance: the suite and the Subject a plugin fills",
        "reconcile-kit-conformance.api.md",
      ],
      ["reconcile-kit/crash-points: the explorer and its tap", "reconcile-kit-crash-points.api.md"],
      ["reconcile-kit/tracing: the OpenTelemetry setup", "reconcile-kit-tracing.api.md"],
      [
        "reconcile-kit/client-node: the adapter for exec-plugin kubeconfigs",
        "reconcile-kit-client-node.api.md",
      ],
    ].map(([reason, report]) => ({
      reason: reason!,
      report: report!,
      maxNames: undefined,
      selfContained: false,
    })),
  ])("$reason", ({ report, maxNames, selfContained }) => {
    const { names, undocumented, forgotten } = readReport(report);
    expect(names.length).toBeGreaterThan(0);
    if (maxNames !== undefined) expect(names.length, names.join(" ")).toBeLessThanOrEqual(maxNames);
    expect(undocumented).toEqual([]);
    if (selfContained) expect(forgotten).toEqual([]);
  });
});

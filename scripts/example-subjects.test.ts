/**
 * The examples' conformance subjects stand on the shipped kits alone: each imports only node's builtins,
 * @kubernetes/client-node, reconcile-kit and its entries, @shapes/envtest's package root, and its own
 * example's files — never the repo's stack, envtest's sources, e2e or the repository's root. A plugin author
 * copies them as they are.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const EXAMPLES = join(import.meta.dirname, "..", "examples");
const EXAMPLES_WITH_SUBJECTS = ["dns-controller", "etcd-controller"];

/** What a subject may import: a specifier matching one of these. */
const ALLOWED: readonly RegExp[] = [
  /^node:/,
  /^@kubernetes\/client-node$/,
  /^reconcile-kit(\/(conformance|crash-points|harness|testing|client-node|parts))?$/,
  /^@shapes\/envtest$/,
  // The example's own files: its sources, and the files beside the subject.
  /^\.\.\/src\/[^/]+\.ts$/,
  /^\.\/[^/]+\.ts$/,
];

/** Every specifier `text` imports or re-exports that the subject may not, and any use of REPO_ROOT. */
export function forbiddenImports(text: string): string[] {
  const found: string[] = [];
  for (const [, from, dynamic] of text.matchAll(/\bfrom\s+"([^"]+)"|\bimport\(\s*"([^"]+)"\s*\)/g)) {
    const specifier = from ?? dynamic ?? "";
    if (!ALLOWED.some((re) => re.test(specifier))) found.push(specifier);
  }
  if (/\bREPO_ROOT\b/.test(text)) found.push("REPO_ROOT");
  return found;
}

describe("forbiddenImports", () => {
  it.each([
    { reason: "the stack by its name", text: 'import { x } from "@shapes/stack";', found: ["@shapes/stack"] },
    {
      reason: "the stack by a path",
      text: 'import { x } from "../../../stack/index.ts";',
      found: ["../../../stack/index.ts"],
    },
    {
      reason: "envtest's sources",
      text: 'import { x } from "../../../envtest/src/crds.ts";',
      found: ["../../../envtest/src/crds.ts"],
    },
    {
      reason: "an e2e helper",
      text: 'import { x } from "../../../e2e/support/envtest.ts";',
      found: ["../../../e2e/support/envtest.ts"],
    },
    {
      reason: "a dynamic import of the stack",
      text: 'await import("@shapes/stack")',
      found: ["@shapes/stack"],
    },
    {
      reason: "the repository's root",
      text: 'const dir = join(REPO_ROOT, "examples");',
      found: ["REPO_ROOT"],
    },
    {
      reason: "another example's files",
      text: 'import { x } from "../../dns-controller/src/api.ts";',
      found: ["../../dns-controller/src/api.ts"],
    },
    {
      reason: "the kits, the client, envtest's root and the example's own files are allowed",
      text: [
        'import { join } from "node:path";',
        'import { KubeConfig } from "@kubernetes/client-node";',
        'import { pluginSubjectKit } from "reconcile-kit/harness";',
        'import { installCRDs } from "@shapes/envtest";',
        'import { GROUP } from "../src/api.ts";',
        'export { attributeEtcdWrite } from "./writes.ts";',
      ].join("\n"),
      found: [],
    },
  ])("$reason", ({ text, found }) => {
    expect(forbiddenImports(text)).toEqual(found);
  });
});

describe("the examples' subjects", () => {
  it.each(EXAMPLES_WITH_SUBJECTS)("%s imports only the kits and its own example", async (example) => {
    const folder = join(EXAMPLES, example, "conformance");
    const files = (await readdir(folder)).filter((f) => f.endsWith(".ts"));
    expect(files).toContain("subject.ts");
    for (const file of files) {
      expect(forbiddenImports(await readFile(join(folder, file), "utf8")), file).toEqual([]);
    }
  });
});

/**
 * Run in an image's dependency stage: cuts the root package.json down to the workspace packages that image
 * runs, so that `npm install --omit=dev` installs their production dependencies and nothing else, at the
 * versions of the same package-lock.json.
 *
 *   node deploy/images/only-workspaces.ts library controller    # the controller image
 *
 * Why not `npm ci --workspace=@shapes/controller`: npm ci installs the whole lock file whatever the flag says
 * (tried here with npm 11: express and better-sqlite3, the mock cloud's, were still installed, 157
 * packages). Over the cut-down package.json, `npm install --omit=dev` keeps the locked versions and prunes
 * the rest, but may leave a package that only an optional peer of the library wanted (yaml, through
 * Vitest, an optional peer of reconcile-kit/conformance); `npm prune --omit=dev` then removes it (102
 * packages, none of the cloud's). The root's own dependencies go: they are the demo's and the tests', and
 * an image runs none of that code.
 */
import { readFileSync, writeFileSync } from "node:fs";

interface Manifest {
  workspaces?: string[];
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  scripts?: Record<string, string>;
}

/** The manifest with only `keep` as workspaces (in its order) and no dependencies or scripts of its own. */
export function onlyWorkspaces(manifest: Manifest, keep: readonly string[]): Manifest {
  const unknown = keep.filter((w) => !(manifest.workspaces ?? []).includes(w));
  if (unknown.length > 0) throw new Error(`not a workspace of package.json: ${unknown.join(", ")}`);
  const { dependencies: _d, devDependencies: _dd, scripts: _s, ...rest } = manifest;
  return { ...rest, workspaces: (manifest.workspaces ?? []).filter((w) => keep.includes(w)) };
}

if (import.meta.main) {
  const keep = process.argv.slice(2);
  if (keep.length === 0 || keep.includes("--help") || keep.includes("-h")) {
    process.stdout.write("usage: node deploy/images/only-workspaces.ts <workspace folder>...\n");
    process.exit(keep.length === 0 ? 2 : 0);
  }
  try {
    const manifest = JSON.parse(readFileSync("package.json", "utf8")) as Manifest;
    writeFileSync("package.json", JSON.stringify(onlyWorkspaces(manifest, keep), null, 2) + "\n");
  } catch (error) {
    process.stderr.write(`only-workspaces: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}

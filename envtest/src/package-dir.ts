/**
 * Where envtest finds its own files. src/ (what this repo runs) and dist/ (what the package ships) are both
 * one level below the package folder, so a path built from the package folder holds for either: the Go
 * wrapper modules (`go/`) ship inside the package and are found there, installed or not.
 *
 * Two defaults belong to the project around envtest, not to the package: the CRD folder and the folder of
 * the persistent cluster. In this repo (envtest/ is a workspace of its root package.json) they are the repo's
 * `crds/` and `.demo/cluster/`; installed from the package they are those folders of the working directory,
 * the project that runs the tests.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** The package folder: the one holding package.json, `go/`, and src/ or dist/. */
export const PACKAGE_DIR = join(import.meta.dirname, "..");

/**
 * The root of the checkout whose workspace this package is: the folder above the package folder when its
 * package.json lists the package folder's name among its `workspaces`. Undefined when the package is
 * installed (under node_modules, the folder above is a scope or node_modules itself, with no such list).
 */
export function checkoutRoot(packageDir: string = PACKAGE_DIR): string | undefined {
  const root = join(packageDir, "..");
  try {
    const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { workspaces?: unknown };
    const name = packageDir.split(/[/\\]/).filter(Boolean).at(-1);
    return Array.isArray(manifest.workspaces) && manifest.workspaces.includes(name) ? root : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A folder of the project around envtest: `parts` under the checkout's root in this repo, otherwise under
 * the working directory (a relative path, resolved when it is used).
 */
export function projectPath(...parts: string[]): string {
  const root = checkoutRoot();
  return root === undefined ? join(...parts) : join(root, ...parts);
}

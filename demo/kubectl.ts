/**
 * `npm run kubectl -- <args>`: kubectl against the demo's cluster, without installing kubectl. It runs
 * the kubectl that envtest builds next to kube-apiserver (the same pinned version), with the KUBECONFIG
 * of .demo/env; a kubectl on PATH is the fallback when the build has none (KUBEBUILDER_ASSETS without it).
 *
 * Every argument goes to kubectl untouched. The state folder comes from SHAPES_DEMO_DIR (default .demo/).
 * Relative paths (`-f crds/examples/red-square.yaml`) are read from the folder npm was run in.
 */
import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { constants } from "node:os";
import { join } from "node:path";
import { binariesIn, ensureBinaries, resolveSource, stderrLog } from "@shapes/envtest";
import { readEnvFile } from "./env-file.ts";
import { demoPaths, stateDirFrom, STATE_DIR_ENV } from "./paths.ts";

const USAGE = `Usage: npm run kubectl -- <kubectl arguments>

Runs kubectl (built by envtest with the control plane) against the demo's cluster: the KUBECONFIG in
.demo/env, written by npm start. Every argument goes to kubectl, e.g.:

  npm run kubectl -- get shapes -A
  npm run kubectl -- apply -n default -f crds/examples/red-square.yaml
  npm run kubectl -- describe shape -n default red-square
  npm run kubectl -- get shaperefs
  npm run kubectl -- get events -n default --field-selector involvedObject.kind=Shape

Environment: ${STATE_DIR_ENV} names the demo's state folder (default .demo/ in the repo).
`;

/** The kubectl to run: the one beside the pinned control-plane binaries, else `kubectl` on PATH. */
export async function findKubectl(clusterDir: string, env: NodeJS.ProcessEnv): Promise<string> {
  // The binaries the demo's control plane ran from (state.json), when there is one.
  try {
    const state = JSON.parse(await readFile(join(clusterDir, "state.json"), "utf8")) as {
      binaries?: { kubectl?: string };
    };
    if (state.binaries?.kubectl) return state.binaries.kubectl;
  } catch {
    // no local control plane here (a user's cluster, or never started)
  }
  const source = resolveSource({ env, useExistingCluster: false });
  if (source.kind === "assets") return binariesIn(source.binaries.dir).kubectl ?? "kubectl";
  // The build cache: found at once when there, else built (minutes, with progress on stderr).
  return (await ensureBinaries({ log: stderrLog("kubectl") })).kubectl ?? "kubectl";
}

/** Runs kubectl with `argv`; resolves with its exit code. */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.length === 0 || (argv.length === 1 && (argv[0] === "--help" || argv[0] === "-h"))) {
    process.stdout.write(USAGE);
    return argv.length === 0 ? 2 : 0;
  }
  const paths = demoPaths(stateDirFrom(undefined, env));
  const demoEnv = await readEnvFile(paths.envFile);
  const kubectl = await findKubectl(paths.clusterDir, env);
  return new Promise<number>((resolve) => {
    const child = spawn(kubectl, [...argv], {
      stdio: "inherit",
      env: { ...env, KUBECONFIG: demoEnv.KUBECONFIG },
      cwd: env.INIT_CWD ?? process.cwd(), // npm runs scripts in the repo root; paths are the user's
    });
    child.once("error", (error) => {
      process.stderr.write(`npm run kubectl: cannot run ${kubectl}: ${error.message}\n`);
      resolve(127);
    });
    // A shell's convention: 128 + the signal's number when kubectl was ended by a signal.
    child.once("exit", (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)));
  });
}

const invokedDirectly = (() => {
  try {
    return realpathSync(process.argv[1] ?? "") === realpathSync(import.meta.filename);
  } catch {
    return false;
  }
})();

if (invokedDirectly) {
  // Ctrl-C reaches kubectl directly (same process group); we just wait for it to end.
  process.on("SIGINT", () => {});
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (error: unknown) => {
      process.stderr.write(`npm run kubectl: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}

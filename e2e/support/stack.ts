/**
 * The e2e tests' door to the stack (stack/): `startStack` with the control-plane binaries the global setup
 * prepared (`inject("envtestBinaries")`), and what a test needs to skip on an existing cluster.
 *
 * With USE_EXISTING_CLUSTER=true every stack uses the KUBECONFIG cluster (stack/README.md); a test that needs
 * a local control plane (restarts the API server, counts its processes, wants a second cluster) skips there:
 *
 *   describe.skipIf(skipOnExistingCluster("restarts the API server"))("...", () => { ... });
 */
import { join } from "node:path";
import { inject } from "vitest";
import type { BinaryPaths } from "@shapes/envtest";
import type { SubjectHarnessOptions } from "reconcile-kit/harness";
import {
  type Stack,
  type StackOptions,
  startStack as startStackWith,
  usesExistingCluster,
} from "@shapes/stack";

/**
 * Starts a stack for the test file `suite`, from the binaries of the global setup. Outside Vitest (the
 * subjects also serve `npm run crash-points`) the stack finds them itself: KUBEBUILDER_ASSETS or the cache.
 */
export function startStack(suite: string, options: Omit<StackOptions, "binaries"> = {}): Promise<Stack> {
  return startStackWith(suite, { ...preparedBinaries(), ...options });
}

/** `{ binaries }` the global setup prepared, under Vitest; `{}` outside it. */
export function preparedBinaries(): { binaries?: BinaryPaths } {
  return process.env.VITEST ? { binaries: inject("envtestBinaries") } : {};
}

/** The e2e artifacts folder of `suite` (git-ignored): where a subject's controller logs go. */
export function artifactsDirOf(suite: string): string {
  return join(import.meta.dirname, "..", "artifacts", suite);
}

/**
 * What a plugin's subject factory (examples' `./conformance`) is given by an e2e test: the global setup's
 * binaries and the e2e artifacts folder of `suite`.
 */
export function subjectOptions(suite: string): SubjectHarnessOptions {
  return { ...preparedBinaries(), artifactsDir: artifactsDirOf(suite) };
}

/**
 * True when the stacks use an existing cluster (USE_EXISTING_CLUSTER=true): the caller skips, and this says
 * why on stderr (`why`: what the test needs a local control plane for).
 */
export function skipOnExistingCluster(why: string): boolean {
  if (!usesExistingCluster()) return false;
  console.warn(`skipped on an existing cluster (USE_EXISTING_CLUSTER=true): this test ${why}`);
  return true;
}

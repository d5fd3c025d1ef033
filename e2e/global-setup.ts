/**
 * Runs once before the e2e tests: makes sure the Kubernetes binaries exist (KUBEBUILDER_ASSETS, else the
 * build cache, else a `go build` — minutes on a cold machine, with progress lines), and hands their paths
 * to the tests (`inject("envtestBinaries")`, used by support/envtest.ts and support/stack.ts).
 *
 * The binaries are needed even when the tests use an existing cluster (USE_EXISTING_CLUSTER=true): some
 * tests insist on a local control plane they can restart, count processes of, and mint identities in.
 */
import type { TestProject } from "vitest/node";
import { type BinaryPaths, elapsed, ensureBinaries, readBinaryVersions, stderrLog } from "@shapes/envtest";

declare module "vitest" {
  export interface ProvidedContext {
    /** The control-plane binaries every e2e test starts local control planes from. */
    envtestBinaries: BinaryPaths;
  }
}

/** Vitest's global setup: ensure the binaries, provide their paths. */
export default async function setup(project: TestProject): Promise<void> {
  const log = stderrLog("e2e setup");
  const started = Date.now();
  const binaries = await ensureBinaries({ log });
  const versions = await readBinaryVersions(binaries);
  log(
    `kube-apiserver ${versions.kubeApiServer}, etcd ${versions.etcd} in ${binaries.dir} (ready in ${elapsed(started)})`,
  );
  project.provide("envtestBinaries", binaries);
}

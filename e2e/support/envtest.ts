/**
 * Control planes for e2e tests, from the binaries the global setup prepared. Progress lines are dropped
 * (a failed start throws with the child's last log lines, which is what matters); set ENVTEST_VERBOSE=1
 * to see them.
 */
import {
  type ControlPlane,
  type LocalControlPlane,
  silentLog,
  start,
  startLocal,
  type StartOptions,
  stderrLog,
} from "@shapes/envtest";
import { usesExistingCluster } from "@shapes/stack";
import { preparedBinaries } from "./stack.ts";

function defaults(options: StartOptions): StartOptions {
  return {
    ...preparedBinaries(),
    log: process.env.ENVTEST_VERBOSE ? stderrLog("envtest") : silentLog,
    ...options,
  };
}

/**
 * A control plane: the KUBECONFIG cluster with USE_EXISTING_CLUSTER=true, else a local one. The rule of the
 * stack (`usesExistingCluster`), not envtest's "a set KUBECONFIG means existing": a test never writes to a
 * cluster nobody named for it.
 */
export function startControlPlane(options: StartOptions = {}): Promise<ControlPlane> {
  return start(defaults({ useExistingCluster: usesExistingCluster(), ...options }));
}

/** A local control plane, whatever KUBECONFIG says (for tests that restart it or count its processes). */
export function startLocalControlPlane(options: StartOptions = {}): Promise<LocalControlPlane> {
  return startLocal(defaults(options));
}

/**
 * Control planes for e2e tests, from the binaries the global setup prepared. Progress lines are dropped
 * (a failed start throws with the child's last log lines, which is what matters); set ENVTEST_VERBOSE=1
 * to see them.
 */
import {
  type ControlPlane,
  type LocalControlPlane,
  silentLog,
  startLocal,
  type StartOptions,
  stderrLog,
} from "@shapes/envtest";
import { startControlPlane as startWithConvention } from "reconcile-kit/harness";
import { preparedBinaries } from "./stack.ts";

/**
 * A control plane: the KUBECONFIG cluster with USE_EXISTING_CLUSTER=true, else a local one
 * (reconcile-kit/harness's `startControlPlane`: a KUBECONFIG alone does not count), from the global setup's
 * binaries.
 */
export function startControlPlane(options: StartOptions = {}): Promise<ControlPlane> {
  return startWithConvention({ ...preparedBinaries(), ...options });
}

/** A local control plane, whatever KUBECONFIG says (for tests that restart it or count its processes). */
export function startLocalControlPlane(options: StartOptions = {}): Promise<LocalControlPlane> {
  return startLocal({
    ...preparedBinaries(),
    log: process.env.ENVTEST_VERBOSE ? stderrLog("envtest") : silentLog,
    ...options,
  });
}

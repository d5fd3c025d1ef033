/**
 * The cluster a harness runs on: a local control plane (envtest's), or the KUBECONFIG cluster with
 * USE_EXISTING_CLUSTER=true, and the identity a controller gets there.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import {
  type ControlPlane,
  type Identity,
  silentLog,
  start,
  type StartOptions,
  stderrLog,
} from "@shapes/envtest";
import { usesExistingCluster } from "../support/existing-cluster.ts";
import { serviceAccountTokenIdentity } from "./kube.ts";

export { usesExistingCluster };

/**
 * A control plane: the KUBECONFIG cluster with USE_EXISTING_CLUSTER=true ({@link usesExistingCluster}),
 * else a local one from `options.binaries` (default: KUBEBUILDER_ASSETS, else envtest's build cache, built
 * when empty: minutes). Progress lines are dropped unless ENVTEST_VERBOSE is set (a failed start throws
 * with the child's last log lines, which is what matters).
 *
 * # Guarantees
 * - Unlike envtest's `start()`, a KUBECONFIG alone never selects an existing cluster: a test never writes to
 *   a cluster nobody named for it.
 *
 * # Assumptions
 * - @shapes/envtest is installed (an optional peer dependency of reconcile-kit).
 */
export function startControlPlane(options: StartOptions = {}): Promise<ControlPlane> {
  return start({
    useExistingCluster: usesExistingCluster(),
    log: process.env.ENVTEST_VERBOSE ? stderrLog("envtest") : silentLog,
    ...options,
  });
}

/**
 * The identity of the service account `namespace/name` on `cluster` (which must have it): a client
 * certificate from a local control plane's CA, or on an existing cluster a token from the TokenRequest API
 * ({@link serviceAccountTokenIdentity}) in a kubeconfig written to `tokensDir`. `kubeConfig` is an admin's.
 *
 * # Errors
 * Rejects when no identity can be made: no token issued for the service account on an existing cluster.
 */
export function serviceAccountIdentityOn(
  cluster: ControlPlane,
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  tokensDir: string,
): Promise<Identity> {
  return cluster.kind === "local"
    ? cluster.serviceAccountIdentity(namespace, name)
    : serviceAccountTokenIdentity(kubeConfig, namespace, name, tokensDir);
}

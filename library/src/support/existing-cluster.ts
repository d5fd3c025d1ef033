/**
 * The existing-cluster convention (controller-runtime's USE_EXISTING_CLUSTER): whether tests run against the
 * cluster of KUBECONFIG instead of a local control plane they start. Read by the conformance suite (which
 * then skips what must not happen to a cluster that outlives it) and by the harness.
 */

/**
 * Whether tests use an existing cluster: USE_EXISTING_CLUSTER=true (or 1). Unset, empty, false or 0: a local
 * control plane, whatever KUBECONFIG says — a test never writes to a cluster nobody named for it.
 *
 * # Errors
 * Throws on any other value, rather than guess.
 */
export function usesExistingCluster(env: NodeJS.ProcessEnv = process.env): boolean {
  const flag = env.USE_EXISTING_CLUSTER?.trim().toLowerCase();
  if (flag === undefined || flag === "" || flag === "false" || flag === "0") return false;
  if (flag === "true" || flag === "1") return true;
  throw new Error(`cannot read USE_EXISTING_CLUSTER="${env.USE_EXISTING_CLUSTER}": use true or false`);
}

/**
 * Who "we" are, when several clusters share one external API: an identity of the CLUSTER, the same for
 * every replica and across restarts, and different for every other cluster.
 *
 * Kubernetes has no cluster id field. The convention (the multi-cluster SIG's ClusterProperty `id.k8s.io`
 * suggests it, and tools like Cilium, Submariner and Velero use it) is the uid of the `kube-system`
 * namespace: created once with the cluster, never deleted, unique per cluster. A controller that stamps an
 * owner tag on external objects derives its default owner id from it, so two clusters never take each
 * other's objects for their own — a constant default (every cluster `owner=k8s`) makes each cluster's leak
 * sweep delete the other's objects.
 *
 * Reading it needs `get` on the one namespace `kube-system` (deploy/rbac.yaml grants exactly that). When it
 * cannot be read, the caller must not guess: a guessed owner id is how clusters collide.
 *
 * Read over the library's client (a {@link KubeHttp}; a client-node KubeConfig becomes one through
 * `kubeConnectionOf`, in `reconcile-kit/client-node`).
 */
import type { KubeHttp } from "./kube-http.ts";
import { sleep } from "../support/clock.ts";

/** The namespace whose uid identifies the cluster. */
export const CLUSTER_ID_NAMESPACE = "kube-system";

/**
 * Reads the cluster's identity (the `kube-system` namespace's uid) through `kube`; throws "cannot …" when it
 * can't.
 */
export async function readClusterId(kube: KubeHttp): Promise<string> {
  let uid: string | undefined;
  try {
    uid = await readNamespaceUid(kube);
  } catch (err) {
    throw new Error(`cannot read the cluster identity: ${describeReadError(err)}`, { cause: err });
  }
  if (!uid) throw new Error(`cannot read the cluster identity: namespace ${CLUSTER_ID_NAMESPACE} has no uid`);
  return uid;
}

async function readNamespaceUid(kube: KubeHttp): Promise<string | undefined> {
  const namespace = await kube.request<{ metadata?: { uid?: string } }>(
    "GET",
    `/api/v1/namespaces/${CLUSTER_ID_NAMESPACE}`,
  );
  return namespace?.metadata?.uid;
}

/**
 * The default owner id of a cluster: a readable prefix and the cluster id, e.g. `k8s-5f0c…`. At most 63
 * characters (a uid is 36), letters, digits and '-': a valid tag value and label value.
 */
export function ownerIdOf(clusterId: string, prefix = "k8s-"): string {
  const id = `${prefix}${clusterId.toLowerCase().replace(/[^a-z0-9-]/g, "")}`;
  if (id.length === prefix.length || id.length > 63) {
    throw new Error(`cannot derive an owner id from the cluster id ${JSON.stringify(clusterId)}`);
  }
  return id;
}

/** A person-readable reason, with what to do about the usual one (a 403: the grant is missing). */
function describeReadError(err: unknown): string {
  const code =
    typeof err === "object" && err !== null && "code" in err && typeof err.code === "number"
      ? err.code
      : undefined;
  if (code === 403) {
    return `the API server refused to show namespace ${CLUSTER_ID_NAMESPACE} (403): grant "get" on namespaces/${CLUSTER_ID_NAMESPACE} (deploy/rbac.yaml does), or set --owner-id`;
  }
  if (code === 404) return `namespace ${CLUSTER_ID_NAMESPACE} does not exist (404): set --owner-id`;
  const message = err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err);
  return code === undefined ? message : `HTTP ${String(code)}: ${message}`;
}

/** Options of {@link waitForClusterId}. */
export interface WaitForClusterIdOptions {
  signal: AbortSignal;
  /** Called after each failed read, with the error and the delay before the next try. */
  onError: (err: Error, retryInMs: number) => void;
  /** Delay before the first retry; it doubles up to `maxDelayMs`. Default 1 s. */
  baseDelayMs?: number;
  /** Longest delay between retries. Default 30 s. */
  maxDelayMs?: number;
}

/**
 * Runs `read` (the cluster id, or the owner id derived from it) until it succeeds (the API server may still
 * be starting, a grant may arrive late) or `signal` aborts (then undefined). Never guesses.
 */
export async function waitForClusterId(
  read: () => Promise<string>,
  { signal, onError, baseDelayMs = 1_000, maxDelayMs = 30_000 }: WaitForClusterIdOptions,
): Promise<string | undefined> {
  for (let delay = baseDelayMs; !signal.aborted; delay = Math.min(delay * 2, maxDelayMs)) {
    try {
      return await read();
    } catch (err) {
      if (signal.aborted) break;
      onError(err instanceof Error ? err : new Error(String(err)), delay);
    }
    await sleep(delay, signal);
  }
  return undefined;
}

/** The cluster's default owner id, read once: `ownerIdOf(readClusterId())` (throws "cannot …"). */
export async function readDefaultOwnerId(kube: KubeHttp): Promise<string> {
  return ownerIdOf(await readClusterId(kube));
}

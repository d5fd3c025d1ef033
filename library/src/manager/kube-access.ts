/**
 * How a controller process reaches the API server: the library's loader (kubeconfig.ts: the explicit file,
 * `KUBECONFIG` merged, in-cluster, ~/.kube/config) and its keep-alive client (kube-http.ts) for every call —
 * informers, writes, Events, the Lease (`LeanLeaseClient`), the cluster identity, the access reviews, the CRD
 * read. Nothing of the library's main entry point imports client-node when it loads, so such a process never
 * loads it (idle, client-node costs some 40 MB of RSS: docs/benchmarks.md); a kubeconfig whose user is an
 * exec plugin or an auth provider is the exception: client-node's loader runs it, imported at that moment,
 * and one log line says so.
 *
 * {@link openKubeAccess} returns the access, or one line saying why the kubeconfig cannot be used
 * (a process prints it and exits 2 — never a stack).
 */
import type { LeaseClient } from "../leadership/leader-election.ts";
import { LeanLeaseClient } from "../leadership/lean-lease-client.ts";
import type { Logger } from "../observability/logger.ts";
import { readDefaultOwnerId } from "../kube/cluster-identity.ts";
import { KubeHttp } from "../kube/kube-http.ts";
import {
  connectWithClientNode,
  KubeconfigError,
  loadKubeconfig,
  type KubeConnection,
} from "../kube/kubeconfig.ts";

/** Options of {@link openKubeAccess}. */
export interface OpenKubeAccessOptions {
  /** An explicit kubeconfig file; undefined: the loader's own search (see the module comment). */
  kubeconfig?: string;
  /** Where the loader says that it loads client-node for an exec plugin or auth provider, and what it uses. */
  log?: Pick<Logger, "info">;
}

/** What the process reaches the API server with. */
export interface KubeAccess {
  /** What `createExternalResourceControllers`, `KubeAccessReviewer` and `metricsAuthEnabled` are given. */
  readonly target: KubeConnection;
  /** The Lease of leader election, `namespace/name`. */
  leaseClient(namespace: string, name: string): LeaseClient;
  /** The cluster's default owner id (the kube-system namespace's uid); throws "cannot …". */
  readDefaultOwnerId(): Promise<string>;
  /** Closes the connections this opened (at shutdown). */
  close(): Promise<void>;
}

/** What {@link openKubeAccess} opened: the access, or one line saying why the kubeconfig cannot be used. */
export type OpenedKubeAccess = { kind: "ok"; kube: KubeAccess } | { kind: "invalid"; message: string };

/** Loads the kubeconfig (see the module comment). Never rejects for a bad kubeconfig. */
export async function openKubeAccess({
  kubeconfig,
  log,
}: OpenKubeAccessOptions = {}): Promise<OpenedKubeAccess> {
  const verdict = loadKubeconfig(kubeconfig ? { path: kubeconfig } : {});
  let connection: KubeConnection;
  switch (verdict.kind) {
    case "lean":
      connection = verdict.connection;
      break;
    case "needs-client-node":
      try {
        connection = await connectWithClientNode(verdict, log);
      } catch (err) {
        if (!(err instanceof KubeconfigError)) throw err;
        return { kind: "invalid", message: `cannot use ${err.message}` };
      }
      break;
    case "invalid":
      return { kind: "invalid", message: `cannot use ${verdict.error.message}` };
  }
  log?.info(
    { kubeconfig: connection.source, context: connection.contextName, server: connection.server },
    "Kubernetes: every call over the library's lean client (kube-access.ts)",
  );
  // The process's own reads and the Lease share one client; the controllers and the reviewer have theirs.
  const http = new KubeHttp(connection);
  return {
    kind: "ok",
    kube: {
      target: connection,
      leaseClient: (namespace, name) => new LeanLeaseClient(http, namespace, name),
      readDefaultOwnerId: () => readDefaultOwnerId(http),
      close: () => http.close(),
    },
  };
}

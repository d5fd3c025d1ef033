/**
 * How a controller process reaches the API server, one of two clients it picks (the Shapes controller with
 * `--kube-client`, the DNS example too); `lean` unless it says otherwise ({@link DEFAULT_KUBE_CLIENT}):
 *
 * - `client-node` (opt-in: idle, it costs some 40 MB of RSS more than `lean`: docs/benchmarks.md): client-node's loader (an explicit file, else its default: KUBECONFIG, ~/.kube/config, then
 *   in-cluster) into a `PooledKubeConfig`; the Lease and the cluster identity over its generated API clients,
 *   the informers over its `ListWatch`. Writes and Events go over the
 *   library's own client either way.
 * - `lean`: the library's loader (kubeconfig.ts: the explicit file, `KUBECONFIG` merged, in-cluster,
 *   ~/.kube/config) and its keep-alive client (kube-http.ts) for every call — informers, writes, Events, the
 *   Lease (`LeanLeaseClient`), the cluster identity, the access reviews, the CRD read. Nothing of the
 *   library's main entry point imports client-node when it loads, so such a process never loads it; a
 *   kubeconfig whose user is an exec plugin or an auth provider is the exception: client-node's loader runs
 *   it, imported at that moment, and one log line says so.
 *
 * {@link openKubeAccess} returns a verdict: the access, or one line saying why the kubeconfig cannot be used
 * (a process prints it and exits 2 — never a stack).
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { LeaseClient } from "../leadership/leader-election.ts";
import { KubeLeaseClient } from "../leadership/lease-client.ts";
import { LeanLeaseClient } from "../leadership/lean-lease-client.ts";
import type { Logger } from "../observability/logger.ts";
import { readDefaultOwnerId } from "./cluster-identity.ts";
import { KubeHttp } from "./kube-http.ts";
import { connectWithClientNode, KubeconfigError, loadKubeconfig, type KubeConnection } from "./kubeconfig.ts";

/** The Kubernetes clients a process can pick. */
export const KUBE_CLIENTS = ["client-node", "lean"] as const;
/** One of {@link KUBE_CLIENTS}. */
export type KubeClientKind = (typeof KUBE_CLIENTS)[number];
/**
 * The client a process uses when it does not choose: `lean`. `client-node` stays for a caller that
 * names it, e.g. to compare the two (the benchmark's `client-node` column).
 */
export const DEFAULT_KUBE_CLIENT: KubeClientKind = "lean";

/** Options of {@link openKubeAccess}. */
export interface OpenKubeAccessOptions {
  /** Which client; default {@link DEFAULT_KUBE_CLIENT} (`lean`). */
  client?: KubeClientKind;
  /** An explicit kubeconfig file; undefined: the client's own search (see the module comment). */
  kubeconfig?: string;
  /** Where the lean client says that it loads client-node for an exec plugin or auth provider, and what it uses. */
  log?: Pick<Logger, "info">;
}

/** What the process reaches the API server with. */
export interface KubeAccess {
  /** The client in use. */
  readonly kind: KubeClientKind;
  /** What `createExternalResourceControllers`, `KubeAccessReviewer` and `metricsAuthEnabled` are given. */
  readonly target: KubeConfig | KubeConnection;
  /** The Lease of leader election, `namespace/name`. */
  leaseClient(namespace: string, name: string): LeaseClient;
  /** The cluster's default owner id (the kube-system namespace's uid); throws "cannot …". */
  readDefaultOwnerId(): Promise<string>;
  /** Closes the connections this opened (at shutdown). */
  close(): Promise<void>;
}

/** The verdict of {@link openKubeAccess}: the access, or one line saying why the kubeconfig cannot be used. */
export type KubeAccessVerdict = { kind: "ok"; kube: KubeAccess } | { kind: "invalid"; message: string };

/**
 * Loads the kubeconfig with the client `options.client` names (the lean one when it names none). Never rejects
 * for a bad kubeconfig.
 */
export async function openKubeAccess(options: OpenKubeAccessOptions): Promise<KubeAccessVerdict> {
  const client = options.client ?? DEFAULT_KUBE_CLIENT;
  return client === "lean" ? openLean(options) : openClientNode(options);
}

async function openClientNode({ kubeconfig }: OpenKubeAccessOptions): Promise<KubeAccessVerdict> {
  // One connection pool for the API server (kube-config.ts says why); it imports client-node.
  const { PooledKubeConfig } = await import("./kube-config.ts");
  const kubeConfig = new PooledKubeConfig();
  try {
    if (kubeconfig) kubeConfig.loadFromFile(kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (err) {
    return { kind: "invalid", message: `cannot load the kubeconfig: ${(err as Error).message}` };
  }
  // The library's Kubernetes client (kube-http.ts) speaks to the server directly.
  if (kubeConfig.getCurrentCluster()?.proxyUrl) {
    return { kind: "invalid", message: "cannot use a kubeconfig that names a proxy (proxy-url)" };
  }
  return {
    kind: "ok",
    kube: {
      kind: "client-node",
      target: kubeConfig,
      leaseClient: (namespace, name) => new KubeLeaseClient(kubeConfig, namespace, name),
      readDefaultOwnerId: () => readDefaultOwnerId(kubeConfig),
      close: () => kubeConfig.closePools(),
    },
  };
}

async function openLean({ kubeconfig, log }: OpenKubeAccessOptions): Promise<KubeAccessVerdict> {
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
      kind: "lean",
      target: connection,
      leaseClient: (namespace, name) => new LeanLeaseClient(http, namespace, name),
      readDefaultOwnerId: () => readDefaultOwnerId(http),
      close: () => http.close(),
    },
  };
}

/**
 * The controller's way to the API server, as `--kube-client` says (main.ts picks, run-modes.ts and the
 * library's controllers use it):
 *
 * - `client-node` (the default, as before): client-node's loader (`--kubeconfig`, else its default:
 *   ~/.kube/config, then in-cluster) into a `PooledKubeConfig`; the Lease and the cluster identity over its
 *   generated API clients, the informers over its `ListWatch` (unless `--lean-list-watch`).
 * - `lean`: the library's loader (library/src/kube/kubeconfig.ts: `--kubeconfig`, `KUBECONFIG` merged,
 *   in-cluster, ~/.kube/config) and its keep-alive client for every call — informers, writes, events, the
 *   Lease (`LeanLeaseClient`), the cluster identity, the access reviews, the CRD read. Nothing here or in the
 *   library's main entry point imports client-node at load time, so the process never loads it; a
 *   kubeconfig whose user is an exec plugin or an auth provider is the exception: client-node's loader then
 *   runs it, imported at that moment, and a log line says so.
 *
 * A kubeconfig neither can read is a {@link KubeconfigError}-style one-line message for main.ts (exit 2).
 */
import type { KubeConfig } from "@kubernetes/client-node";
import {
  connectWithClientNode,
  KubeconfigError,
  KubeHttp,
  KubeLeaseClient,
  LeanLeaseClient,
  loadKubeconfig,
  readDefaultOwnerId,
  type KubeConnection,
  type LeaseClient,
  type Logger,
} from "reconcile-kit";
import type { Config } from "./config.ts";

/** What the process reaches the API server with. */
export interface KubeAccess {
  /** The client in use: `client-node` or `lean`. */
  readonly kind: Config["kubeClient"];
  /** What the library's controllers and access reviewer are given. */
  readonly target: KubeConfig | KubeConnection;
  /** The Lease of leader election, `namespace/name`. */
  leaseClient(namespace: string, name: string): LeaseClient;
  /** The cluster's default owner id (the kube-system namespace's uid); throws "cannot …". */
  readDefaultOwnerId(): Promise<string>;
  /** Closes the connections this opened (at shutdown). */
  close(): Promise<void>;
}

/** The verdict of {@link openKube}: the access, or one line saying why the kubeconfig cannot be used. */
export type KubeVerdict = { kind: "ok"; kube: KubeAccess } | { kind: "invalid"; message: string };

/** Loads the kubeconfig with the client `config.kubeClient` names. Never throws for a bad kubeconfig. */
export async function openKube(config: Config, log: Pick<Logger, "info">): Promise<KubeVerdict> {
  return config.kubeClient === "lean" ? openLean(config, log) : openClientNode(config);
}

async function openClientNode(config: Config): Promise<KubeVerdict> {
  // One connection pool for the API server (library/src/kube/kube-config.ts says why).
  const { PooledKubeConfig } = await import("reconcile-kit/client-node");
  const kubeConfig = new PooledKubeConfig();
  try {
    if (config.kubeconfig) kubeConfig.loadFromFile(config.kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (err) {
    return { kind: "invalid", message: `cannot load the kubeconfig: ${(err as Error).message}` };
  }
  // The library's Kubernetes client (library/src/kube/kube-http.ts) speaks to the server directly.
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

async function openLean(config: Config, log: Pick<Logger, "info">): Promise<KubeVerdict> {
  // `--kubeconfig` is an explicit file; the same value from KUBECONFIG is left to the loader, which merges a list.
  const explicit = config.kubeconfig !== undefined && config.kubeconfig !== process.env.KUBECONFIG;
  const verdict = loadKubeconfig(explicit ? { path: config.kubeconfig } : {});
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
  log.info(
    { kubeconfig: connection.source, context: connection.contextName, server: connection.server },
    "--kube-client=lean: every Kubernetes call over the library's keep-alive client",
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

/**
 * reconcile-kit/client-node: what of the library loads `@kubernetes/client-node` when it is imported —
 * `PooledKubeConfig` (a client-node KubeConfig whose API clients share one connection pool) and
 * `beforeRequest` (per-call options for its generated clients). Apart from the main entry point so that a
 * process on the lean client (kube/kubeconfig.ts, `KubeHttp`) never loads client-node: the main entry
 * point imports it only lazily, where a caller hands it a KubeConfig. Recorded in
 * api/reconcile-kit-client-node.api.md.
 */
export * from "./kube/pooled-kube-config.ts";

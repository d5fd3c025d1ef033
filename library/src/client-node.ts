/**
 * reconcile-kit/client-node: the library's side of `@kubernetes/client-node`, for a process or a test that
 * holds a client-node KubeConfig — `kubeConnectionOf` (a KubeConfig's current context as the `KubeConnection`
 * every Kubernetes client of the library takes: `KubeHttp`, the controllers, the access reviewer),
 * `PooledKubeConfig` (a KubeConfig whose API clients share one connection pool) and `beforeRequest` (per-call
 * options for its generated clients). Apart from the main entry point, which never loads client-node when it
 * is imported (the lazy loader for exec-plugin kubeconfigs, `connectWithClientNode`, imports it at its call).
 * Recorded in api/reconcile-kit-client-node.api.md.
 */
export * from "./kube/pooled-kube-config.ts";
export { kubeConnectionOf } from "./kube/kubeconfig.ts";

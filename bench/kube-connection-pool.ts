/**
 * Makes @kubernetes/client-node 2.0.1 reuse ONE connection pool per cluster and user, instead of building a new
 * undici Agent — a new TLS connection and handshake, and a new SecureContext that parses the client key again —
 * for every request. Importing this module patches `KubeConfig` for the whole process.
 *
 * Why: client-node's `KubeConfig.applySecurityAuthentication` calls `createDispatcher` on each request, and
 * `createDispatcher` returns `new Agent(...)` each time (its `agentCache` only serves the old https.Agent path).
 * 50 sequential list calls open 62 sockets that way, against 1 with a shared Agent, and take 6× longer.
 *
 * Used twice, never by the controller's own code:
 * - the bench's own process imports it (run.ts), so the workload generator does not burn the shared CPU on
 *   handshakes that `kubectl` would not make;
 * - the opt-in `pooled-kube` configuration preloads it into the controller (`node --import`), to measure
 *   what the fix proposed for the controller (cache the dispatcher per cluster/user) would buy.
 */
import { KubeConfig } from "@kubernetes/client-node";

/** The two private methods of client-node's KubeConfig wrapped here (private in its typings only). */
interface DispatcherFactory {
  createDispatcher: (this: DispatcherFactory, cluster: unknown, agentOptions: unknown) => unknown;
  getAgentCacheKey: (this: DispatcherFactory, cluster: unknown) => string;
}

const proto = KubeConfig.prototype as unknown as DispatcherFactory;
const create = proto.createDispatcher;
/** Per KubeConfig, the one dispatcher of each cluster/user (client-node's own cache key). */
const pools = new WeakMap<object, Map<string, unknown>>();

proto.createDispatcher = function (cluster, agentOptions) {
  let byKey = pools.get(this);
  if (!byKey) {
    byKey = new Map<string, unknown>();
    pools.set(this, byKey);
  }
  const key = this.getAgentCacheKey(cluster);
  if (!byKey.has(key)) byKey.set(key, create.call(this, cluster, agentOptions));
  return byKey.get(key);
};

/**
 * A KubeConfig whose API clients share one connection pool per cluster and user.
 *
 * Why this exists: @kubernetes/client-node 2.0's generated API clients (`makeApiClient`) ask the KubeConfig for
 * authentication on every request, and it answers with a brand-new undici Agent each time — so every write
 * opens a new TLS connection, with a full handshake on both sides, and the old pools linger until they idle
 * out. (Its informers and watches are not affected: they use a cached agent.) client-go keeps one transport
 * per config; this does the same. Measured with `npm run bench` (docs/benchmarks.md, the `no-kube-pool`
 * column): without the pool, converging 1,000 Shapes takes twice as long, with 3.5× the controller's CPU
 * and 1.85× its memory.
 *
 * Also {@link beforeRequest}: per-call options for the generated API clients, which take no AbortSignal and
 * know only the query parameters of their OpenAPI spec.
 */
import {
  KubeConfig,
  Observable,
  type ConfigurationOptions,
  type ObservableMiddleware,
  type RequestContext,
} from "@kubernetes/client-node";

type Dispatcher = NonNullable<ReturnType<RequestContext["getDispatcher"]>>;

/** A KubeConfig that reuses one HTTP dispatcher (connection pool) per cluster and user for its API clients. */
export class PooledKubeConfig extends KubeConfig {
  /** One dispatcher per `server|cluster|user`: the current context can change, the pools stay apart. */
  readonly #pools = new Map<string, Dispatcher>();

  /**
   * Called by an API client before each request: lets client-node set the headers (tokens are refreshed
   * here, so they stay current) and build its dispatcher, then swaps in the pooled one for this cluster and
   * user, closing the fresh one (never connected, so closing is free). Never blocks beyond client-node's own.
   */
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (!fresh) return; // plain http: no TLS agent to pool (undici's global pool already reuses connections)
    const key = `${this.getCurrentCluster()?.server}|${this.getCurrentCluster()?.name}|${this.getCurrentUser()?.name}`;
    const pooled = this.#pools.get(key);
    if (!pooled) {
      this.#pools.set(key, fresh);
      return;
    }
    context.setDispatcher(pooled);
    void fresh.close().catch(() => {});
  }

  /** Closes every pooled connection: call once the process's clients are done (shutdown). */
  async closePools(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.allSettled(pools.map((p) => p.close()));
  }
}

/**
 * Options for one call of a generated API client that run `pre` on its request before it is sent: set its
 * abort signal, or add a query parameter the client has no argument for (a `shardSelector`, KEP-5866).
 */
export function beforeRequest(pre: (request: RequestContext) => void): ConfigurationOptions {
  const middleware: ObservableMiddleware = {
    pre: (request) => {
      pre(request);
      return new Observable(Promise.resolve(request));
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: "append" };
}

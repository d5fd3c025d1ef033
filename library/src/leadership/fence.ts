/**
 * A write fence: the one place that decides whether this process may write right now.
 *
 * With leader election, "losing the lease stops all writes at once" must hold for writes that are already
 * on their way: a reconcile that read the cache a moment ago is about to call the cloud. Aborting the
 * reconcile's signal cuts requests in flight; the fence refuses the ones not yet sent. Every writer the
 * reconcilers get (Kubernetes, cloud, events) is wrapped with {@link WriteFence.guard}, so no code path can
 * forget the check.
 */

/** Thrown by a guarded call while the fence is closed. Reconcilers see it as a transient error. */
export class FencedError extends Error {
  constructor(reason: string) {
    super(`cannot write: ${reason}`);
    this.name = "FencedError";
  }
}

/** See the module comment. Starts closed. */
export class WriteFence {
  #signal: AbortSignal | undefined;

  /**
   * Called when this process may start writing (it leads, or leader election is off). Writes are allowed
   * until `signal` aborts (leadership lost, shutdown) or `close()` is called.
   */
  open(signal: AbortSignal): void {
    this.#signal = signal;
  }

  /** Called when writing must stop. Idempotent. */
  close(): void {
    this.#signal = undefined;
  }

  /** True while writes are allowed. */
  get isOpen(): boolean {
    return this.#signal !== undefined && !this.#signal.aborted;
  }

  /** Throws {@link FencedError} unless writes are allowed. Cheap; called before every guarded call. */
  check(): void {
    if (this.#signal === undefined) throw new FencedError("this replica is not leading");
    if (this.#signal.aborted) throw new FencedError("leadership was lost or the controller is stopping");
  }

  /**
   * Returns a view of `target` whose every method first calls {@link check}. Methods run with `target` as
   * `this` (so private fields work); properties that are not functions pass through.
   */
  guard<T extends object>(target: T): T {
    return new Proxy(target, {
      get: (obj, property) => {
        const value: unknown = Reflect.get(obj, property, obj);
        if (typeof value !== "function") return value;
        return (...args: unknown[]): unknown => {
          this.check();
          return (value as (...a: unknown[]) => unknown).apply(obj, args);
        };
      },
    });
  }
}

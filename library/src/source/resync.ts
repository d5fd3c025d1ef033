import type { Logger } from "../observability/logger.ts";
import type { ReconcileResult } from "../queue/result.ts";

/**
 * Resyncs: enqueue every key, once at startup before steady state (`initialSync`), then every period with
 * jitter (`startPeriodicResync`) as the safety net for missed events. Event handlers do the steady-state work.
 *
 * The safety net asks that every key be looked at once in every period. A key an event brought to a `done`
 * reconcile since the last resync already was, so the periodic resync leaves it out: a resync that falls in
 * the middle of a mass apply would otherwise reconcile again every Shape converged a few seconds before, 0.7
 * extra reconciles per Shape in the benchmark's converge (docs/benchmarks.md). A missed event is then still caught within two periods.
 */

/** What a resync needs from a controller; `Controller` implements it. */
export interface ResyncTarget<K extends string> {
  /** Reconcile `key` soon (deduplicated). */
  enqueue(key: K): void;
  /** Calls `listener` after every finished reconcile; returns an unsubscribe function. */
  onReconciled(listener: (key: K, result: ReconcileResult) => void): () => void;
}

/**
 * What a periodic resync reads to leave out the keys events settled (`startPeriodicResync`'s `reconciled`):
 * the controller's finished reconciles, and whether a reconcile of a key waits to start. `Controller`
 * implements it.
 */
export interface ResyncSettled<K extends string> extends Pick<ResyncTarget<K>, "onReconciled"> {
  isWaiting(key: K): boolean;
}

/** Lists every key that should be reconciled (e.g. from an informer's cache). May be async. */
export type ListKeys<K extends string> = () => Iterable<K> | Promise<Iterable<K>>;

/**
 * Called once at startup, after the caches are synced: enqueues every key `listKeys` returns and resolves with
 * their count once EACH of them finished a reconcile — whatever the result: readiness means "every object was
 * looked at", and one broken object must not keep the process unready forever. A reconcile already running for
 * a listed key when it is enqueued counts too (it started after the list was asked for).
 *
 * The controller must be started (or be started later) for the promise to resolve; without a `signal` it waits
 * forever if it never is. Rejects with "cannot finish
 * the initial sync" when `signal` aborts first, and with `listKeys`' own error when it throws.
 */
export async function initialSync<K extends string>(
  target: ResyncTarget<K>,
  listKeys: ListKeys<K>,
  signal?: AbortSignal,
): Promise<number> {
  const stopped = () => new Error("cannot finish the initial sync: stopped before every key was reconciled");
  if (signal?.aborted) throw stopped();
  const keys = new Set(await listKeys());
  if (signal?.aborted) throw stopped();
  if (keys.size === 0) return 0;
  const pending = new Set(keys);
  const { promise, resolve, reject } = Promise.withResolvers<number>();
  const onAbort = () => reject(stopped());
  signal?.addEventListener("abort", onAbort, { once: true });
  const unsubscribe = target.onReconciled((key) => {
    if (pending.delete(key) && pending.size === 0) resolve(keys.size);
  });
  for (const key of keys) target.enqueue(key);
  try {
    return await promise;
  } finally {
    unsubscribe();
    signal?.removeEventListener("abort", onAbort);
  }
}

/** Options of {@link startPeriodicResync}. */
export interface PeriodicResyncOptions<K extends string> {
  /** Where the keys go (only `enqueue` is used). */
  target: Pick<ResyncTarget<K>, "enqueue">;
  /**
   * Where finished reconciles are seen (the same controller). Given, a key whose reconcile came out `done`
   * since the last resync, other than the one that resync enqueued, is left out of the next. A key already
   * waiting in the queue when the resync enqueues it is not enqueued BY the resync: the reconcile that follows
   * starts after the resync, so it settles the key for the next one (a converge longer than a period).
   * Absent: every key, every period.
   */
  reconciled?: ResyncSettled<K>;
  /** Lists every key to enqueue. */
  listKeys: ListKeys<K>;
  /** Base time between two resyncs, in ms. */
  periodMs: number;
  /**
   * Each wait is `periodMs × (1 + jitter × random)`, so replicas and restarts do not resync in lockstep.
   * Default 0.1 (up to 10% longer).
   */
  jitter?: number;
  /** Logs each resync and list failures. */
  logger: Logger;
  /** Returns a number in [0, 1); injectable for tests. Default `Math.random`. */
  random?: () => number;
}

/** A running periodic resync. */
export interface PeriodicResync {
  /** Stops for good: no more resyncs; a listing in progress is not enqueued. Idempotent. */
  stop(): void;
}

/**
 * Called once after the initial sync: every `periodMs × (1 + jitter × random)` ms, lists all keys and enqueues
 * them (with `reconciled`: but those an event brought to a `done` reconcile since the last resync). The next
 * wait starts when a listing ends, so slow listings never overlap. A failed listing is logged and retried at
 * the next period. Its timer never keeps the process alive.
 */
export function startPeriodicResync<K extends string>(options: PeriodicResyncOptions<K>): PeriodicResync {
  const { target, listKeys, periodMs, logger } = options;
  const jitter = options.jitter ?? 0.1;
  const random = options.random ?? Math.random;
  if (!(periodMs > 0)) throw new Error(`cannot resync every ${periodMs} ms: the period must be positive`);
  if (!(jitter >= 0)) throw new Error(`cannot use a resync jitter of ${jitter}: it must be 0 or more`);

  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  /** Keys this resync enqueued whose reconcile has not finished yet: that reconcile is the resync's own. */
  const enqueuedByUs = new Set<K>();
  /** Keys that finished a `done` reconcile since the last resync, not the one it enqueued: looked at already. */
  const settled = new Set<K>();
  const unsubscribe = options.reconciled?.onReconciled((key, result) => {
    if (enqueuedByUs.delete(key)) return;
    if (result.kind === "done") settled.add(key);
    else settled.delete(key);
  });

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => void resync(), periodMs * (1 + jitter * random()));
    timer.unref();
  };

  const resync = async () => {
    try {
      const keys = [...(await listKeys())];
      if (stopped) return;
      let skipped = 0;
      for (const key of keys) {
        if (settled.has(key)) {
          skipped++;
          continue;
        }
        if (unsubscribe && !options.reconciled?.isWaiting(key)) enqueuedByUs.add(key);
        target.enqueue(key);
      }
      settled.clear();
      logger.debug({ keys: keys.length - skipped, settledByEvents: skipped }, "periodic resync");
    } catch (error) {
      logger.warn({ err: error }, "periodic resync could not list keys; retrying next period");
    }
    schedule();
  };

  schedule();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      unsubscribe?.();
      enqueuedByUs.clear();
      settled.clear();
    },
  };
}

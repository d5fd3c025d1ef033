import PQueue from "p-queue";

/**
 * A work queue keyed by string, in the spirit of client-go's `workqueue` + item rate limiter, written small.
 *
 * What it promises:
 * - Dedup: a key added N times while it waits for a worker is processed once.
 * - One worker per key: a key added while it is being processed is marked dirty and processed again
 *   after the current run ends, never concurrently with it.
 * - N workers overall: a p-queue with `concurrency` N runs the process function. (p-queue gives us the
 *   pool, pause/resume and clear; the per-key rules above are the part it cannot know about, so they live here.)
 * - Per-key exponential backoff (`addRateLimited`), delayed adds (`addAfter`), `forget` to reset a key's backoff.
 *   The backoff counts failures but is also bounded by time: a key never waits more than twice as long as it
 *   has been failing, so however many events brought a key back during an outage (each run failing, each
 *   failure doubling the delay), it is retried within twice the outage's length after it ends.
 * - A server's Retry-After is a hold, not just a delay: until it has passed, every add of the key — an event,
 *   a resync, its own writes echoing back — waits for it too.
 * - `shutDown()` stops accepting work; `drain()` waits for in-flight work. Timers never keep the process alive.
 *
 * Unlike client-go, the queue pushes keys to a process function instead of workers pulling with Get/Done:
 * the "Done" step is the process function's promise settling.
 */

/** Options of a {@link WorkQueue}. Every field has a default. */
export interface WorkQueueOptions {
  /** How many keys are processed at the same time (the number of workers). Default 1. */
  concurrency?: number;
  /** Delay before the first retry of a failing key. Default {@link DEFAULT_BASE_DELAY_MS}. */
  baseDelayMs?: number;
  /** Longest delay between retries of a failing key. Default {@link DEFAULT_MAX_DELAY_MS}. */
  maxDelayMs?: number;
  /** Start handing keys to workers at once (default) or only after `resume()`. */
  autoStart?: boolean;
  /** A monotonic clock in milliseconds, for wait times and delayed adds. Default `performance.now`. */
  now?: () => number;
  /** Called whenever the number of keys waiting for a worker changes (the queue depth). */
  onDepth?: (depth: number) => void;
  /**
   * Called when a worker takes a key, with the milliseconds since the key was added (the queue wait). Adds folded
   * into a waiting key do not reset its clock: the wait counts from the first one, as in client-go.
   */
  onWait?: (waitMs: number) => void;
}

/**
 * Default first retry delay: 100 ms. client-go starts at 5 ms, which suits retries against a local API server;
 * our retries mostly go to a remote HTTP API, where a failure 5 ms ago almost always fails again.
 */
export const DEFAULT_BASE_DELAY_MS = 100;

/**
 * Default retry cap: 60 s (client-go's item limiter caps at 1000 s). After an outage every failed key is
 * retried within a minute, which bounds recovery time; a server that wants a longer pause says so with
 * Retry-After, which `addRateLimited` honours.
 */
export const DEFAULT_MAX_DELAY_MS = 60_000;

/**
 * Per-key exponential backoff: `base × 2^failures`, capped at `max`. No jitter: the worker pool already
 * bounds how many retries run at once, and deterministic delays are easier to read in logs and tests.
 */
export class ExponentialBackoff<K extends string = string> {
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #failures = new Map<K, number>();

  /** Throws when `baseMs` is not positive or `maxMs` is below `baseMs`. */
  constructor(baseMs = DEFAULT_BASE_DELAY_MS, maxMs = DEFAULT_MAX_DELAY_MS) {
    if (!(baseMs > 0)) throw new Error(`cannot use a backoff base of ${baseMs} ms: it must be positive`);
    if (!(maxMs >= baseMs)) throw new Error(`cannot use a backoff cap of ${maxMs} ms: it is below the base`);
    this.#baseMs = baseMs;
    this.#maxMs = maxMs;
  }

  /** Called on each failure of `key`: counts the failure and returns how long to wait before retrying. */
  next(key: K): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    return Math.min(this.#baseMs * 2 ** failures, this.#maxMs);
  }

  /** Called when `key` succeeded (or was given up on): its next failure starts again at the base delay. */
  forget(key: K): void {
    this.#failures.delete(key);
  }

  /** How many failures of `key` were counted since it was last forgotten. */
  failures(key: K): number {
    return this.#failures.get(key) ?? 0;
  }
}

/** A delayed add that has not fired yet. */
interface Delayed {
  readonly dueAt: number;
  readonly timer: NodeJS.Timeout;
}

/** See the module comment: a deduplicating, one-worker-per-key, rate-limited work queue. */
export class WorkQueue<K extends string = string> {
  readonly #process: (key: K) => Promise<void>;
  readonly #pool: PQueue;
  readonly #backoff: ExponentialBackoff<K>;
  readonly #baseDelayMs: number;
  readonly #now: () => number;
  readonly #onDepth: (depth: number) => void;
  readonly #onWait: (waitMs: number) => void;

  /** Keys that must be processed (again), with the time they were first added. */
  readonly #waiting = new Map<K, number>();
  /** Keys a worker is processing now, with a promise that settles when that run ends. */
  readonly #inFlight = new Map<K, Promise<void>>();
  /** Keys that will be added when their timer fires. */
  readonly #delayed = new Map<K, Delayed>();
  /** Failing keys, with the time of their first failure since they were last forgotten. */
  readonly #failingSince = new Map<K, number>();
  /** Keys a server asked us to leave alone (Retry-After), with the time until which every add is held. */
  readonly #notBefore = new Map<K, number>();
  /** Keys handed to the pool that no worker has taken yet. */
  #depth = 0;
  #shutDown = false;

  /**
   * `process` is called by a worker with one key at a time, never twice concurrently for the same key.
   * It should not throw; if it does, the queue retries the key with backoff (a bug must not lose a key).
   */
  constructor(process: (key: K) => Promise<void>, options: WorkQueueOptions = {}) {
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new Error(`cannot run ${concurrency} workers: it must be a positive integer`);
    }
    this.#process = process;
    this.#pool = new PQueue({ concurrency, autoStart: options.autoStart ?? true });
    this.#backoff = new ExponentialBackoff<K>(options.baseDelayMs, options.maxDelayMs);
    this.#baseDelayMs = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    this.#now = options.now ?? (() => performance.now());
    this.#onDepth = options.onDepth ?? (() => {});
    this.#onWait = options.onWait ?? (() => {});
  }

  /**
   * Called by event handlers and resyncs: process `key` as soon as a worker is free — or, while a Retry-After
   * of the key runs, once it has passed. A no-op after shutdown.
   */
  add(key: K): void {
    if (this.#shutDown || this.#waiting.has(key)) return; // already waiting: this add is folded into it
    const holdMs = this.#holdMs(key);
    if (holdMs > 0) return this.addAfter(key, holdMs); // the server asked for a pause: honour it
    this.#waiting.set(key, this.#now());
    if (this.#inFlight.has(key)) return; // being processed: it runs again when the current run ends
    this.#schedule(key);
  }

  /**
   * Called to look at `key` again later: adds it after `delayMs`. When the key already has a pending delayed add,
   * the earlier of the two wins (a later one never postpones an earlier one). An immediate `add` does not cancel it.
   */
  addAfter(key: K, delayMs: number): void {
    if (this.#shutDown) return;
    if (!(delayMs > 0)) return this.add(key);
    const dueAt = this.#now() + delayMs;
    const pending = this.#delayed.get(key);
    if (pending !== undefined) {
      if (pending.dueAt <= dueAt) return;
      clearTimeout(pending.timer);
    }
    const timer = setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.#delayed.set(key, { dueAt, timer });
  }

  /**
   * Called after `key` failed: adds it after its next backoff delay (at most twice as long as the key has been
   * failing), or after `retryAfterMs` when the server asked for a longer pause (HTTP Retry-After) — which also
   * holds every other add of the key until it has passed. Returns the delay chosen.
   */
  addRateLimited(key: K, retryAfterMs?: number): number {
    const now = this.#now();
    const failingSince = this.#failingSince.get(key) ?? now;
    this.#failingSince.set(key, failingSince);
    const backoffMs = Math.min(
      this.#backoff.next(key),
      Math.max(this.#baseDelayMs, 2 * (now - failingSince)),
    );
    const delayMs = Math.max(backoffMs, retryAfterMs ?? 0);
    if (retryAfterMs !== undefined && retryAfterMs > 0) this.#notBefore.set(key, now + retryAfterMs);
    this.addAfter(key, delayMs);
    return delayMs;
  }

  /**
   * Called after `key` succeeded or was given up on: resets its backoff and lifts its Retry-After hold. Does
   * not remove it from the queue.
   */
  forget(key: K): void {
    this.#backoff.forget(key);
    this.#failingSince.delete(key);
    this.#notBefore.delete(key);
  }

  /** How many times `key` failed since it was last forgotten. */
  failures(key: K): number {
    return this.#backoff.failures(key);
  }

  /** Called when workers must stop taking keys (e.g. leadership lost). Waiting keys stay queued; in-flight runs go on. */
  pause(): void {
    this.#pool.pause();
  }

  /** Called to (re)start handing keys to workers. A no-op after shutdown. */
  resume(): void {
    if (!this.#shutDown) this.#pool.start();
  }

  /**
   * Called once, at process shutdown: refuses every later add, drops waiting and delayed keys and clears
   * their timers. In-flight runs go on; await `drain()` to wait for them.
   */
  shutDown(): void {
    this.#shutDown = true;
    for (const { timer } of this.#delayed.values()) clearTimeout(timer);
    this.#delayed.clear();
    this.#notBefore.clear();
    this.#failingSince.clear();
    this.#pool.clear();
    this.#waiting.clear();
    this.#setDepth(0);
  }

  /**
   * Resolves when no key is being processed. Call it after `pause()` or `shutDown()`; on a running queue it
   * resolves at the first moment nothing is in flight.
   */
  async drain(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight.values());
  }

  /** Keys waiting for a worker (not counting delayed keys, nor in-flight keys marked to run again). */
  get depth(): number {
    return this.#depth;
  }

  /** Whether a run of `key` waits to start: queued, or queued again behind the one running (not a delayed add). */
  isWaiting(key: K): boolean {
    return this.#waiting.has(key);
  }

  /** Keys being processed now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Keys waiting for a delayed add to fire. */
  get delayed(): number {
    return this.#delayed.size;
  }

  /** True once `shutDown()` was called. */
  get isShutDown(): boolean {
    return this.#shutDown;
  }

  #schedule(key: K): void {
    this.#setDepth(this.#depth + 1);
    // The task never rejects (see #run); `clear()` at shutdown rejects the promise of a dropped task, which we ignore.
    this.#pool.add(() => this.#run(key)).catch(() => {});
  }

  async #run(key: K): Promise<void> {
    const addedAt = this.#waiting.get(key);
    if (addedAt === undefined) return; // dropped by shutDown()
    this.#setDepth(this.#depth - 1);
    this.#waiting.delete(key);
    this.#onWait(this.#now() - addedAt);

    const run = Promise.withResolvers<void>();
    this.#inFlight.set(key, run.promise);
    try {
      await this.#process(key);
    } catch {
      this.addRateLimited(key);
    } finally {
      this.#inFlight.delete(key);
      run.resolve();
    }
    if (!this.#waiting.has(key)) return;
    // Added while it ran: run it again — after the hold, if the run ended with a Retry-After.
    const holdMs = this.#holdMs(key);
    if (holdMs <= 0) return this.#schedule(key);
    this.#waiting.delete(key);
    this.addAfter(key, holdMs);
  }

  /** How long adds of `key` must still wait for its Retry-After (0: no hold). */
  #holdMs(key: K): number {
    const notBefore = this.#notBefore.get(key);
    if (notBefore === undefined) return 0;
    const holdMs = notBefore - this.#now();
    if (holdMs <= 0) this.#notBefore.delete(key);
    return holdMs;
  }

  #setDepth(depth: number): void {
    if (depth === this.#depth) return;
    this.#depth = depth;
    this.#onDepth(depth);
  }
}

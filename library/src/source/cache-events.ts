/**
 * What the two informers (Kubernetes and external) share: handler registration and delivery, and the
 * "has synced" latch.
 */
import type { Logger } from "../observability/logger.ts";

/**
 * The handlers an informer calls, synchronously, in the order the cache changed. Every object is frozen.
 * - `add`: an object appeared in the cache.
 * - `update`: a cached object changed; `oldObj` is what the cache held before, `newObj` what it holds now.
 * - `delete`: an object left the cache; `obj` is its last known state.
 */
export interface CacheHandlers<T> {
  /** An object entered the cache: `obj` as it is now. */
  add: (obj: T) => void;
  /** A cached object changed: what the cache held before, and what it holds now. */
  update: (oldObj: T, newObj: T) => void;
  /** An object left the cache: its last known state. */
  delete: (obj: T) => void;
}

/** The name of a cache event: `add`, `update` or `delete`. */
export type CacheEvent = keyof CacheHandlers<unknown>;

/** Anything handlers are registered on: both informers and their `CacheEvents`. */
export interface CacheEventSource<T> {
  on<E extends CacheEvent>(event: E, handler: CacheHandlers<T>[E]): void;
}

/**
 * Registers `handler` for the three events of `source`, each with the object as it is NOW: the added
 * object, the NEW object of an update, the last state of a deleted one. Why not one function registered for
 * all three: `update` calls its handler with (old, new), and a one-argument function registered for it gets
 * the OLD object, silently (TypeScript accepts a handler with fewer parameters). That was a bug here: the
 * external handler offered the echo filter an update's old revision, so our own update's echo was never
 * recognised, and the person's edit that came next could be dropped as our echo (docs/reliability.md).
 */
export function onEveryEvent<T>(
  source: CacheEventSource<T>,
  handler: (event: CacheEvent, obj: T) => void,
): void {
  source.on("add", (obj) => handler("add", obj));
  source.on("update", (_old, obj) => handler("update", obj));
  source.on("delete", (obj) => handler("delete", obj));
}

/**
 * The handler lists of one informer. A handler that throws is logged and skipped: it can neither stop
 * delivery to the other handlers nor break the informer (a bug in one handler must not blind the cache).
 */
export class CacheEvents<T> {
  readonly #logger: Logger;
  readonly #add: CacheHandlers<T>["add"][] = [];
  readonly #update: CacheHandlers<T>["update"][] = [];
  readonly #delete: CacheHandlers<T>["delete"][] = [];

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Called before `start()`, usually: adds a handler. Handlers added later miss the events already delivered. */
  on<E extends CacheEvent>(event: E, handler: CacheHandlers<T>[E]): void {
    const lists: { [K in CacheEvent]: CacheHandlers<T>[K][] } = {
      add: this.#add,
      update: this.#update,
      delete: this.#delete,
    };
    lists[event].push(handler);
  }

  /** Called by the informer after it stored a new object. */
  emitAdd(obj: T): void {
    for (const handler of this.#add) this.#call("add", () => handler(obj));
  }

  /** Called by the informer after it replaced `oldObj` with `newObj`. */
  emitUpdate(oldObj: T, newObj: T): void {
    for (const handler of this.#update) this.#call("update", () => handler(oldObj, newObj));
  }

  /** Called by the informer after it removed `obj`. */
  emitDelete(obj: T): void {
    for (const handler of this.#delete) this.#call("delete", () => handler(obj));
  }

  #call(event: CacheEvent, run: () => void): void {
    try {
      run();
    } catch (error) {
      this.#logger.error({ err: error, event }, "an informer event handler threw; the informer goes on");
    }
  }
}

/**
 * Flips once from "not synced" to "synced" (after the first complete list) and never back: a later restart
 * keeps serving the last known state, as client-go's `HasSynced` does.
 */
export class SyncLatch {
  #synced = false;
  #closed = false;
  readonly #waiters = new Set<(synced: boolean) => void>();

  /** True once the first complete list is in the cache. */
  hasSynced(): boolean {
    return this.#synced;
  }

  /** Called by the informer when its first complete list is in the cache. Idempotent. */
  markSynced(): void {
    if (this.#synced) return;
    this.#synced = true;
    this.#settle(true);
  }

  /** Called when the informer stops: pending and later waits resolve with the current state. */
  close(): void {
    this.#closed = true;
    this.#settle(this.#synced);
  }

  /**
   * Resolves `true` once synced (at once if already), or `false` when `signal` aborts or the informer stops
   * first. Never rejects.
   */
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    if (this.#synced || this.#closed || signal?.aborted === true) return Promise.resolve(this.#synced);
    return new Promise((resolve) => {
      const onAbort = () => done(false);
      const done = (synced: boolean) => {
        this.#waiters.delete(done);
        signal?.removeEventListener("abort", onAbort);
        resolve(synced);
      };
      this.#waiters.add(done);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #settle(synced: boolean): void {
    for (const waiter of [...this.#waiters]) waiter(synced);
  }
}

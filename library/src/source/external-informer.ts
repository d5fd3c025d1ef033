/**
 * A list-watch cache of an EXTERNAL API (a cloud, DNS), the same idea as a Kubernetes informer: observe the whole
 * collection with one paginated list, then follow its change feed, instead of polling object by object.
 *
 * The loop:
 * 1. List every page. The listing's revision is the FIRST page's: later pages may already show newer states,
 *    but watching from the first page's revision replays every change made while we paged, so nothing is
 *    missed (some changes arrive twice; applying them is idempotent).
 * 2. Replace the cache with the listing, emitting the difference with what it held (delete / add / update;
 *    nothing for unchanged objects).
 * 3. Watch from that revision, applying each event. When the stream fails: jittered backoff, then resume
 *    from the last revision seen (a stream that delivered events and ended cleanly resumes at once). When the
 *    API says the revision is too old (Gone): back to 1 (after a backoff if not one event came since the
 *    listing, so a history shorter than a listing cannot turn into a list-Gone-list loop).
 * 4. Every `relistPeriodMs` (jittered), abort the watch and go back to 1 anyway: the safety net for an event
 *    the feed lost.
 * 5. A stream that brings no event and no sign of life (`onProgress`: a heartbeat or a bookmark) for
 *    `watchIdleMs` is taken for dead: a connection can die without ending (a peer gone, a proxy's dropped
 *    state), and it would otherwise stall the cache until the next relist. The informer aborts it, logs
 *    `watch idle; reconnecting`, tells `onWatchRestart` (reason `idle`) and resumes from the last revision
 *    seen, after the watch's backoff, as after any failure (a Gone answer relists, as in 3).
 *
 * An optional `filter` keeps only the objects we care about (e.g. "owned by us"); an object that stops matching
 * leaves the cache and is reported as deleted. Cached objects are deep-frozen (see `freeze.ts`).
 *
 * Renames: the cache is keyed by `key` (a name), yet an API may let anyone rename an object. With `idOf` (the
 * object's own id, which a rename keeps), an event or a listing that shows an id under a new key drops the
 * old key at once, reported as a deletion of the old key and an addition of the new one, so no reader finds
 * an object under a name it no longer holds. With `indexOf`, `indexed(value)` finds the cached objects by a
 * second value (e.g. the uid mark) without a scan.
 *
 * Sharded (leadership/sharded.ts): with a `shard`, the cache also keeps only the objects the shard admits (the
 * external API cannot filter by our hash, so this is always done on our side), and `reshard()` applies a new
 * range: see there.
 *
 * Our own writes (`wrote`, `deleted`): the cache learns of a write this process made only when the change
 * feed brings it (milliseconds) or, without a feed, at the next listing (up to a relist period). Meanwhile a
 * reconcile that reads the cache sees the object as it was before our write, and would make the write again:
 * create what it just created (a 409, then a read by name), patch what it just patched (a 412). So `get` and
 * `list` show the answer of our own write until the cache holds that revision or a newer one (or a listing
 * or an event at least that new says otherwise), and hide what we deleted until the cache drops it. Nothing
 * is emitted for these notes: the events stay the external API's own. Needs `revisionOf`.
 */
import { isDeepStrictEqual } from "node:util";
import { CacheEvents, SyncLatch, type CacheEvent, type CacheHandlers } from "./cache-events.ts";
import { jitter, sleep } from "../support/clock.ts";
import { deepFreeze, StringPool } from "./freeze.ts";
import type { Logger } from "../observability/logger.ts";
import { ExponentialBackoff } from "../queue/queue.ts";

/** A position in the external API's change history. */
export type Revision = string | number;

/** One page of a listing. */
export interface ListPage<T> {
  /** The objects of this page. */
  items: T[];
  /** Absent (or empty) on the last page. */
  nextPageToken?: string;
  /** The revision this page is consistent with. Only the first page's is used. */
  revision: Revision;
}

/**
 * One change from the change feed. `DELETED` also says that an object left the watched set (it lost the mark
 * a filter keeps): `object` is then its last state or its state now (only its key and id are read).
 */
export interface ExternalWatchEvent<T> {
  /** What happened to the object. */
  type: "ADDED" | "MODIFIED" | "DELETED";
  /** The object after the change (before it, or as it is now, for `DELETED`). */
  object: T;
  /**
   * The revision of this change; a watch resumed from it starts after this change. For `DELETED`, that of
   * the delete or of the write that took the object out of the watched set: with `revisionOf`, an event
   * not newer than the cached version is dropped as stale, so a `DELETED` at the object's own last
   * revision would leave it cached until the next relist.
   */
  revision: Revision;
}

/** The two calls a list-watch cache needs from an external API. */
export interface ListWatchClient<T> {
  /**
   * Called for each page of a listing: first with `pageToken` undefined, then with each `nextPageToken` until
   * a page has none. Rejects on any failure (the whole listing is then retried from the first page).
   * The informer takes ownership of the returned items: it freezes them in place.
   */
  list(pageToken: string | undefined, signal: AbortSignal): Promise<ListPage<T>>;
  /**
   * Called to follow the changes made after `since` (exclusive), calling `onEvent` synchronously for each, in
   * order. Resolves when the stream ends cleanly or `signal` aborts; rejects on failure, with an error that
   * `isGone` recognises (default: {@link GoneError}) when `since` is older than the retained history.
   *
   * `onProgress` is for a stream that shows it is alive without a change: call it for each heartbeat (no
   * argument) and each bookmark (with its revision: every change up to it that this watch would see was
   * delivered, so a resumed watch starts after it). A stream with neither an event nor a call of it for the
   * informer's `watchIdleMs` is aborted as dead and resumed: a client whose feed is quiet for longer without
   * saying so is reconnected once per bound (cheap, but logged), so report every heartbeat the API sends.
   */
  watch(
    since: Revision,
    onEvent: (event: ExternalWatchEvent<T>) => void,
    signal: AbortSignal,
    onProgress?: (bookmark?: Revision) => void,
  ): Promise<void>;
}

/** Thrown by a {@link ListWatchClient}'s watch when `since` is too old to resume from: relist. */
export class GoneError extends Error {
  constructor(message = "cannot resume the watch: its revision is older than the retained history") {
    super(message);
    this.name = "GoneError";
  }
}

/** The default of {@link ExternalInformerOptions.watchIdleMs}: 90 s, as the Kubernetes watch's idle bound. */
export const DEFAULT_WATCH_IDLE_MS = 90_000;

/** Why a listing was applied to the cache. */
export type RelistReason = "initial" | "gone" | "periodic" | "reshard";

/** Callbacks for metrics and tests; each is cheap and must not throw. */
export interface ExternalInformerHooks {
  /** Called after each page fetched (failed listings included). */
  onListPage?(name: string): void;
  /** Called after each complete listing was applied to the cache. */
  onRelist?(name: string, reason: RelistReason): void;
  /**
   * Called when a watch stream ended, failed or went idle (reason `idle`: see `watchIdleMs`) and is about to
   * resume; not for Gone or a periodic relist.
   */
  onWatchRestart?(name: string, reason: string): void;
}

/** Options of an {@link ExternalInformer}. */
export interface ExternalInformerOptions<T> {
  /** Names the informer in logs and hooks, e.g. "external-shapes". */
  name: string;
  /** The external API's list and watch. */
  client: ListWatchClient<T>;
  /** The cache key of an object (e.g. its name); stable for the object's life. */
  key: (obj: T) => string;
  /** Keep only the objects this returns true for. Default: keep all. */
  filter?: (obj: T) => boolean;
  /**
   * The object's own id, unchanged by a rename: an object seen under a new key leaves its old key at once
   * (a delete of the old key, then an add). Without it, a renamed object stays under its old key too until
   * the next listing.
   */
  idOf?: (obj: T) => string;
  /** A second value to find cached objects by (`indexed`), e.g. a mark; undefined: not indexed. */
  indexOf?: (obj: T) => string | undefined;
  /** Keep only one shard's objects: read again at each `reshard()`. */
  shard?: { admits(obj: T): boolean };
  /**
   * For APIs whose objects carry a monotonic numeric revision: an event not newer than the cached object is
   * ignored, so replaying the changes made during a paginated listing never rolls an object back, even briefly.
   */
  revisionOf?: (obj: T) => number;
  /** Recognises the watch's "too old" error. Default: `error instanceof GoneError`. */
  isGone?: (error: unknown) => boolean;
  /** Two versions of an object that this says are the same produce no update. Default: deep equality. */
  isSame?: (a: T, b: T) => boolean;
  /** Time between full relists. Default 5 min. */
  relistPeriodMs?: number;
  /**
   * The longest a watch stream may bring neither an event nor a heartbeat or bookmark (`onProgress`) before
   * it is taken for dead: aborted, then resumed from the last revision seen (see the module comment, 5).
   * Guarantee: a stream silent for this long is dropped within it (timer precision aside); keep it a few
   * times the API's heartbeat interval. Default {@link DEFAULT_WATCH_IDLE_MS}.
   */
  watchIdleMs?: number;
  /** Each period is made up to this much longer at random. Default 0.1. */
  relistJitter?: number;
  /** Backoff of failed listings and watches. Defaults: 500 ms doubling to 30 s, jitter 1 (up to twice as long). */
  backoff?: { initialDelayMs?: number; maxDelayMs?: number; jitter?: number };
  /** Where the informer logs its relists and the failures it retries. */
  logger: Logger;
  /** Told as the informer lists, relists and fails (metrics). Default none. */
  hooks?: ExternalInformerHooks;
}

type Phase = "list" | "watch";

/**
 * What this process wrote to one key, until the cache shows it: the answer of a create or update (shown
 * instead of anything older), or a delete of the version at `revision` (that version, and older, hidden).
 */
type OwnWrite<T> = { kind: "written"; object: T; revision: number } | { kind: "deleted"; revision: number };

/** See the module comment: a self-healing list-watch cache of an external collection. */
export class ExternalInformer<T> {
  /** The informer's name, as given. */
  readonly name: string;

  readonly #client: ListWatchClient<T>;
  readonly #key: (obj: T) => string;
  readonly #filter: (obj: T) => boolean;
  readonly #idOf: ((obj: T) => string) | undefined;
  readonly #indexOf: ((obj: T) => string | undefined) | undefined;
  readonly #revisionOf: ((obj: T) => number) | undefined;
  readonly #isGone: (error: unknown) => boolean;
  readonly #isSame: (a: T, b: T) => boolean;
  readonly #relistPeriodMs: number;
  readonly #relistJitter: number;
  readonly #watchIdleMs: number;
  readonly #backoff: ExponentialBackoff<Phase>;
  readonly #backoffJitter: number;
  readonly #logger: Logger;
  readonly #hooks: ExternalInformerHooks;

  readonly #events: CacheEvents<T>;
  readonly #sync = new SyncLatch();
  readonly #objects = new Map<string, T>();
  /** With `idOf`: the key each cached object's id is under. */
  readonly #keysById = new Map<string, string>();
  /** With `indexOf`: the keys of the cached objects by their index value. */
  readonly #keysByIndex = new Map<string, string[]>();
  /** The strings the cached objects share (freeze.ts). */
  readonly #strings = new StringPool();
  /** Our own writes the cache does not show yet, by key (see the module comment). */
  readonly #own = new Map<string, OwnWrite<T>>();
  readonly #stopped = new AbortController();
  #running: Promise<void> | undefined;
  readonly #shard: { admits(obj: T): boolean } | undefined;
  /** Set by `reshard()` until a listing is applied: the watch loop relists at its next step. */
  #relistWanted = false;
  /** Aborted by `reshard()`: wakes the watch loop from its stream or its backoff. */
  #wake: AbortController | undefined;
  /**
   * Set by `reshard()`: marked once a listing is applied after it. (A listing already in flight will do: a
   * listing is always complete, and the shard filter is applied when it replaces the cache.)
   */
  #resharded: SyncLatch | undefined;

  /** Checks the options; nothing runs until `start()`. */
  constructor(options: ExternalInformerOptions<T>) {
    this.name = options.name;
    this.#client = options.client;
    this.#key = options.key;
    const filter = options.filter ?? (() => true);
    const shard = options.shard;
    this.#shard = shard;
    this.#filter = shard ? (obj) => filter(obj) && shard.admits(obj) : filter;
    this.#idOf = options.idOf;
    this.#indexOf = options.indexOf;
    this.#revisionOf = options.revisionOf;
    this.#isGone = options.isGone ?? ((error) => error instanceof GoneError);
    this.#isSame = options.isSame ?? isDeepStrictEqual;
    this.#relistPeriodMs = options.relistPeriodMs ?? 5 * 60_000;
    this.#relistJitter = options.relistJitter ?? 0.1;
    if (!(this.#relistPeriodMs > 0)) throw new Error(`cannot relist every ${this.#relistPeriodMs} ms`);
    this.#watchIdleMs = options.watchIdleMs ?? DEFAULT_WATCH_IDLE_MS;
    if (!(this.#watchIdleMs > 0)) throw new Error(`cannot take a watch idle for ${this.#watchIdleMs} ms`);
    const backoff = options.backoff ?? {};
    const initialDelayMs = backoff.initialDelayMs ?? 500;
    this.#backoff = new ExponentialBackoff(
      initialDelayMs,
      backoff.maxDelayMs ?? Math.max(30_000, initialDelayMs),
    );
    this.#backoffJitter = backoff.jitter ?? 1;
    this.#logger = options.logger.child({ informer: options.name });
    this.#hooks = options.hooks ?? {};
    this.#events = new CacheEvents(this.#logger);
  }

  /** Called before `start()`: adds a handler. Handlers get frozen objects; see `CacheHandlers`. */
  on<E extends CacheEvent>(event: E, handler: CacheHandlers<T>[E]): void {
    this.#events.on(event, handler);
  }

  /**
   * The cached object with this key, frozen, or undefined. Never calls the API. Our own write to it, while
   * the cache trails it, wins (see `wrote`, `deleted`).
   */
  get(key: string): T | undefined {
    const cached = this.#objects.get(key);
    const own = this.#own.get(key);
    if (own === undefined) return cached;
    const at = cached === undefined ? undefined : this.#revisionOf?.(cached);
    if (own.kind === "written") return at !== undefined && at >= own.revision ? cached : own.object;
    return at !== undefined && at > own.revision ? cached : undefined;
  }

  /**
   * The cached objects whose `indexOf` value is `value`, frozen, as `get` shows them (an object our own delete
   * hides is not among them). Empty without `indexOf`. Never calls the API.
   */
  indexed(value: string): T[] {
    const keys = this.#keysByIndex.get(value);
    if (keys === undefined) return [];
    const found: T[] = [];
    for (const key of keys) {
      const obj = this.get(key);
      if (obj !== undefined) found.push(obj);
    }
    return found;
  }

  /** Every cached object, frozen, as `get` shows it. Never calls the API. */
  list(): T[] {
    if (this.#own.size === 0) return [...this.#objects.values()];
    const shown: T[] = [];
    for (const [key, obj] of this.#objects) if (!this.#own.has(key)) shown.push(obj);
    for (const key of this.#own.keys()) {
      const obj = this.get(key);
      if (obj !== undefined) shown.push(obj);
    }
    return shown;
  }

  /**
   * Called with the answer of our own create or update: `get` and `list` show it until the cache holds its
   * revision or a newer one, or a listing or event at least that new says what became of it. Without the
   * change feed the cache trails our write until the next listing; a resync meanwhile would otherwise see the
   * object as it was and write again. An answer the filter drops is noted as a delete. Needs `revisionOf`.
   */
  wrote(answer: T): void {
    if (this.#revisionOf === undefined) return;
    if (!this.#filter(answer)) return this.#note(this.#key(answer), "deleted", answer);
    this.#note(this.#key(answer), "written", deepFreeze(structuredClone(answer)));
  }

  /**
   * Called after our own delete (or release) of `observed`: `get` and `list` hide it, and any older version,
   * until the cache no longer holds it at that revision. Needs `revisionOf`.
   */
  deleted(observed: T): void {
    if (this.#revisionOf === undefined) return;
    this.#note(this.#key(observed), "deleted", observed);
  }

  #note(key: string, kind: OwnWrite<T>["kind"], obj: T): void {
    const revision = (this.#revisionOf as (obj: T) => number)(obj);
    const earlier = this.#own.get(key);
    if (earlier !== undefined && earlier.revision > revision) return; // a later write of ours is noted
    this.#own.set(key, kind === "written" ? { kind, object: obj, revision } : { kind, revision });
    this.#catchUp(key);
  }

  /**
   * Forgets our write to `key` once the cache shows it (or newer), or once `authoritativeAt` — the revision of
   * a listing or event that speaks for `key` — is at least as new as what we wrote.
   */
  #catchUp(key: string, authoritativeAt?: number): void {
    const own = this.#own.get(key);
    if (own === undefined || this.#revisionOf === undefined) return;
    const cached = this.#objects.get(key);
    const at = cached === undefined ? undefined : this.#revisionOf(cached);
    const caughtUp =
      own.kind === "written"
        ? (at !== undefined && at >= own.revision) ||
          (authoritativeAt !== undefined && authoritativeAt >= own.revision)
        : at === undefined || at > own.revision;
    if (caughtUp) this.#own.delete(key);
  }

  /** True once the first complete listing is in the cache; stays true across relists and failures. */
  hasSynced(): boolean {
    return this.#sync.hasSynced();
  }

  /** Resolves `true` once synced, `false` if `signal` aborts or the informer stops first. Never rejects. */
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    return this.#sync.waitForSync(signal);
  }

  /** Called once: starts the list-watch loop in the background. Use `waitForSync` to wait for the cache. */
  start(): void {
    if (this.#running !== undefined || this.#stopped.signal.aborted) {
      throw new Error(`cannot start informer ${this.name}: it was already started`);
    }
    this.#running = this.#run().catch((error: unknown) => {
      this.#logger.error({ err: error }, "external informer loop crashed");
    });
  }

  /**
   * Called after the shard's range changed (leadership/sharded.ts): drops every cached object the shard no longer
   * admits, WITHOUT events (they were not deleted: another replica owns them now), then relists. Objects new to
   * the cache arrive as adds, objects deleted meanwhile as deletes. Resolves `true` once a listing applied
   * after the call is in the cache (starting the informer first if it was not), `false` if `signal` aborts or
   * the informer stops first.
   */
  async reshard(signal?: AbortSignal): Promise<boolean> {
    const shard = this.#shard;
    if (shard === undefined) throw new Error(`cannot reshard informer ${this.name}: it has no shard`);
    if (this.#stopped.signal.aborted) return false;
    for (const [key, obj] of [...this.#objects]) {
      if (!shard.admits(obj)) this.#drop(key);
    }
    for (const [key, own] of [...this.#own]) {
      if (own.kind === "written" && !shard.admits(own.object)) this.#own.delete(key);
    }
    const latch = new SyncLatch();
    this.#resharded = latch;
    this.#relistWanted = true;
    if (this.#running === undefined) this.start();
    else this.#wake?.abort();
    return latch.waitForSync(signal);
  }

  /**
   * Called at shutdown: aborts the listing or watch in flight and resolves when the loop has ended. No handler
   * runs after it resolves; pending `waitForSync` calls resolve. The cache stays readable. Idempotent.
   */
  async stop(): Promise<void> {
    this.#stopped.abort();
    this.#sync.close();
    this.#resharded?.close();
    await this.#running;
  }

  async #run(): Promise<void> {
    let reason: RelistReason = "initial";
    while (!this.#stopped.signal.aborted) {
      const revision = await this.#relist(reason);
      if (revision === undefined) return;
      reason = await this.#watchUntilRelist(revision);
    }
  }

  /** Lists until a complete listing is applied; returns its revision, or undefined when stopped. */
  async #relist(reason: RelistReason): Promise<Revision | undefined> {
    const signal = this.#stopped.signal;
    while (!signal.aborted) {
      try {
        const { items, revision } = await this.#listAllPages(signal);
        if (signal.aborted) return undefined;
        this.#replace(items, revision);
        this.#backoff.forget("list");
        this.#sync.markSynced();
        this.#relistWanted = false;
        this.#resharded?.markSynced();
        this.#logger.debug({ reason, objects: this.#objects.size, revision }, "listed");
        this.#hooks.onRelist?.(this.name, reason);
        return revision;
      } catch (error) {
        if (signal.aborted) return undefined;
        const delayMs = this.#nextDelay("list");
        this.#logger.warn({ err: error, delayMs }, "cannot list; retrying after backoff");
        await sleep(delayMs, signal);
      }
    }
    return undefined;
  }

  async #listAllPages(signal: AbortSignal): Promise<{ items: T[]; revision: Revision }> {
    const first = await this.#fetchPage(undefined, signal);
    const items = [...first.items];
    let token = first.nextPageToken;
    while (token) {
      const page = await this.#fetchPage(token, signal);
      items.push(...page.items);
      token = page.nextPageToken;
    }
    return { items, revision: first.revision };
  }

  async #fetchPage(token: string | undefined, signal: AbortSignal): Promise<ListPage<T>> {
    const page = await this.#client.list(token, signal);
    this.#hooks.onListPage?.(this.name);
    return page;
  }

  /**
   * Watches from `from`, resuming after failures, until the revision is Gone, a periodic relist is due, or the
   * informer stops. Returns why it ended.
   */
  async #watchUntilRelist(from: Revision): Promise<RelistReason> {
    const stopped = this.#stopped.signal;
    const relistAt = Date.now() + jitter(this.#relistPeriodMs, this.#relistJitter);
    // A reshard wakes the loop from a stream or a backoff, and it relists.
    const wake = new AbortController();
    this.#wake = wake;
    const stoppedOrWoken = AbortSignal.any([stopped, wake.signal]);
    let since = from;
    let progressed = 0; // events since the listing
    while (!stopped.aborted) {
      if (this.#relistWanted) return "reshard";
      const stream = new AbortController();
      const onStop = () => stream.abort();
      stoppedOrWoken.addEventListener("abort", onStop, { once: true });
      let relistDue = false;
      const timer = setTimeout(() => {
        relistDue = true;
        stream.abort();
      }, relistAt - Date.now());
      timer.unref();
      const idle = new IdleBound(this.#watchIdleMs, () => stream.abort());
      let delivered = 0;
      let failure: unknown;
      try {
        await this.#client.watch(
          since,
          (event) => {
            if (stream.signal.aborted) return; // a late event of a stream we already gave up on
            idle.alive();
            delivered++;
            progressed++;
            since = event.revision;
            this.#apply(event);
          },
          stream.signal,
          (bookmark) => {
            if (stream.signal.aborted) return;
            idle.alive();
            if (bookmark !== undefined) since = bookmark;
          },
        );
      } catch (error) {
        failure = error ?? new Error("cannot watch: the stream failed without an error");
      } finally {
        idle.stop();
        clearTimeout(timer);
        stoppedOrWoken.removeEventListener("abort", onStop);
        stream.abort();
      }
      if (stopped.aborted) break;
      if (this.#relistWanted) return "reshard";
      if (relistDue) return "periodic";
      if (failure !== undefined && this.#isGone(failure)) {
        this.#logger.info({ since }, "watch revision is gone; relisting");
        // Gone before a single event (the history is shorter than a listing takes): relisting at once
        // would loop list → Gone → list as fast as the API answers. Back off first.
        if (progressed === 0) await sleep(this.#nextDelay("watch"), stoppedOrWoken);
        return "gone";
      }
      if (delivered > 0) this.#backoff.forget("watch");
      if (idle.fired) {
        this.#hooks.onWatchRestart?.(this.name, "idle");
        const delayMs = this.#nextDelay("watch");
        this.#logger.warn(
          { idleMs: this.#watchIdleMs, since, delayMs },
          "watch idle: no event or heartbeat within the bound; reconnecting",
        );
        await sleep(delayMs, stoppedOrWoken);
        continue;
      }
      const reason = failure === undefined ? "stream ended" : describe(failure);
      this.#hooks.onWatchRestart?.(this.name, reason);
      // A stream that made progress and ended cleanly resumes at once; anything else backs off first.
      if (failure === undefined && delivered > 0) continue;
      const delayMs = this.#nextDelay("watch");
      this.#logger.warn({ reason, since, delayMs }, "watch stopped; resuming after backoff");
      await sleep(delayMs, stoppedOrWoken);
    }
    return "periodic"; // stopped: the caller's loop ends before using it
  }

  #nextDelay(phase: Phase): number {
    return Math.round(jitter(this.#backoff.next(phase), this.#backoffJitter));
  }

  /**
   * Makes the cache equal to `items` (after the filter): deletes first, then adds and updates. The listing,
   * at `revision`, speaks for every write of ours not newer than it.
   */
  #replace(items: T[], revision: Revision): void {
    const listed = new Map<string, T>();
    for (const obj of items) {
      if (this.#filter(obj)) listed.set(this.#key(obj), obj);
    }
    for (const key of [...this.#objects.keys()]) {
      if (!listed.has(key)) this.#remove(key);
    }
    for (const obj of listed.values()) this.#store(obj);
    for (const key of [...this.#own.keys()]) this.#catchUp(key, Number(revision));
  }

  #apply(event: ExternalWatchEvent<T>): void {
    const key = this.#key(event.object);
    // With `idOf`, the object may be cached under the key it had before a rename.
    const cachedAt = this.#cachedKeyOf(event.object) ?? key;
    if (this.#isStale(cachedAt, event.revision)) return;
    // The object is where its id is cached; another key (the event's name, when we missed a rename) can only
    // hold another object, which this deletion is not about.
    if (event.type === "DELETED" || !this.#filter(event.object)) this.#remove(cachedAt);
    else this.#store(event.object);
    this.#catchUp(key, Number(event.revision));
    if (cachedAt !== key) this.#catchUp(cachedAt, Number(event.revision));
  }

  /** With `idOf`: the key the cache holds `obj`'s id under, if any. */
  #cachedKeyOf(obj: T): string | undefined {
    return this.#idOf === undefined ? undefined : this.#keysById.get(this.#idOf(obj));
  }

  /** With `revisionOf`: is this event about a version older than, or the same as, the cached one? */
  #isStale(key: string, revision: Revision): boolean {
    const cached = this.#objects.get(key);
    if (this.#revisionOf === undefined || cached === undefined) return false;
    return Number(revision) <= this.#revisionOf(cached);
  }

  #store(raw: T): void {
    const obj = deepFreeze(raw, this.#strings);
    const key = this.#key(obj);
    // Renamed: the old key goes first, reported as a deletion (nothing holds that name any more).
    const before = this.#cachedKeyOf(obj);
    if (before !== undefined && before !== key) this.#remove(before);
    const old = this.#objects.get(key);
    if (old !== undefined && this.#isSame(old, obj)) return;
    if (old !== undefined) this.#unindex(key, old);
    this.#objects.set(key, obj);
    this.#index(key, obj);
    if (old === undefined) this.#events.emitAdd(obj);
    else this.#events.emitUpdate(old, obj);
  }

  #remove(key: string): void {
    const old = this.#drop(key);
    if (old !== undefined) this.#events.emitDelete(old);
  }

  /** Removes `key` from the cache and its indexes, without an event; returns what it held. */
  #drop(key: string): T | undefined {
    const old = this.#objects.get(key);
    if (old === undefined) return undefined;
    this.#objects.delete(key);
    this.#unindex(key, old);
    return old;
  }

  #index(key: string, obj: T): void {
    if (this.#idOf !== undefined) this.#keysById.set(this.#idOf(obj), key);
    const value = this.#indexOf?.(obj);
    if (value === undefined) return;
    const keys = this.#keysByIndex.get(value);
    if (keys === undefined) this.#keysByIndex.set(value, [key]);
    else if (!keys.includes(key)) keys.push(key);
  }

  #unindex(key: string, obj: T): void {
    if (this.#idOf !== undefined) {
      const id = this.#idOf(obj);
      if (this.#keysById.get(id) === key) this.#keysById.delete(id);
    }
    const value = this.#indexOf?.(obj);
    if (value === undefined) return;
    const keys = this.#keysByIndex.get(value)?.filter((k) => k !== key);
    if (keys === undefined || keys.length === 0) this.#keysByIndex.delete(value);
    else this.#keysByIndex.set(value, keys);
  }
}

/**
 * Fires `onIdle` once when `alive()` was not called for `boundMs`. One timer per stream, re-armed only when
 * it fires early: `alive()` on every event costs a clock read, not a timer.
 */
class IdleBound {
  fired = false;
  readonly #boundMs: number;
  readonly #onIdle: () => void;
  #last = performance.now();
  #timer: NodeJS.Timeout;

  constructor(boundMs: number, onIdle: () => void) {
    this.#boundMs = boundMs;
    this.#onIdle = onIdle;
    this.#timer = this.#arm(boundMs);
  }

  alive(): void {
    this.#last = performance.now();
  }

  stop(): void {
    clearTimeout(this.#timer);
  }

  #arm(ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      const left = this.#last + this.#boundMs - performance.now();
      if (left > 0) {
        this.#timer = this.#arm(left);
        return;
      }
      this.fired = true;
      this.#onIdle();
    }, ms);
    timer.unref();
    return timer;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

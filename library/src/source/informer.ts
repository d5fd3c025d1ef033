/**
 * A Kubernetes informer that never goes silent, built on the library's list-watch ({@link KubeListWatch},
 * kube-list-watch.ts: over a {@link KubeHttp}, no client-node at run time, watch-lists where the API server
 * serves them).
 *
 * Why a supervisor: a list-watch (the library's, as client-node's `ListWatch`) relists by itself on 410 Gone and
 * resumes after a clean end or a silent connection, but on ANY other error (connection reset, 401/403, 429, 5xx,
 * a failed list) it calls its error handlers and STOPS FOR GOOD. A controller whose informer stopped keeps
 * running on a frozen picture of the world and never notices. So:
 *
 * - On an error we restart, ONE restart at a time: retire the list-watch, `await stop()`, wait a jittered
 *   exponential backoff (capped; reset after a generation stayed healthy), then start a NEW list-watch. Never
 *   `start()` from inside the error handler: that is how restart storms happen.
 * - Each (re)start uses a fresh list-watch (a "generation"). Restarting the same instance is unsafe: `stop()`
 *   cannot cancel a list or a reconnect delay in flight, which then opens a watch nobody can abort, and a second
 *   `start()` runs a second list-watch loop on the same instance. Callbacks of a retired generation are ignored
 *   (that includes the AbortError of the watch we aborted ourselves), and a retired generation that still
 *   produces anything is stopped again.
 * - A watchdog restarts the informer when it saw no event, no bookmark and no (re)connect for `silenceMs`. The
 *   list-watch already resumes a watch after 90 s without a byte, and the API server sends bookmarks, so a
 *   healthy informer hears something every few minutes at most; the watchdog is the safety net for what has no
 *   timeout at all (a list that never answers, a credential plugin that hangs).
 *
 * The cache is ours, not the list-watch's: every list (the first one, the one after each restart, the one after a
 * 410) REPLACES it, emitting the difference with what we held — `delete` for objects gone, `add` for new ones,
 * `update(old, new)` for those whose resourceVersion changed, and nothing for unchanged objects. So a restart
 * never replays the whole world as events (a periodic resync is the separate tool for that), and a change that
 * happened while the watch was down arrives exactly once, as a diff. Watch events between lists are applied
 * one by one. `managedFields` are stripped (large, and no reconciler needs them) and every cached object is
 * deep-frozen: see `freeze.ts`.
 *
 * Sharded (leadership/sharded.ts): with a `shard`, the cache keeps only the objects the shard admits, and the list and
 * the watch carry the shard's `shardSelector`, so an API server with KEP-5866's sharded list and watch sends
 * only those. The filter on our side stays on either way: an API server without the feature ignores the
 * selector and sends everything. `reshard()` applies a new range: see there.
 */
import type { KubernetesListObject, KubernetesObject } from "@kubernetes/client-node";
import type { KubeHttp } from "../kube/kube-http.ts";
import { KubeListWatch, type WatchListSupport } from "./kube-list-watch.ts";
import { CacheEvents, SyncLatch, type CacheEvent, type CacheHandlers } from "./cache-events.ts";
import { jitter, sleep } from "../support/clock.ts";
import { deepFreeze, StringPool } from "./freeze.ts";
import type { Logger } from "../observability/logger.ts";
import { ExponentialBackoff } from "../queue/queue.ts";

/** How restarts back off. Defaults are client-go's reflector: 800 ms doubling to 30 s, full jitter, reset after 2 min. */
export interface RestartBackoffOptions {
  /** Delay before the first restart. Default 800 ms. */
  initialDelayMs?: number;
  /** Longest delay between restarts (before jitter). Default 30 s. */
  maxDelayMs?: number;
  /** Each delay is made up to `jitter` times longer at random. Default 1 (up to twice as long). */
  jitter?: number;
  /** A generation that ran this long before failing resets the backoff to the first delay. Default 2 min. */
  resetAfterMs?: number;
}

/** Why a list was applied to the cache. */
export type ListReason = "initial" | "restart" | "expired";

/** Callbacks for metrics and tests; each is cheap and must not throw. */
export interface InformerHooks {
  /** Called when the supervisor begins a restart (after an error or silence), before its backoff. */
  onRestart?(name: string, reason: string): void;
  /**
   * Called after a complete list was applied to the cache: the first one (`initial`), the first one of a
   * restarted generation (`restart`), or a relist the list-watch made by itself after 410 Gone (`expired`).
   */
  onList?(name: string, reason: ListReason): void;
}

/** Which objects a sharded informer keeps (leadership/sharded.ts). Read again at each `reshard()`. */
export interface InformerShard<T extends KubernetesObject> {
  /** Keeps only the objects this returns true for: every listed object and every event is checked. */
  admits(obj: T): boolean;
  /** The API server's `shardSelector` to send with the list and the watch (KEP-5866), or undefined for none. */
  selector(): string | undefined;
}

/** Options of a {@link SupervisedInformer}. */
export interface SupervisedInformerOptions<T extends KubernetesObject> {
  /** Names the informer in logs and hooks, e.g. "shapes". */
  name: string;
  /** The collection's URL path, e.g. `/apis/shapes.example.com/v1/shapes` (all namespaces). */
  path: string;
  /** Keep only one shard of the collection; see the module comment. */
  shard?: InformerShard<T>;
  /** Passed to the list and the watch. */
  labelSelector?: string;
  /** Where the informer logs its restarts, relists and silences. */
  logger: Logger;
  /** How long the supervisor waits between restarts (defaults: {@link RestartBackoffOptions}). */
  backoff?: RestartBackoffOptions;
  /** Restart when nothing (event or connect) was seen for this long. Default 120 s (twice a quiet cycle). */
  silenceMs?: number;
  /** Told of each restart and complete list (the controller counts them as metrics). */
  hooks?: InformerHooks;
  /** The library's keep-alive client; share one per API server. */
  http: KubeHttp;
  /** Try watch-lists first (default true); a refusal is remembered for the informer's life. */
  watchList?: boolean;
}

const RESTART = "restart";

/**
 * A list-watch cache of one Kubernetes collection that recovers from every failure by itself.
 * See the module comment for the supervision rules and for how events are delivered.
 */
export class SupervisedInformer<T extends KubernetesObject> {
  /** The informer's name, as given. */
  readonly name: string;

  readonly #path: string;
  readonly #http: KubeHttp;
  readonly #watchList: boolean;
  /** Whether the API server serves watch-lists, as its first answer said: kept across generations. */
  readonly #support: WatchListSupport = { allowed: undefined };
  readonly #shard: InformerShard<T> | undefined;
  /** Set by `reshard()`: marked once the first list of a generation launched after it is in the cache. */
  #resharded: SyncLatch | undefined;
  readonly #labelSelector: string | undefined;
  readonly #logger: Logger;
  readonly #hooks: InformerHooks;
  readonly #backoff: ExponentialBackoff<typeof RESTART>;
  readonly #jitter: number;
  readonly #resetAfterMs: number;
  readonly #silenceMs: number;

  readonly #events: CacheEvents<T>;
  readonly #sync = new SyncLatch();
  /** namespace ("" when cluster-scoped) → name → frozen object. */
  readonly #objects = new Map<string, Map<string, T>>();
  /** The strings the cached objects share (freeze.ts). */
  readonly #strings = new StringPool();

  #state: "new" | "running" | "stopped" = "new";
  readonly #stopped = new AbortController();
  /** Bumped whenever a list-watch is retired or launched: callbacks carry the generation they belong to. */
  #generation = 0;
  #current: KubeListWatch<T> | undefined;
  #generationStartedAt = 0;
  #listsInGeneration = 0;
  #restarting = false;
  #lastActivityAt = 0;
  #watchdog: NodeJS.Timeout | undefined;

  /** Checks the options; nothing runs until `start()`. */
  constructor(options: SupervisedInformerOptions<T>) {
    const backoff = options.backoff ?? {};
    this.name = options.name;
    this.#path = options.path;
    this.#http = options.http;
    this.#watchList = options.watchList ?? true;
    this.#shard = options.shard;
    this.#labelSelector = options.labelSelector;
    this.#logger = options.logger.child({ informer: options.name });
    this.#hooks = options.hooks ?? {};
    const initialDelayMs = backoff.initialDelayMs ?? 800;
    this.#backoff = new ExponentialBackoff(
      initialDelayMs,
      backoff.maxDelayMs ?? Math.max(30_000, initialDelayMs),
    );
    this.#jitter = backoff.jitter ?? 1;
    this.#resetAfterMs = backoff.resetAfterMs ?? 120_000;
    this.#silenceMs = options.silenceMs ?? 120_000;
    if (!(this.#silenceMs > 0)) throw new Error(`cannot use a silence period of ${this.#silenceMs} ms`);
    this.#events = new CacheEvents(this.#logger);
  }

  /** Called before `start()`: adds a handler. Handlers get frozen objects; see `CacheHandlers`. */
  on<E extends CacheEvent>(event: E, handler: CacheHandlers<T>[E]): void {
    this.#events.on(event, handler);
  }

  /** The cached object, frozen, or undefined. Reads never call the API server. */
  get(name: string, namespace?: string): T | undefined {
    return this.#objects.get(namespace ?? "")?.get(name);
  }

  /** Every cached object (of one namespace when given), frozen. Reads never call the API server. */
  list(namespace?: string): T[] {
    if (namespace !== undefined) return [...(this.#objects.get(namespace)?.values() ?? [])];
    return [...this.#objects.values()].flatMap((byName) => [...byName.values()]);
  }

  /** True once the first complete list is in the cache; stays true across restarts. */
  hasSynced(): boolean {
    return this.#sync.hasSynced();
  }

  /** Resolves `true` once synced, `false` if `signal` aborts or the informer stops first. Never rejects. */
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    return this.#sync.waitForSync(signal);
  }

  /**
   * Called once: starts listing and watching, and the watchdog. Resolves when the first generation has
   * listed and connected its watch, or has failed (its recovery is then under way): it never rejects for
   * API errors. Use `waitForSync` to wait for the cache.
   */
  async start(): Promise<void> {
    if (this.#state !== "new") throw new Error(`cannot start informer ${this.name}: it was already started`);
    this.#state = "running";
    this.#watchdog = setInterval(() => this.#checkSilence(), Math.min(this.#silenceMs / 4, 5_000));
    this.#watchdog.unref();
    this.#logger.debug("informer starting");
    await this.#launch();
  }

  /**
   * Called at shutdown: stops watching for good, cancels a pending restart, and resolves pending
   * `waitForSync` calls. No handler is called after it resolves. The cache stays readable. Idempotent.
   */
  async stop(): Promise<void> {
    if (this.#state === "stopped") return;
    this.#state = "stopped";
    this.#stopped.abort();
    clearInterval(this.#watchdog);
    this.#sync.close();
    await this.#retire();
  }

  /**
   * Called after the shard's range changed (leadership/sharded.ts): drops every cached object the shard no longer
   * admits, WITHOUT events (they were not deleted: another replica owns them now), then restarts with a fresh
   * list and watch under the new selector. Objects new to the cache arrive as adds, objects deleted meanwhile
   * as deletes. Resolves `true` once that list is in the cache (starting the informer first if it was not),
   * `false` if `signal` aborts or the informer stops first.
   */
  async reshard(signal?: AbortSignal): Promise<boolean> {
    const shard = this.#shard;
    if (shard === undefined) throw new Error(`cannot reshard informer ${this.name}: it has no shard`);
    if (this.#state === "stopped") return false;
    for (const obj of this.list()) {
      if (!shard.admits(obj)) this.#drop(obj);
    }
    const latch = new SyncLatch();
    this.#resharded = latch;
    if (this.#state === "new") await this.start();
    else if (!this.#restarting) {
      await this.#retire();
      await this.#launch();
    }
    // Else a restart is waiting out its backoff: the generation it launches reads the new selector. (Launching
    // one here too would leave that restart to launch a second, or, if ours failed, nobody to restart it.)
    return latch.waitForSync(signal);
  }

  /** Starts a new generation: a fresh list-watch whose callbacks only count while it is current. */
  async #launch(): Promise<void> {
    const generation = ++this.#generation;
    const selector = this.#shard?.selector();
    const lw = this.#makeListWatch(generation, selector);
    lw.on("add", (obj) => this.#ifCurrent(generation, lw, () => this.#upsert(obj)));
    lw.on("update", (obj) => this.#ifCurrent(generation, lw, () => this.#upsert(obj)));
    lw.on("delete", (obj) => this.#ifCurrent(generation, lw, () => this.#remove(obj)));
    lw.on("connect", () => this.#ifCurrent(generation, lw, () => this.#touch()));
    // Errors of a retired generation (including the AbortError of the watch we aborted) are ignored.
    lw.on("error", (error) => this.#ifCurrent(generation, lw, () => this.#scheduleRestart(describe(error))));
    this.#current = lw;
    this.#generationStartedAt = Date.now();
    this.#listsInGeneration = 0;
    this.#touch();
    try {
      await lw.start();
    } catch (error) {
      // start() rejects only when it cannot even build the request (no cluster, a failing auth plugin).
      this.#ifCurrent(generation, lw, () => this.#scheduleRestart(describe(error)));
    }
  }

  /** The list-watch of one generation. */
  #makeListWatch(generation: number, selector: string | undefined): KubeListWatch<T> {
    const lw = new KubeListWatch<T>({
      http: this.#http,
      path: this.#path,
      ...(this.#labelSelector === undefined ? {} : { labelSelector: this.#labelSelector }),
      ...(selector === undefined ? {} : { shardSelector: selector }),
      watchList: this.#watchList,
      support: this.#support,
      listed: (list) => {
        this.#applyList(generation, list);
      },
    });
    // Bookmarks say the watch is alive (the watch stays open 5-10 min): the watchdog hears them.
    lw.on("bookmark", () => this.#ifCurrent(generation, lw, () => this.#touch()));
    return lw;
  }

  /** Retires the current generation (its callbacks are ignored from now on) and stops it. */
  async #retire(): Promise<void> {
    this.#generation++;
    const lw = this.#current;
    this.#current = undefined;
    await lw?.stop();
  }

  /**
   * Runs `action` when `lw` is the current generation. Anything from a retired one is dropped, and the retired
   * list-watch is stopped again: if it got past our `stop()` (a list or a reconnect delay in flight), this
   * aborts the watch it opened since.
   */
  #ifCurrent(generation: number, lw: KubeListWatch<T>, action: () => void): void {
    if (generation === this.#generation && this.#state === "running") return action();
    void lw.stop();
  }

  /** A generation's complete list: replaces our cache. */
  #applyList(generation: number, list: KubernetesListObject<T>): void {
    if (generation !== this.#generation || this.#state !== "running") {
      // Throwing makes the retired list-watch end here instead of opening a watch nobody would abort.
      throw new Error(`cannot use a list of informer ${this.name}: its generation was retired`);
    }
    const reason: ListReason =
      this.#listsInGeneration > 0 ? "expired" : generation === 1 ? "initial" : "restart";
    this.#listsInGeneration++;
    this.#replace(list.items ?? []);
    this.#touch();
    this.#sync.markSynced();
    this.#resharded?.markSynced();
    this.#logger.debug({ reason, objects: list.items?.length ?? 0 }, "listed");
    this.#hooks.onList?.(this.name, reason);
  }

  /** Makes the cache equal to `items`, emitting deletes first, then adds and updates. */
  #replace(items: T[]): void {
    const keep = new Set(items.map((obj) => keyOf(obj)));
    for (const obj of this.list()) {
      if (!keep.has(keyOf(obj))) this.#remove(obj);
    }
    for (const obj of items) this.#upsert(obj);
  }

  /** Stores `obj` (stripped and frozen); emits add or update unless the cache already holds that version. */
  #upsert(raw: T): void {
    const obj = prepare(raw, this.#strings);
    this.#touch();
    if (this.#shard !== undefined && !this.#shard.admits(obj)) {
      this.#drop(obj);
      return;
    }
    const namespace = obj.metadata?.namespace ?? "";
    const name = obj.metadata?.name ?? "";
    let byName = this.#objects.get(namespace);
    if (byName === undefined) {
      byName = new Map();
      this.#objects.set(namespace, byName);
    }
    const old = byName.get(name);
    if (old !== undefined && sameVersion(old, obj)) return;
    byName.set(name, obj);
    if (old === undefined) this.#events.emitAdd(obj);
    else this.#events.emitUpdate(old, obj);
  }

  /** Removes the object named like `raw`; emits delete with the final state when it was cached. */
  #remove(raw: T): void {
    const obj = prepare(raw, this.#strings);
    this.#touch();
    if (this.#drop(obj)) this.#events.emitDelete(obj);
  }

  /**
   * Forgets the object named like `obj`, without an event; true when it was cached. `#remove` announces it;
   * a reshard does not (the object left our shard, it was not deleted).
   */
  #drop(obj: T): boolean {
    const namespace = obj.metadata?.namespace ?? "";
    const byName = this.#objects.get(namespace);
    if (byName?.delete(obj.metadata?.name ?? "") !== true) return false;
    if (byName.size === 0) this.#objects.delete(namespace);
    return true;
  }

  #touch(): void {
    this.#lastActivityAt = Date.now();
  }

  /** The watchdog tick. During a restart's backoff there is silence by design: `#scheduleRestart` folds it in. */
  #checkSilence(): void {
    const silentMs = Date.now() - this.#lastActivityAt;
    if (silentMs >= this.#silenceMs) this.#scheduleRestart(`silent for ${Math.round(silentMs / 1000)} s`);
  }

  /** Starts a restart unless one is already in flight (then this failure is folded into it). */
  #scheduleRestart(reason: string): void {
    if (this.#restarting || this.#state !== "running") return;
    this.#restarting = true;
    void this.#restart(reason);
  }

  /** stop → jittered backoff → start. The in-flight flag drops before the launch, whose errors schedule the next restart. */
  async #restart(reason: string): Promise<void> {
    try {
      if (Date.now() - this.#generationStartedAt >= this.#resetAfterMs) this.#backoff.forget(RESTART);
      const delayMs = Math.round(jitter(this.#backoff.next(RESTART), this.#jitter));
      this.#logger.warn({ reason, delayMs }, "informer stopped; restarting after backoff");
      this.#hooks.onRestart?.(this.name, reason);
      await this.#retire();
      const waited = await sleep(delayMs, this.#stopped.signal);
      this.#restarting = false;
      if (!waited || this.#state !== "running") return;
      await this.#launch();
    } catch (error) {
      // Not expected (stop() and start() report through callbacks); never leave the informer without a restart.
      this.#restarting = false;
      this.#logger.error({ err: error }, "informer restart failed; trying again");
      this.#scheduleRestart(describe(error));
    }
  }
}

/** `namespace/name`, or `name` for cluster-scoped objects. */
function keyOf(obj: KubernetesObject): string {
  const name = obj.metadata?.name ?? "";
  const namespace = obj.metadata?.namespace;
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * Strips `managedFields` and deep-freezes, in place, sharing equal strings through `strings`. An already frozen
 * object was prepared before.
 */
function prepare<T extends KubernetesObject>(obj: T, strings: StringPool): T {
  if (Object.isFrozen(obj)) return obj;
  if (obj.metadata?.managedFields !== undefined) delete obj.metadata.managedFields;
  return deepFreeze(obj, strings);
}

function sameVersion(a: KubernetesObject, b: KubernetesObject): boolean {
  const version = a.metadata?.resourceVersion;
  return version !== undefined && version === b.metadata?.resourceVersion;
}

/** A short reason for logs and hooks: the HTTP status when there is one, else the message. */
function describe(error: unknown): string {
  if (error instanceof Error || (typeof error === "object" && error !== null)) {
    const e = error as { statusCode?: unknown; code?: unknown; name?: unknown; message?: unknown };
    const status =
      typeof e.statusCode === "number" ? e.statusCode : typeof e.code === "number" ? e.code : undefined;
    const message = typeof e.message === "string" ? e.message : String(e.name);
    // The lean list-watch's errors say their status already (`watch /…: HTTP 429 …`).
    return status === undefined || message.includes(`HTTP ${status}`)
      ? message
      : `HTTP ${status}: ${message}`;
  }
  return String(error);
}

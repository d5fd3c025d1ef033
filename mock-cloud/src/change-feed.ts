/**
 * The change feed behind `GET /v1/watch`: streams the history of changes as Server-Sent Events.
 *
 * Each open watch is a `WatchSession` that remembers the last revision it sent and "pumps": it reads the
 * changes after that revision from the repository's history and writes them, in revision order. It pumps
 * when it opens, after every commit, when the fault rules change (the lag may have changed), and when a
 * lagging change becomes visible. Nothing is kept in memory per change, so a slow reader cannot make the
 * cloud buffer without bound: the session waits for `drain` before reading more.
 *
 * Wire format, one event per change (the `id:` is the revision, so EventSource-style resume with
 * `Last-Event-ID` works):
 *
 *     id: 42
 *     data: {"type":"MODIFIED","shape":{...},"revision":42}
 *
 * plus a comment line (`: heartbeat`) every `heartbeatMs`. A session whose position falls out of the
 * retained history (it read too slowly) is ended; reconnecting from its last id answers 410 Gone.
 */
import type { ServerResponse } from "node:http";
import type { Change, ShapeRepository } from "./db/repository.ts";
import type { WatchEvent } from "./schemas.ts";

/** Tag filters: `[key, value]` pairs that must all be present. */
export type TagFilter = readonly (readonly [string, string])[];

/** Options of one watch. */
export interface WatchOptions {
  /** Send the changes after this revision. */
  readonly since: number;
  /** Only shapes whose tags match (see `eventForWatcher`); empty: every shape. */
  readonly filter: TagFilter;
  /** How far this watch trails writes, asked before every read (fault rules can change meanwhile). */
  readonly lagMs: () => number;
}

/** Options of the feed. */
export interface ChangeFeedOptions {
  /** Interval of the heartbeat comments. */
  readonly heartbeatMs: number;
  /** Most changes read from the history at once. Default 500. */
  readonly batchSize?: number;
}

/** Does `shape` carry every `[key, value]` of `filter`? */
export function matchesTags(shape: { tags: Readonly<Record<string, string>> }, filter: TagFilter): boolean {
  return filter.every(([k, v]) => Object.hasOwn(shape.tags, k) && shape.tags[k] === v);
}

/**
 * What a watcher with `filter` sees of one change: shapes entering the filter are ADDED, shapes leaving it
 * are DELETED (with the shape as it is now), and changes outside it are not seen at all (undefined).
 */
export function eventForWatcher(change: Change, filter: TagFilter): WatchEvent | undefined {
  const event = (type: WatchEvent["type"]): WatchEvent => ({
    type,
    shape: change.shape,
    revision: change.revision,
  });
  if (filter.length === 0) return event(change.type);
  const before =
    change.previous !== undefined && change.type !== "ADDED" && matchesTags(change.previous, filter);
  const after = change.type !== "DELETED" && matchesTags(change.shape, filter);
  if (before && after) return event("MODIFIED");
  if (after) return event("ADDED");
  if (before) return event("DELETED");
  return undefined;
}

/** Formats one change as a Server-Sent Event. */
export function formatEvent(event: WatchEvent): string {
  return `id: ${event.revision}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** Every open watch of one app. */
export class ChangeFeed {
  readonly #repo: ShapeRepository;
  readonly #options: Required<ChangeFeedOptions>;
  readonly #sessions = new Set<WatchSession>();
  readonly #unsubscribe: () => void;

  constructor(repo: ShapeRepository, options: ChangeFeedOptions) {
    this.#repo = repo;
    this.#options = { batchSize: 500, ...options };
    this.#unsubscribe = repo.onCommit(() => this.pokeAll());
  }

  /** Number of open watches. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Starts streaming to `res`, whose headers the caller has NOT sent yet (this sends them). The session
   * ends when the client goes away, when `closeAll` is called, or when it falls out of the history.
   */
  open(res: ServerResponse, options: WatchOptions): void {
    const session = new WatchSession(this.#repo, res, options, this.#options, () =>
      this.#sessions.delete(session),
    );
    this.#sessions.add(session);
    session.start();
  }

  /** Makes every session look for new changes (after a commit, or when the lag may have changed). */
  pokeAll(): void {
    for (const s of this.#sessions) s.poke();
  }

  /** Ends every stream (server shutdown) and stops listening to commits. */
  closeAll(): void {
    this.#unsubscribe();
    for (const s of [...this.#sessions]) s.stop(true);
  }
}

/** One open watch stream. */
class WatchSession {
  readonly #repo: ShapeRepository;
  readonly #res: ServerResponse;
  readonly #options: WatchOptions;
  readonly #feed: Required<ChangeFeedOptions>;
  readonly #onStop: () => void;
  #lastSent: number;
  #pumping = false;
  #again = false;
  #stopped = false;
  #heartbeat: NodeJS.Timeout | undefined;
  #lagTimer: NodeJS.Timeout | undefined;

  constructor(
    repo: ShapeRepository,
    res: ServerResponse,
    options: WatchOptions,
    feed: Required<ChangeFeedOptions>,
    onStop: () => void,
  ) {
    this.#repo = repo;
    this.#res = res;
    this.#options = options;
    this.#feed = feed;
    this.#onStop = onStop;
    this.#lastSent = options.since;
  }

  start(): void {
    this.#res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    this.#res.write(`retry: 1000\n: watching every change after revision ${this.#lastSent}\n\n`);
    this.#res.on("close", () => this.stop(false));
    this.#heartbeat = setInterval(() => this.#res.write(": heartbeat\n\n"), this.#feed.heartbeatMs);
    this.poke();
  }

  stop(endResponse: boolean): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#heartbeat);
    clearTimeout(this.#lagTimer);
    this.#onStop();
    if (endResponse && !this.#res.writableEnded) this.#res.end();
  }

  poke(): void {
    if (this.#stopped) return;
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = true;
    void this.#pump();
  }

  /**
   * Sends what is visible, and again while pokes came meanwhile. `#pumping` is cleared in the same synchronous
   * step that found no poke, never in a later callback: a commit in between (from another microtask) would find
   * the flag still set and leave its poke in `#again` with nobody to read it, and its change would wait for the
   * next commit (change-feed.test.ts).
   */
  async #pump(): Promise<void> {
    try {
      do {
        this.#again = false;
        if (this.#lastSent < this.#repo.oldestReadableRevision) {
          this.#res.write(
            `: history after revision ${this.#lastSent} is gone; reconnect to get 410 Gone, then relist\n\n`,
          );
          this.stop(true);
          return;
        }
        const lagMs = this.#options.lagMs();
        const visible = this.#repo.visibleRevision(lagMs);
        const changes = this.#repo.changes(this.#lastSent, visible, this.#feed.batchSize);
        let ok = true;
        for (const change of changes) {
          const event = eventForWatcher(change, this.#options.filter);
          if (event) ok = this.#res.write(formatEvent(event)) && ok;
          this.#lastSent = change.revision;
        }
        if (!ok) await this.#drained();
        if (this.#stopped) return;
        if (changes.length === this.#feed.batchSize) this.#again = true;
        else if (visible < this.#repo.revision) this.#wakeWhenVisible(visible + 1, lagMs);
      } while (this.#again && !this.#stopped);
    } catch (err) {
      // A database failure mid-stream: end the stream; the client reconnects and gets a clear answer.
      this.#res.write(`: cannot read the change history: ${String(err).replace(/[\r\n]+/g, " ")}\n\n`);
      this.stop(true);
    } finally {
      this.#pumping = false;
    }
  }

  /** Schedules a pump for when the change `revision` is `lagMs` old. */
  #wakeWhenVisible(revision: number, lagMs: number): void {
    const waitMs = this.#repo.msUntilVisible(revision, lagMs);
    if (waitMs === undefined) return;
    clearTimeout(this.#lagTimer);
    this.#lagTimer = setTimeout(() => this.poke(), waitMs + 1);
  }

  #drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#res.off("drain", done);
        this.#res.off("close", done);
        resolve();
      };
      this.#res.on("drain", done);
      this.#res.on("close", done);
    });
  }
}

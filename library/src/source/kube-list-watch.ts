/**
 * A list-watch of one Kubernetes collection over the library's own keep-alive client ({@link KubeHttp}): no
 * client-node at run time (importing it costs 70-86 MB RSS: docs/benchmarks.md). It does what client-node's `ListWatch`
 * does for the informer, and what client-go's reflector does beyond it:
 *
 * - The first list, and every relist, is a watch-list when the API server allows it (`sendInitialEvents=true`,
 *   `resourceVersionMatch=NotOlderThan`: the objects stream in as ADDED events, ended by the bookmark annotated
 *   `k8s.io/initial-events-end`), else a paged list (`limit`/`continue`). A server that refuses the
 *   parameters (HTTP 400 or 422 to that request) is remembered in the shared {@link WatchListSupport}, and
 *   this list-watch, and every later one given the same object, lists instead.
 * - The watch resumes from the last resourceVersion seen (events and bookmarks: `allowWatchBookmarks=true`)
 *   after a clean close, after the server's `timeoutSeconds` (jittered 5-10 min, like client-go) and after
 *   `idleTimeoutMs` without a byte (then it aborts the request itself).
 * - 410 Gone, as the HTTP status or as an ERROR event in the stream, relists.
 * - Any other failure (a network error, another status, a garbled line, a failed list) is reported ONCE to the
 *   `error` handlers, as one line (what failed, the collection, the HTTP status and the API server's message),
 *   and the list-watch stops for good: recovering is the supervisor's job (`SupervisedInformer`).
 *
 * The informer owns the cache: a complete list goes to `listed`, watch events to the `add`/`update`/`delete`
 * handlers; a list's objects are not replayed as events.
 */
import type { KubernetesListObject, KubernetesObject } from "@kubernetes/client-node";
import { KubeApiError, type KubeHttp } from "../kube/kube-http.ts";
import { sleep } from "../support/clock.ts";

/** A watch that ends with nothing in it waits this long before it resumes: never a tight loop. */
const EMPTY_WATCH_PAUSE_MS = 1_000;

/** The bookmark annotation that ends a watch-list's initial events. */
export const INITIAL_EVENTS_END = "k8s.io/initial-events-end";

/** Whether the API server serves watch-lists: `undefined` until one was tried. Share one per API server. */
export interface WatchListSupport {
  /** True once a watch-list was served, false once one was refused; undefined until one was tried. */
  allowed: boolean | undefined;
}

/** Options of a {@link KubeListWatch}. */
export interface KubeListWatchOptions<T extends KubernetesObject> {
  /** The client of the API server. */
  http: KubeHttp;
  /** The collection's path, e.g. `/apis/example.com/v1/widgets`. */
  path: string;
  /** Lists and watches only the objects with these labels. */
  labelSelector?: string;
  /** Lists and watches only the objects with these fields. */
  fieldSelector?: string;
  /** KEP-5866's sharded list and watch (leadership/sharded.ts). */
  shardSelector?: string;
  /** Called with every complete list (the first one, and each after a 410); throwing stops the list-watch. */
  listed: (list: KubernetesListObject<T>) => void;
  /** Try watch-lists first (default true); `support` remembers a refusal. */
  watchList?: boolean;
  /** What the API server said of watch-lists, shared by the list-watches on it. Default: this one's own. */
  support?: WatchListSupport;
  /** Objects per list page. Default 500. */
  pageSize?: number;
  /** The server ends a watch after this many seconds, times 1 to 2 at random. Default 300 (5-10 min). */
  watchTimeoutSeconds?: number;
  /** Aborts (and resumes) a watch that sent nothing for this long (bookmarks count). Default 90 s. */
  idleTimeoutMs?: number;
}

type Handlers<T> = {
  add: ((obj: T) => void)[];
  update: ((obj: T) => void)[];
  delete: ((obj: T) => void)[];
  /** A watch is open: its answer's headers arrived (a first one, or a resume). */
  connect: (() => void)[];
  /** A bookmark arrived: the watch is alive. */
  bookmark: (() => void)[];
  error: ((error: Error) => void)[];
};

/** The 410 that means "your resourceVersion is too old": relist. */
class Gone extends Error {}

/** A failure of the list-watch, as one line; `code` is the HTTP status when there was one. */
export class ListWatchError extends Error {
  readonly code: number | undefined;
  constructor(message: string, code: number | undefined) {
    super(message);
    this.name = "ListWatchError";
    this.code = code;
  }
}

interface WatchEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: T & { code?: number; reason?: string; message?: string };
}

/** See the module comment. One instance runs once: `start()`, then `stop()`. */
export class KubeListWatch<T extends KubernetesObject> {
  readonly #options: KubeListWatchOptions<T>;
  readonly #support: WatchListSupport;
  readonly #handlers: Handlers<T> = { add: [], update: [], delete: [], connect: [], bookmark: [], error: [] };
  readonly #abort = new AbortController();
  #running: Promise<void> | undefined;
  /** Lines the last watch request delivered. */
  #lines = 0;
  #firstList: (() => void) | undefined;

  constructor(options: KubeListWatchOptions<T>) {
    this.#options = options;
    this.#support = options.support ?? { allowed: undefined };
  }

  /** Calls `handler` on every `event` from now on: an object added, updated or deleted, a watch connected, a bookmark, an error. */
  on<E extends keyof Handlers<T>>(event: E, handler: Handlers<T>[E][number]): void {
    (this.#handlers[event] as Handlers<T>[E][number][]).push(handler);
  }

  /** Starts; resolves once the first list is applied and a watch is open, or it failed or was stopped. */
  start(): Promise<void> {
    if (this.#running) throw new Error(`cannot start the list-watch of ${this.#options.path} twice`);
    const firstList = new Promise<void>((resolve) => (this.#firstList = resolve));
    this.#running = this.#run().finally(() => this.#firstList?.());
    return firstList;
  }

  /** Stops for good: aborts the request in flight; resolves once the loop ended. Idempotent. */
  async stop(): Promise<void> {
    this.#abort.abort(new Error(`the list-watch of ${this.#options.path} was stopped`));
    await this.#running;
  }

  async #run(): Promise<void> {
    try {
      let rv = await this.#list();
      /** 410s in a row for the resourceVersion a list had just given. */
      let goneAfterList = 0;
      while (!this.#abort.signal.aborted) {
        if (rv === undefined) {
          rv = await this.#list();
          continue;
        }
        const next = await this.#watch(rv, false);
        goneAfterList =
          next === undefined && this.#lines <= 1 && rv === this.#listedAt ? goneAfterList + 1 : 0;
        if (goneAfterList >= 2) {
          // Twice 410 for what a fresh list gave: relisting again would loop. The supervisor backs off instead.
          throw new ListWatchError(
            `watch ${this.#options.path}: 410 Gone twice in a row for the resourceVersion a list had just returned`,
            410,
          );
        }
        // Ended with nothing in it (a proxy that closes watches at once?): pause, so it is never a tight loop.
        if (next !== undefined && this.#lines === 0) await sleep(EMPTY_WATCH_PAUSE_MS, this.#abort.signal);
        // undefined: gone (410) or a watch-list that must start over; else where to resume.
        rv = next;
      }
    } catch (error) {
      if (this.#abort.signal.aborted) return;
      const failure = error instanceof Error ? error : new Error(String(error));
      for (const handler of this.#handlers.error) handler(failure);
    }
  }

  /** A complete list, applied through `listed`; resolves with the resourceVersion to watch from. */
  async #list(): Promise<string | undefined> {
    const { watchList = true } = this.#options;
    if (watchList && this.#support.allowed !== false) {
      try {
        return await this.#watch(undefined, true);
      } catch (error) {
        if (!(error instanceof ListWatchError) || !refusesWatchList(error.code)) throw error;
        if (this.#support.allowed === true) throw error;
        this.#support.allowed = false;
      }
    }
    return this.#pagedList();
  }

  async #pagedList(): Promise<string> {
    const items: T[] = [];
    let cont: string | undefined;
    let resourceVersion = "";
    do {
      const query = this.#query({
        limit: String(this.#options.pageSize ?? 500),
        ...(cont ? { continue: cont } : {}),
      });
      let page: KubernetesListObject<T>;
      try {
        page = await this.#options.http.request<KubernetesListObject<T>>(
          "GET",
          `${this.#options.path}?${query}`,
          undefined,
          undefined,
          this.#abort.signal,
        );
      } catch (error) {
        throw this.#failure("list", error);
      }
      items.push(...(page.items ?? []));
      cont = (page.metadata as { continue?: string } | undefined)?.continue;
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
    } while (cont);
    this.#abort.signal.throwIfAborted();
    this.#applyList(items, resourceVersion);
    return resourceVersion;
  }

  /** The resourceVersion of the last list applied. */
  #listedAt: string | undefined;

  #applyList(items: T[], resourceVersion: string): void {
    this.#listedAt = resourceVersion;
    this.#options.listed({ metadata: { resourceVersion }, items });
  }

  /**
   * One watch request: from `rv`, or a watch-list (`initial`). Resolves with the resourceVersion to resume
   * from, or undefined to relist (410, or a watch-list that ended before its initial events did).
   */
  async #watch(rv: string | undefined, initial: boolean): Promise<string | undefined> {
    const timeout = Math.round((this.#options.watchTimeoutSeconds ?? 300) * (1 + Math.random()));
    const query = this.#query({
      watch: "true",
      allowWatchBookmarks: "true",
      timeoutSeconds: String(timeout),
      ...(initial
        ? { sendInitialEvents: "true", resourceVersionMatch: "NotOlderThan" }
        : { resourceVersion: rv ?? "" }),
    });
    let last = rv;
    let collecting: T[] | undefined = initial ? [] : undefined;
    this.#lines = 0;
    try {
      await this.#options.http.stream(
        `${this.#options.path}?${query}`,
        (line) => {
          this.#lines++;
          const event = line as WatchEvent<T>;
          const object = event?.object;
          if (event.type === "ERROR") {
            if (object?.code === 410) throw new Gone();
            throw new ListWatchError(
              `watch ${this.#options.path}: an ERROR event: ${object?.code ?? "?"} ${object?.reason ?? ""}: ${object?.message ?? JSON.stringify(object)}`,
              object?.code,
            );
          }
          if (typeof object !== "object" || object === null) {
            throw new ListWatchError(`watch ${this.#options.path}: an event without an object`, undefined);
          }
          last = object.metadata?.resourceVersion ?? last;
          if (event.type === "BOOKMARK") {
            if (collecting && object.metadata?.annotations?.[INITIAL_EVENTS_END] === "true") {
              this.#support.allowed = true;
              const items = collecting;
              collecting = undefined;
              this.#applyList(items, last ?? "");
              this.#firstList?.();
            }
            for (const handler of this.#handlers.bookmark) handler();
            return;
          }
          if (collecting) {
            if (event.type === "ADDED") collecting.push(object);
            return;
          }
          const handlers =
            this.#handlers[event.type === "ADDED" ? "add" : event.type === "MODIFIED" ? "update" : "delete"];
          for (const handler of handlers) handler(object);
        },
        {
          signal: this.#abort.signal,
          idleTimeoutMs: this.#options.idleTimeoutMs ?? 90_000,
          onOpen: () => {
            for (const handler of this.#handlers.connect) handler();
            // start() resolves once the first list is applied and a watch is open (as client-node's does).
            if (!collecting) this.#firstList?.();
          },
        },
      );
    } catch (error) {
      if (error instanceof Gone || (error instanceof KubeApiError && error.code === 410)) return undefined;
      if (error instanceof ListWatchError) throw error;
      // A watch-list whose initial events were all in goes on as a plain watch: name what failed.
      throw this.#failure(collecting ? "watch-list" : "watch", error);
    }
    // Ended (the server's timeout, a clean close) or idle: resume, unless the initial events never ended.
    return collecting ? undefined : last;
  }

  #query(extra: Record<string, string>): string {
    const { labelSelector, fieldSelector, shardSelector } = this.#options;
    return new URLSearchParams({
      ...(labelSelector ? { labelSelector } : {}),
      ...(fieldSelector ? { fieldSelector } : {}),
      ...(shardSelector ? { shardSelector } : {}),
      ...extra,
    }).toString();
  }

  /** One line: what failed, on which collection, the status and the API server's message. */
  #failure(step: string, error: unknown): Error {
    if (this.#abort.signal.aborted) return error as Error;
    if (error instanceof KubeApiError) {
      const said = error.message.replace(/^\S+ \S+: /, "");
      return new ListWatchError(`${step} ${this.#options.path}: HTTP ${said}`, error.code);
    }
    const message = error instanceof Error ? error.message : String(error);
    return new ListWatchError(
      `${step} ${this.#options.path}: ${message.replace(/^GET \S+: /, "")}`,
      undefined,
    );
  }
}

/** The statuses an API server answers a watch-list with when it does not serve them. */
function refusesWatchList(code: number | undefined): boolean {
  return code === 400 || code === 422;
}

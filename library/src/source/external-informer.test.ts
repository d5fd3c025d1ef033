import { afterEach, describe, expect, it, vi } from "vitest";
import {
  ExternalInformer,
  GoneError,
  type ExternalInformerOptions,
  type ExternalWatchEvent,
  type ListPage,
  type ListWatchClient,
  type RelistReason,
} from "./external-informer.ts";
import { silentLogger } from "../observability/logger.ts";
import { KeepAliveHttp } from "../support/keep-alive-http.ts";
import http from "node:http";
import type { AddressInfo } from "node:net";

const WAIT = { timeout: 10_000, interval: 5 };

interface Item {
  name: string;
  /** Its own id, kept through a rename (`FakeFeed.rename`); unset: its first name. */
  id?: string;
  color: string;
  owner: string;
  revision: number;
}

interface Watcher {
  onEvent: (event: ExternalWatchEvent<Item>) => void;
  end: (error?: Error) => void;
}

/**
 * An in-memory external API: a revisioned collection with keyset pagination (stable under concurrent writes,
 * like the mock cloud), a change history a watch resumes from, compaction (Gone), and faults.
 */
class FakeFeed implements ListWatchClient<Item> {
  revision = 0;
  pageSize = 2;
  readonly items = new Map<string, Item>();
  readonly history: ExternalWatchEvent<Item>[] = [];
  /** A watch from a revision below this is Gone. */
  oldest = 0;
  /** The `since` of every watch call, in order. */
  readonly watchedFrom: (string | number)[] = [];
  readonly watchers = new Set<Watcher>();
  /** Fail the next N list pages / watch calls. */
  failPages = 0;
  failWatches = 0;
  /** Fail once when the page with this index (0-based) is requested. */
  failAtPage: number | undefined;
  /** Called after page N (0-based) was served, before the next is requested. */
  afterPage: ((index: number) => void) | undefined;
  #pageIndex = 0;

  put(name: string, color: string, owner = "us", opts: { lost?: boolean } = {}): Item {
    const type = this.items.has(name) ? "MODIFIED" : "ADDED";
    const id = this.items.get(name)?.id;
    const item = { name, ...(id === undefined ? {} : { id }), color, owner, revision: ++this.revision };
    this.items.set(name, item);
    // A "lost" change is in the collection but never reaches the feed: only a relist can see it.
    if (!opts.lost) this.#publish({ type, object: item, revision: item.revision });
    return item;
  }

  /** Someone renames `from` to `to`: the same object (its id kept), one MODIFIED event. */
  rename(from: string, to: string, opts: { lost?: boolean } = {}): Item {
    const old = this.items.get(from);
    if (!old) throw new Error(`no item ${from}`);
    this.items.delete(from);
    const item = { ...old, name: to, id: old.id ?? from, revision: ++this.revision };
    this.items.set(to, item);
    if (!opts.lost) this.#publish({ type: "MODIFIED", object: item, revision: item.revision });
    return item;
  }

  remove(name: string): void {
    const item = this.items.get(name);
    if (!item) return;
    this.items.delete(name);
    this.#publish({ type: "DELETED", object: item, revision: ++this.revision });
  }

  /** Compacts the history: a watch can resume from the current revision only, not from any older one. */
  expire(): void {
    this.oldest = this.revision;
  }

  /** Ends every open stream, cleanly or with an error. */
  endWatches(error?: Error): void {
    for (const w of [...this.watchers]) w.end(error);
  }

  list(pageToken: string | undefined, signal: AbortSignal): Promise<ListPage<Item>> {
    if (signal.aborted) return Promise.reject(new Error("aborted"));
    if (pageToken === undefined) this.#pageIndex = 0;
    const index = this.#pageIndex++;
    if (index === this.failAtPage) this.failAtPage = undefined;
    else if (this.failPages > 0) this.failPages--;
    else return this.#page(pageToken, index);
    return Promise.reject(new Error("503 Service Unavailable"));
  }

  #page(pageToken: string | undefined, index: number): Promise<ListPage<Item>> {
    const sorted = [...this.items.values()].sort((a, b) => a.name.localeCompare(b.name));
    const page = sorted.filter((i) => pageToken === undefined || i.name > pageToken).slice(0, this.pageSize);
    const last = page.at(-1);
    const more = last !== undefined && sorted.some((i) => i.name > last.name);
    const result: ListPage<Item> = {
      items: page.map((i) => ({ ...i })),
      revision: this.revision,
      ...(more ? { nextPageToken: last.name } : {}),
    };
    // Answer on a later turn of the event loop, like a network call.
    return new Promise((resolve) =>
      setImmediate(() => {
        this.afterPage?.(index);
        resolve(result);
      }),
    );
  }

  watch(
    since: string | number,
    onEvent: (event: ExternalWatchEvent<Item>) => void,
    signal: AbortSignal,
  ): Promise<void> {
    this.watchedFrom.push(since);
    if (this.failWatches > 0) {
      this.failWatches--;
      return Promise.reject(new Error("connection reset"));
    }
    if (Number(since) < this.oldest) return Promise.reject(new GoneError());
    return new Promise<void>((resolve, reject) => {
      const watcher: Watcher = {
        onEvent,
        end: (error) => {
          this.watchers.delete(watcher);
          if (error) reject(error);
          else resolve();
        },
      };
      if (signal.aborted) return resolve();
      signal.addEventListener("abort", () => watcher.end(), { once: true });
      this.watchers.add(watcher);
      for (const event of this.history) {
        if (Number(event.revision) > Number(since)) onEvent(structuredClone(event));
      }
    });
  }

  #publish(event: ExternalWatchEvent<Item>): void {
    this.history.push(structuredClone(event));
    for (const w of this.watchers) w.onEvent(structuredClone(event));
  }
}

let informer: ExternalInformer<Item> | undefined;
afterEach(async () => {
  await informer?.stop();
  informer = undefined;
});

function setup(feed: FakeFeed, options: Partial<ExternalInformerOptions<Item>> = {}) {
  const pages: number[] = [];
  const relists: RelistReason[] = [];
  const watchRestarts: string[] = [];
  const events: string[] = [];
  informer = new ExternalInformer<Item>({
    name: "items",
    client: feed,
    key: (i) => i.name,
    logger: silentLogger(),
    backoff: { initialDelayMs: 5, maxDelayMs: 40 },
    ...options,
    hooks: {
      onListPage: () => pages.push(1),
      onRelist: (_n, reason) => relists.push(reason),
      onWatchRestart: (_n, reason) => watchRestarts.push(reason),
    },
  });
  informer.on("add", (i) => events.push(`add ${i.name} ${i.color}`));
  informer.on("update", (o, n) => events.push(`update ${n.name} ${o.color}->${n.color}`));
  informer.on("delete", (i) => events.push(`delete ${i.name}`));
  return { informer, pages, relists, watchRestarts, events };
}

/** name:color of every item the informer should hold (after `filter`), sorted. */
function state(items: Iterable<Item>, filter: (i: Item) => boolean = () => true): string[] {
  return [...items]
    .filter(filter)
    .map((i) => `${i.name}:${i.color}`)
    .sort();
}

describe("ExternalInformer listing", () => {
  it("lists every page, then watches from the FIRST page's revision", async () => {
    const feed = new FakeFeed();
    for (const name of ["a", "b", "c", "d", "e"]) feed.put(name, "red");
    const { informer, pages, relists, events } = setup(feed);
    const firstPageRevision = feed.revision;
    feed.afterPage = () => feed.put("zz", "late"); // the collection moves while we page
    informer.start();
    expect(await informer.waitForSync()).toBe(true);
    feed.afterPage = undefined;
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(relists).toEqual(["initial"]);
    await vi.waitFor(() => expect(feed.watchedFrom).toEqual([firstPageRevision]), WAIT);
    await vi.waitFor(() => expect(state(informer.list())).toEqual(state(feed.items.values())), WAIT);
    expect(events.filter((e) => e.startsWith("add ")).length).toBeGreaterThanOrEqual(6);
  });

  const betweenPages = [
    {
      reason:
        "an object on a later page deleted while paging: the replayed delete removes nothing it should keep",
      change: (feed: FakeFeed) => feed.remove("d"),
    },
    {
      reason: "an object on an earlier page modified while paging: the replayed change reaches the cache",
      change: (feed: FakeFeed) => feed.put("a", "blue"),
    },
    {
      reason: "an object created before the page cursor while paging: only the watch replay can show it",
      change: (feed: FakeFeed) => feed.put("aa", "green"),
    },
    {
      reason: "an object deleted and recreated while paging: it ends up present, in its new state",
      change: (feed: FakeFeed) => {
        feed.remove("e");
        feed.put("e", "purple");
      },
    },
  ];
  it.each(betweenPages)("converges when $reason", async ({ change }) => {
    const feed = new FakeFeed();
    for (const name of ["a", "b", "c", "d", "e"]) feed.put(name, "red");
    const { informer } = setup(feed);
    feed.afterPage = (index) => {
      if (index === 0) change(feed);
    };
    informer.start();
    await informer.waitForSync();
    await vi.waitFor(() => expect(state(informer.list())).toEqual(state(feed.items.values())), WAIT);
  });

  it("with revisionOf, replaying the changes made while paging never rolls an object back", async () => {
    const feed = new FakeFeed();
    for (const name of ["a", "b", "c", "d"]) feed.put(name, "red");
    const withRevisions = setup(feed, { revisionOf: (i) => i.revision });
    feed.afterPage = (index) => {
      if (index !== 0) return;
      feed.put("d", "orange"); // on page 2, which will show "yellow" already
      feed.put("d", "yellow");
    };
    withRevisions.informer.start();
    await withRevisions.informer.waitForSync();
    await vi.waitFor(() => expect(feed.watchedFrom).toHaveLength(1), WAIT);
    await vi.waitFor(() => expect(withRevisions.informer.get("d")?.color).toBe("yellow"), WAIT);
    feed.put("z", "sentinel"); // delivered after the replay: once seen, the replay was applied
    await vi.waitFor(() => expect(withRevisions.informer.get("z")).toBeDefined(), WAIT);
    expect(withRevisions.events.filter((e) => e.startsWith("update d"))).toEqual([]);
  });

  it("without revisionOf the same replay shows the older state briefly, then converges", async () => {
    const feed = new FakeFeed();
    for (const name of ["a", "b", "c", "d"]) feed.put(name, "red");
    const { informer, events } = setup(feed);
    feed.afterPage = (index) => {
      if (index !== 0) return;
      feed.put("d", "orange");
      feed.put("d", "yellow");
    };
    informer.start();
    await informer.waitForSync();
    feed.put("z", "sentinel");
    await vi.waitFor(() => expect(informer.get("z")).toBeDefined(), WAIT);
    expect(informer.get("d")?.color).toBe("yellow");
    expect(events.filter((e) => e.startsWith("update d"))).toEqual([
      "update d yellow->orange",
      "update d orange->yellow",
    ]);
  });

  it("retries a listing whose second page failed from the first page, and syncs", async () => {
    const feed = new FakeFeed();
    for (const name of ["a", "b", "c"]) feed.put(name, "red");
    feed.pageSize = 1;
    feed.failAtPage = 1;
    const { informer, pages, relists } = setup(feed);
    informer.start();
    expect(await informer.waitForSync()).toBe(true);
    expect(state(informer.list())).toEqual(state(feed.items.values()));
    expect(relists).toEqual(["initial"]);
    expect(pages).toHaveLength(4); // page 0, (page 1 failed), then pages 0, 1, 2
  });
});

describe("ExternalInformer watching", () => {
  it("resumes from the last revision seen after a stream error, with backoff and without relisting", async () => {
    const feed = new FakeFeed();
    feed.put("a", "red");
    const { informer, relists, watchRestarts } = setup(feed);
    informer.start();
    await informer.waitForSync();
    await vi.waitFor(() => expect(feed.watchers.size).toBe(1), WAIT);
    const last = feed.put("b", "green");
    await vi.waitFor(() => expect(informer.get("b")).toBeDefined(), WAIT);

    feed.failWatches = 2; // the next two attempts fail too
    feed.endWatches(new Error("connection reset"));
    feed.put("c", "blue"); // made while no stream is open: the resumed watch replays it
    await vi.waitFor(() => expect(state(informer.list())).toEqual(state(feed.items.values())), WAIT);

    expect(feed.watchedFrom.slice(1)).toEqual([last.revision, last.revision, last.revision]);
    expect(relists).toEqual(["initial"]);
    expect(watchRestarts).toEqual(["connection reset", "connection reset", "connection reset"]);
  });

  it("resumes at once after a clean end that delivered events", async () => {
    const feed = new FakeFeed();
    const { informer, watchRestarts } = setup(feed, { backoff: { initialDelayMs: 60_000 } });
    informer.start();
    await informer.waitForSync();
    await vi.waitFor(() => expect(feed.watchers.size).toBe(1), WAIT);
    feed.put("a", "red");
    feed.endWatches();
    feed.put("b", "red");
    // With a 60 s backoff, seeing "b" proves the resume did not back off.
    await vi.waitFor(() => expect(informer.get("b")).toBeDefined(), WAIT);
    expect(watchRestarts).toEqual(["stream ended"]);
  });

  it("relists on Gone and emits the difference: delete, update, add; nothing for unchanged", async () => {
    const feed = new FakeFeed();
    for (const name of ["a", "b", "c"]) feed.put(name, "red");
    const { informer, relists, events } = setup(feed);
    informer.start();
    await informer.waitForSync();
    await vi.waitFor(() => expect(feed.watchers.size).toBe(1), WAIT);
    events.length = 0;

    feed.failWatches = 1; // the stream breaks and the first resume fails...
    feed.endWatches(new Error("connection reset"));
    feed.remove("a");
    feed.put("b", "blue");
    feed.put("d", "green");
    feed.expire(); // ...and by the next one the history is compacted
    await vi.waitFor(() => expect(relists).toEqual(["initial", "gone"]), WAIT);

    expect(state(informer.list())).toEqual(state(feed.items.values()));
    expect(events.sort()).toEqual(["add d green", "delete a", "update b red->blue"]);
  });

  it("backs off before relisting when the watch is Gone before a single event (no list-Gone hot loop)", async () => {
    const feed = new FakeFeed();
    feed.put("a", "red");
    feed.oldest = Number.POSITIVE_INFINITY; // history shorter than a listing takes: every watch is Gone
    const { informer, relists } = setup(feed, { backoff: { initialDelayMs: 60_000 } });
    informer.start();
    await informer.waitForSync();
    await vi.waitFor(() => expect(feed.watchedFrom).toHaveLength(1), WAIT);
    await informer.stop();
    expect(feed.watchedFrom).toHaveLength(1);
    expect(relists).toEqual(["initial"]);
  });

  it("relists periodically, which repairs a change the feed lost", async () => {
    const feed = new FakeFeed();
    feed.put("a", "red");
    const { informer, relists, events } = setup(feed, { relistPeriodMs: 200 });
    informer.start();
    await informer.waitForSync();
    feed.put("a", "blue", "us", { lost: true });
    await vi.waitFor(() => expect(informer.get("a")?.color).toBe("blue"), WAIT);
    expect(relists).toContain("periodic");
    expect(events).toContain("update a red->blue");
  });

  it("keeps only objects the filter accepts; one that stops matching is reported deleted", async () => {
    const feed = new FakeFeed();
    feed.put("mine", "red", "us");
    feed.put("foreign", "red", "someone-else");
    const owned = (i: Item) => i.owner === "us";
    const { informer, events } = setup(feed, { filter: owned });
    informer.start();
    await informer.waitForSync();
    expect(state(informer.list())).toEqual(["mine:red"]);

    feed.put("mine", "red", "someone-else"); // our owner tag removed
    feed.put("foreign", "red", "us"); // someone handed one to us
    feed.put("foreign2", "red", "someone-else");
    await vi.waitFor(() => expect(state(informer.list())).toEqual(state(feed.items.values(), owned)), WAIT);
    expect(events).toEqual(["add mine red", "delete mine", "add foreign red"]);
  });

  it("caches deep-frozen objects and hands the same to every handler", async () => {
    const feed = new FakeFeed();
    feed.put("a", "red");
    const handed: Item[] = [];
    const { informer } = setup(feed);
    informer.on("add", (i) => handed.push(i));
    informer.on("update", (o, n) => handed.push(o, n));
    informer.start();
    await informer.waitForSync();
    feed.put("a", "blue");
    await vi.waitFor(() => expect(handed).toHaveLength(3), WAIT);
    for (const item of [...handed, ...informer.list()]) expect(Object.isFrozen(item)).toBe(true);
    expect(() => {
      (informer.get("a") as { color: string }).color = "mutated";
    }).toThrow(TypeError);
  });

  it("stop() aborts the stream, resolves pending waits and ends the loop", async () => {
    const feed = new FakeFeed();
    feed.failPages = Number.POSITIVE_INFINITY;
    const first = setup(feed);
    first.informer.start();
    const synced = first.informer.waitForSync();
    await first.informer.stop();
    expect(await synced).toBe(false);

    const feed2 = new FakeFeed();
    const second = setup(feed2);
    second.informer.start();
    await second.informer.waitForSync();
    await vi.waitFor(() => expect(feed2.watchers.size).toBe(1), WAIT);
    await second.informer.stop();
    expect(feed2.watchers.size).toBe(0);
    feed2.put("late", "red");
    expect(second.informer.get("late")).toBeUndefined();
    expect(() => second.informer.start()).toThrow(/cannot start informer items/);
  });
});

describe("ExternalInformer: a DELETED event for an object that left the watched set (contract.ts, ExternalKind.listWatch)", () => {
  it.each([
    {
      reason: "at the revision of the change that removed the mark: the object leaves the cache",
      revision: (was: Item) => was.revision + 1,
      cached: false,
      events: ["delete a"],
    },
    {
      reason: "at the object's own older revision: dropped as stale, the object stays cached",
      revision: (was: Item) => was.revision,
      cached: true,
      events: [],
    },
  ])("$reason", async ({ revision, cached, events: want }) => {
    const feed = new FakeFeed();
    const was = feed.put("a", "red");
    feed.put("control", "red");
    const { informer, events } = setup(feed, { revisionOf: (i) => i.revision });
    informer.start();
    await informer.waitForSync();
    await vi.waitFor(() => expect(feed.watchers.size).toBe(1), WAIT);
    events.length = 0;

    const unmarked = { ...was, owner: "", revision: revision(was) };
    for (const w of feed.watchers) w.onEvent({ type: "DELETED", object: unmarked, revision: revision(was) });
    // A later change, seen: the DELETED before it was applied (or dropped) already.
    feed.put("control", "blue");
    await vi.waitFor(() => expect(informer.get("control")?.color).toBe("blue"), WAIT);
    expect(informer.get("a") !== undefined, "a, cached").toBe(cached);
    expect(events.filter((e) => !e.includes("control"))).toEqual(want);
  });

  it("a DELETED for an object the cache never held changes nothing: an adapter that filters itself may send one for any unmarked object", async () => {
    const feed = new FakeFeed();
    feed.put("a", "red");
    const { informer, events } = setup(feed, { revisionOf: (i) => i.revision });
    informer.start();
    await informer.waitForSync();
    await vi.waitFor(() => expect(feed.watchers.size).toBe(1), WAIT);
    events.length = 0;

    const foreign = { name: "foreign", color: "green", owner: "someone-else", revision: 50 };
    for (const w of feed.watchers) w.onEvent({ type: "DELETED", object: foreign, revision: 50 });
    feed.put("a", "blue");
    await vi.waitFor(() => expect(informer.get("a")?.color).toBe("blue"), WAIT);
    expect(events).toEqual(["update a red->blue"]);
    expect(informer.list().map((i) => i.name)).toEqual(["a"]);
  });
});

describe("ExternalInformer sharded", () => {
  it("keeps one shard, and on reshard drops the rest without events and relists to pick up the new part", async () => {
    const feed = new FakeFeed();
    for (const [name, color] of [
      ["a", "red"],
      ["b", "red"],
      ["c", "blue"],
    ] as const)
      feed.put(name, color);
    const mine = new Set(["red"]);
    const { informer, relists, events } = setup(feed, { shard: { admits: (i) => mine.has(i.color) } });
    expect(await informer.reshard()).toBe(true); // starts it
    expect(state(informer.list())).toEqual(["a:red", "b:red"]);
    feed.put("d", "blue"); // not ours: never cached
    await vi.waitFor(() => expect(feed.revision).toBe(4), WAIT);

    mine.clear();
    mine.add("blue");
    expect(await informer.reshard()).toBe(true);
    expect(state(informer.list())).toEqual(["c:blue", "d:blue"]);
    expect(relists).toContain("reshard");
    // The red ones went to another replica: no delete for them. The blue ones are new to us: adds.
    expect(events.filter((e) => e.startsWith("delete"))).toEqual([]);
    expect(events.filter((e) => e.includes("blue")).sort()).toEqual(["add c blue", "add d blue"]);
    feed.put("c", "blue"); // still watched after the relist
    await vi.waitFor(() => expect(events).toContain("update c blue->blue"), WAIT);
  });

  it("reshards while its watch is backing off after a failure: the relist is not lost", async () => {
    const feed = new FakeFeed();
    for (const [name, color] of [
      ["a", "red"],
      ["c", "blue"],
    ] as const)
      feed.put(name, color);
    const mine = new Set(["red"]);
    const { informer, watchRestarts } = setup(feed, {
      shard: { admits: (i) => mine.has(i.color) },
      backoff: { initialDelayMs: 3_000, maxDelayMs: 3_000 },
    });
    expect(await informer.reshard()).toBe(true);
    await vi.waitFor(() => expect(feed.watchers.size).toBe(1), WAIT);
    feed.endWatches(new Error("connection reset"));
    await vi.waitFor(() => expect(watchRestarts).toHaveLength(1), WAIT); // now in a 3-6 s backoff
    mine.add("blue");
    const started = Date.now();
    expect(await informer.reshard()).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_500); // it did not wait out the backoff
    expect(state(informer.list())).toEqual(["a:red", "c:blue"]);
  });

  it("says it cannot reshard without a shard, and resolves false once stopped", async () => {
    const feed = new FakeFeed();
    const plain = setup(feed);
    await expect(plain.informer.reshard()).rejects.toThrow(/has no shard/);
    await plain.informer.stop();
    const sharded = setup(new FakeFeed(), { shard: { admits: () => true } });
    await sharded.informer.stop();
    expect(await sharded.informer.reshard()).toBe(false);
  });
});

describe("ExternalInformer: our own writes while the cache trails them (no change feed)", () => {
  /** Relists now (the watch says Gone) and waits for the listing to be in the cache. */
  async function relist(feed: FakeFeed, relists: RelistReason[]): Promise<void> {
    const before = relists.length;
    await vi.waitFor(() => expect(feed.watchers.size).toBe(1), WAIT);
    feed.endWatches(new GoneError());
    await vi.waitFor(() => expect(relists.length).toBe(before + 1), WAIT);
  }
  /** An informer over a, b, c (red), with revisions, synced. Changes made `lost` reach no feed: only a listing. */
  async function synced() {
    const feed = new FakeFeed();
    for (const name of ["a", "b", "c"]) feed.put(name, "red");
    const s = setup(feed, { revisionOf: (i) => i.revision });
    s.informer.start();
    await s.informer.waitForSync();
    s.events.length = 0;
    return { feed, ...s };
  }

  it("shows our create until a listing shows it, even through a listing that began before the create", async () => {
    const { feed, informer, relists, events } = await synced();
    informer.wrote(feed.put("z", "green", "us", { lost: true }));
    expect(informer.get("z")?.color).toBe("green");
    expect(state(informer.list())).toEqual(["a:red", "b:red", "c:red", "z:green"]);
    // A listing whose first page predates the create, and whose later pages are past its name.
    feed.afterPage = (index) => {
      if (index === 0) informer.wrote(feed.put("aa", "green", "us", { lost: true }));
    };
    await relist(feed, relists);
    feed.afterPage = undefined;
    expect(informer.get("aa")?.color).toBe("green"); // not in that listing, still shown
    expect(informer.get("z")?.color).toBe("green"); // in it
    await relist(feed, relists);
    expect(state(informer.list())).toEqual(state(feed.items.values()));
    // The events are the listings' own, nothing for the notes.
    expect(events.sort()).toEqual(["add aa green", "add z green"]);
  });

  it("shows our update over the older cached version, and anyone's later change over ours", async () => {
    const { feed, informer, relists } = await synced();
    informer.wrote(feed.put("a", "blue", "us", { lost: true }));
    expect(informer.get("a")?.color).toBe("blue");
    expect(state(informer.list())).toEqual(["a:blue", "b:red", "c:red"]);
    informer.wrote({ ...feed.items.get("a")!, color: "stale", revision: 1 }); // an older answer: ignored
    expect(informer.get("a")?.color).toBe("blue");
    feed.put("a", "yellow", "us", { lost: true }); // someone else's, after ours
    await relist(feed, relists);
    expect(informer.get("a")?.color).toBe("yellow");
  });

  it("forgets our create once a listing at least as new says it is gone (someone deleted it)", async () => {
    const { feed, informer, relists } = await synced();
    informer.wrote(feed.put("z", "green", "us", { lost: true }));
    feed.items.delete("z");
    feed.revision++;
    await relist(feed, relists);
    expect(informer.get("z")).toBeUndefined();
    expect(state(informer.list())).toEqual(["a:red", "b:red", "c:red"]);
  });

  it("hides what we deleted until a listing drops it, and shows a newer object of that name", async () => {
    const { feed, informer, relists } = await synced();
    const a = informer.get("a")!;
    informer.deleted(a);
    expect(informer.get("a")).toBeUndefined();
    expect(state(informer.list())).toEqual(["b:red", "c:red"]);
    await relist(feed, relists); // a listing made before the delete took effect still holds it
    expect(informer.get("a")).toBeUndefined();
    feed.items.delete("a");
    feed.revision++;
    await relist(feed, relists);
    feed.put("a", "purple", "us", { lost: true }); // created again, by someone
    await relist(feed, relists);
    expect(informer.get("a")?.color).toBe("purple");
  });

  it("takes a write the filter drops (our marks removed) as a delete", async () => {
    const { feed, informer } = await synced();
    await informer.stop();
    const owned = setup(feed, { revisionOf: (i) => i.revision, filter: (i) => i.owner === "us" });
    owned.informer.start();
    await owned.informer.waitForSync();
    owned.informer.wrote(feed.put("b", "red", "nobody", { lost: true }));
    expect(owned.informer.get("b")).toBeUndefined();
  });
});

describe("ExternalInformer: renames", () => {
  const idOf = (i: Item) => i.id ?? i.name;

  it("with idOf, an object renamed by a MODIFIED event leaves its old key at once: a delete, then an add", async () => {
    const feed = new FakeFeed();
    feed.put("a", "red");
    const { informer, events } = setup(feed, { idOf, revisionOf: (i) => i.revision });
    informer.start();
    await informer.waitForSync();
    await vi.waitFor(() => expect(feed.watchers.size).toBe(1), WAIT);
    events.length = 0;

    feed.rename("a", "a2");
    await vi.waitFor(() => expect(informer.get("a2")?.color).toBe("red"), WAIT);
    expect(informer.get("a")).toBeUndefined();
    expect(state(informer.list())).toEqual(["a2:red"]);
    expect(events).toEqual(["delete a", "add a2 red"]);
  });

  it("without idOf, the renamed object stays under its old name too until the next listing", async () => {
    const feed = new FakeFeed();
    feed.put("a", "red");
    const { informer } = setup(feed);
    informer.start();
    await informer.waitForSync();
    await vi.waitFor(() => expect(feed.watchers.size).toBe(1), WAIT);
    feed.rename("a", "a2");
    await vi.waitFor(() => expect(informer.get("a2")).toBeDefined(), WAIT);
    expect(informer.get("a")).toBeDefined();
  });

  it("a listing that shows the object under its new name drops the old key (a rename the feed lost)", async () => {
    const feed = new FakeFeed();
    feed.put("a", "red");
    const { informer, events } = setup(feed, { idOf, relistPeriodMs: 200 });
    informer.start();
    await informer.waitForSync();
    events.length = 0;
    feed.rename("a", "a2", { lost: true });
    await vi.waitFor(() => expect(informer.get("a2")).toBeDefined(), WAIT);
    expect(informer.get("a")).toBeUndefined();
    expect(events).toEqual(["delete a", "add a2 red"]);
  });

  it("a change replayed under the old name after the rename never brings the old name back", async () => {
    const feed = new FakeFeed();
    for (const name of ["a", "b", "c", "d"]) feed.put(name, "red");
    const { informer, events } = setup(feed, { idOf, revisionOf: (i) => i.revision });
    feed.afterPage = (index) => {
      if (index !== 0) return;
      feed.put("d", "orange"); // replayed after the listing, older than the rename the listing shows
      feed.rename("d", "e");
    };
    informer.start();
    await informer.waitForSync();
    await vi.waitFor(() => expect(feed.watchedFrom).toHaveLength(1), WAIT);
    feed.put("z", "sentinel"); // delivered after the replay: once seen, the replay was applied
    await vi.waitFor(() => expect(informer.get("z")).toBeDefined(), WAIT);
    expect(informer.get("d")).toBeUndefined();
    expect(informer.get("e")?.color).toBe("orange");
    expect(events.filter((e) => e.includes(" d"))).toEqual([]); // the listing never showed d either
  });

  it("indexed finds the cached objects by their index value through updates, renames and deletes", async () => {
    const feed = new FakeFeed();
    feed.put("a", "red");
    feed.put("b", "red");
    feed.put("c", "blue");
    const { informer } = setup(feed, { idOf, indexOf: (i) => i.color, revisionOf: (i) => i.revision });
    informer.start();
    await informer.waitForSync();
    const names = (color: string) =>
      informer
        .indexed(color)
        .map((i) => i.name)
        .sort();
    expect(names("red")).toEqual(["a", "b"]);
    expect(names("green")).toEqual([]);

    feed.put("b", "green");
    feed.rename("a", "a2");
    feed.remove("c");
    await vi.waitFor(() => expect(names("green")).toEqual(["b"]), WAIT);
    await vi.waitFor(() => expect(names("red")).toEqual(["a2"]), WAIT);
    await vi.waitFor(() => expect(names("blue")).toEqual([]), WAIT);
  });

  it("a deletion of an object cached under its old name removes that key only, never another object's", async () => {
    const feed = new FakeFeed();
    feed.put("b", "blue"); // Y
    feed.put("a", "red"); // X
    const { informer, events } = setup(feed, { idOf, revisionOf: (i) => i.revision });
    informer.start();
    await informer.waitForSync();
    await vi.waitFor(() => expect(feed.watchers.size).toBe(1), WAIT);
    // Two renames the feed lost: the cache still holds X as "a" and Y as "b", though X is now named "b".
    feed.rename("b", "y2", { lost: true });
    feed.rename("a", "b", { lost: true });
    events.length = 0;

    feed.remove("b"); // X is deleted, under its new name "b"
    await vi.waitFor(() => expect(informer.get("a")).toBeUndefined(), WAIT);
    expect(informer.get("b")?.color, "Y, another object, untouched").toBe("blue");
    expect(events).toEqual(["delete a"]);
  });
});

describe("ExternalInformer: a watch that goes silent", () => {
  /**
   * A change feed over real HTTP, one line per message: `data: <event JSON>`, `bookmark: <revision>`, or
   * `: heartbeat`. Each connection is answered by `script` (its index and `since`), which writes what it
   * likes and may then fall silent without closing, as a dead peer behind a proxy does.
   */
  async function feedServer(script: (res: http.ServerResponse, index: number) => void) {
    const watchedFrom: number[] = [];
    const server = http.createServer((req, res) => {
      const since = Number(new URL(req.url ?? "/", "http://x").searchParams.get("since"));
      watchedFrom.push(since);
      res.writeHead(200, { "content-type": "text/plain" });
      res.flushHeaders();
      script(res, watchedFrom.length - 1);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const http_ = new KeepAliveHttp({ baseUrl: `http://127.0.0.1:${port}` });
    const client: ListWatchClient<Item> = {
      list: () => Promise.resolve({ items: [], revision: 0 }),
      watch: async (since, onEvent, signal, onProgress) => {
        // The socket's own idle timeout is far beyond the test: only the informer's bound can end a silence.
        const res = await http_.stream(`/watch?since=${since}`, { signal, idleTimeoutMs: 600_000 });
        let buffered = "";
        try {
          for await (const chunk of res.body) {
            buffered += chunk;
            const lines = buffered.split("\n");
            buffered = lines.pop() ?? "";
            for (const line of lines) {
              if (line.startsWith("data: ")) onEvent(JSON.parse(line.slice(6)) as ExternalWatchEvent<Item>);
              else if (line.startsWith("bookmark: ")) onProgress?.(Number(line.slice(10)));
              else if (line.startsWith(":")) onProgress?.();
            }
          }
        } catch (error) {
          if (!signal.aborted) throw error;
        }
      },
    };
    const close = async () => {
      http_.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    };
    return { client, watchedFrom, close };
  }

  const event = (name: string, revision: number) =>
    `data: ${JSON.stringify({ type: "ADDED", object: { name, color: "red", owner: "us", revision }, revision })}\n`;

  it("drops a stream with no event or heartbeat for watchIdleMs and resumes from its last revision or bookmark", async () => {
    const feed = await feedServer((res, index) => {
      // The first connection brings a change and a bookmark, then falls silent with the socket open.
      if (index === 0) res.write(event("a", 1) + "bookmark: 5\n");
      else res.write(event("b", 6));
    });
    try {
      const { informer, watchRestarts } = setup(new FakeFeed(), { client: feed.client, watchIdleMs: 200 });
      informer.start();
      await vi.waitFor(() => expect(informer.get("b")).toBeDefined(), WAIT);
      expect(informer.get("a")).toBeDefined();
      expect(feed.watchedFrom.slice(0, 2), "resumed after the bookmark, not relisted").toEqual([0, 5]);
      expect(watchRestarts[0]).toBe("idle");
    } finally {
      await informer?.stop();
      await feed.close();
    }
  });

  it("keeps a quiet stream whose heartbeats come within the bound", async () => {
    let heartbeats = 0;
    const feed = await feedServer((res) => {
      const timer = setInterval(() => {
        heartbeats++;
        res.write(": heartbeat\n");
      }, 20);
      res.on("close", () => clearInterval(timer));
    });
    try {
      const { informer, watchRestarts } = setup(new FakeFeed(), { client: feed.client, watchIdleMs: 200 });
      informer.start();
      // Five bounds' worth of heartbeats and no event: still the first stream.
      await vi.waitFor(() => expect(heartbeats).toBeGreaterThanOrEqual(50), WAIT);
      expect(feed.watchedFrom).toEqual([0]);
      expect(watchRestarts).toEqual([]);
    } finally {
      await informer?.stop();
      await feed.close();
    }
  });

  it("refuses a bound that is not positive", () => {
    expect(() => setup(new FakeFeed(), { watchIdleMs: 0 })).toThrow(/idle/);
  });
});

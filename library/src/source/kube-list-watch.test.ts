/**
 * The lean list-watch (kube-list-watch.ts) against the fake API (a real HTTP server speaking the watch wire
 * format): what it asks for (watch-list, or a paged list then a watch; selectors; bookmarks; a jittered
 * timeout), how it resumes (from the last resourceVersion, bookmarks included, after a clean close or an idle
 * stream), how it relists (410 as a status or as an ERROR event), and how it fails (once, in one line, then
 * stopped for the supervisor). The supervisor on top of it is tested in informer.test.ts, on both list-watches.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { KubeHttp } from "../kube/kube-http.ts";
import { FakeKubeApi, type FakeObject, type WatchFault } from "../testing/fake-kube-api.ts";
import { KubeListWatch, type KubeListWatchOptions, type WatchListSupport } from "./kube-list-watch.ts";

const WAIT = { timeout: 20_000, interval: 20 };

let api: FakeKubeApi | undefined;
let http: KubeHttp | undefined;
const running: KubeListWatch<FakeObject>[] = [];

afterEach(async () => {
  for (const lw of running.splice(0)) await lw.stop();
  await http?.close();
  await api?.close();
  api = undefined;
  http = undefined;
});

/** A fake API with three objects, and a list-watch on it recording what it hands over. */
async function setup(
  options: Partial<KubeListWatchOptions<FakeObject>> = {},
  watchLists: "serve" | "refuse" = "serve",
) {
  const fake = await FakeKubeApi.start();
  api = fake;
  fake.watchLists = watchLists;
  fake.put("ns1", "a", { n: 1 });
  fake.put("ns1", "b", { n: 2 });
  fake.put("ns2", "c", { n: 3 });
  http = new KubeHttp(fake.connection());
  const lists: string[][] = [];
  const events: string[] = [];
  const errors: string[] = [];
  const lw = new KubeListWatch<FakeObject>({
    http,
    path: fake.path,
    listed: (list) => lists.push(list.items.map((o) => o.metadata.name).sort()),
    ...options,
  });
  lw.on("add", (o) => events.push(`add ${o.metadata.name}`));
  lw.on("update", (o) => events.push(`update ${o.metadata.name}`));
  lw.on("delete", (o) => events.push(`delete ${o.metadata.name}`));
  lw.on("error", (e) => errors.push(e.message));
  running.push(lw);
  return { api: fake, lw, lists, events, errors };
}

const watches = (api: FakeKubeApi) => api.stats.queries.filter((q) => q.get("watch") === "true");
const plainLists = (api: FakeKubeApi) => api.stats.queries.filter((q) => q.get("watch") !== "true");

describe("KubeListWatch: the first list", () => {
  it.each([
    {
      reason: "the server serves watch-lists: one streamed request, no list, and the support is remembered",
      watchLists: "serve" as const,
      watchList: true,
      plain: 0,
      allowed: true,
    },
    {
      reason:
        "the server refuses them (422, the gate off): a paged list instead, and the refusal is remembered",
      watchLists: "refuse" as const,
      watchList: true,
      plain: 2, // three objects, two per page
      allowed: false,
    },
    {
      reason: "watch-lists turned off: a paged list, the server is never asked",
      watchLists: "serve" as const,
      watchList: false,
      plain: 2,
      allowed: undefined,
    },
  ])("$reason", async ({ watchLists, watchList, plain, allowed }) => {
    const support: WatchListSupport = { allowed: undefined };
    const { api, lw, lists, events } = await setup({ watchList, support, pageSize: 2 }, watchLists);
    await lw.start();
    expect(lists).toEqual([["a", "b", "c"]]);
    expect(events).toEqual([]); // a list is handed over whole, never replayed as events
    expect(plainLists(api)).toHaveLength(plain);
    expect(support.allowed).toBe(allowed);
    // Then it watches: a change arrives as an event.
    api.put("ns1", "d", { n: 4 });
    await vi.waitFor(() => expect(events).toEqual(["add d"]), WAIT);
    // A second list-watch given the same support does not ask again.
    const refused = api.stats.watchListsRefused;
    const again = new KubeListWatch<FakeObject>({ http: http!, path: api.path, support, listed: () => {} });
    running.push(again);
    await again.start();
    expect(api.stats.watchListsRefused).toBe(refused);
  });

  it("sends the selectors with the list and the watch, bookmarks on, and a timeout of 5 to 10 minutes", async () => {
    const { api, lw } = await setup(
      {
        labelSelector: "app=x",
        fieldSelector: "metadata.name!=z",
        shardSelector: "shard(1)",
        watchList: false,
      },
      "serve",
    );
    await lw.start();
    for (const q of api.stats.queries) {
      expect(q.get("labelSelector")).toBe("app=x");
      expect(q.get("fieldSelector")).toBe("metadata.name!=z");
      expect(q.get("shardSelector")).toBe("shard(1)");
    }
    const [watch] = watches(api);
    expect(watch?.get("allowWatchBookmarks")).toBe("true");
    const timeout = Number(watch?.get("timeoutSeconds"));
    expect(timeout).toBeGreaterThanOrEqual(300);
    expect(timeout).toBeLessThanOrEqual(600);
  });

  it("a watch-list asks for the initial events with resourceVersionMatch=NotOlderThan", async () => {
    const { api, lw } = await setup();
    await lw.start();
    const [first] = watches(api);
    expect(first?.get("sendInitialEvents")).toBe("true");
    expect(first?.get("resourceVersionMatch")).toBe("NotOlderThan");
    expect(first?.has("resourceVersion")).toBe(false);
  });
});

interface ResumeCase {
  reason: string;
  watchLists: "serve" | "refuse";
  fault: WatchFault | "idle";
  /** Lists handed over in the end: 1 = resumed, 2 = relisted. */
  lists: number;
}

const resumes: ResumeCase[] = [
  {
    reason: "a clean close: resumes from the last resourceVersion",
    watchLists: "refuse",
    fault: "close",
    lists: 1,
  },
  {
    reason: "a clean close after a watch-list: resumes from its bookmark's resourceVersion",
    watchLists: "serve",
    fault: "close",
    lists: 1,
  },
  {
    reason: "an idle stream (nothing for idleTimeoutMs): aborted and resumed",
    watchLists: "refuse",
    fault: "idle",
    lists: 1,
  },
  { reason: "HTTP 410 on the watch: relists", watchLists: "refuse", fault: 410, lists: 2 },
  { reason: "an ERROR event with code 410: relists", watchLists: "refuse", fault: "gone-event", lists: 2 },
  {
    reason: "an ERROR event with code 410 after a watch-list: a new watch-list",
    watchLists: "serve",
    fault: "gone-event",
    lists: 2,
  },
];

describe("KubeListWatch: resume and relist", () => {
  it.each(resumes)("$reason", async ({ watchLists, fault, lists: expected }) => {
    const { api, lw, lists, events, errors } = await setup({ idleTimeoutMs: 300 }, watchLists);
    await lw.start();
    const opened = api.stats.watches;
    const lastRv = api.objects().reduce((max, o) => Math.max(max, Number(o.metadata.resourceVersion)), 0);
    if (fault === "idle") api.failWatches("silent", 1);
    else api.failWatches(fault, 1);
    api.dropWatches("close"); // the next watch gets the fault
    await vi.waitFor(() => expect(api.stats.watches).toBeGreaterThan(opened + 1), WAIT);
    api.put("ns3", "d", { n: 4 });
    await vi.waitFor(() => expect(events).toContain("add d"), WAIT);
    expect(lists).toHaveLength(expected);
    expect(errors).toEqual([]);
    if (expected === 1) {
      // Every resume asked for what came after the last resourceVersion it had seen.
      const resumed = watches(api).slice(1);
      expect(resumed.map((q) => q.get("resourceVersion"))).toEqual(resumed.map(() => String(lastRv)));
    }
  });
});

describe("KubeListWatch: failures", () => {
  it.each([
    {
      reason: "HTTP 429 on the watch",
      inject: (api: FakeKubeApi) => api.failWatches(429, 1),
      message: `watch /apis/test.example.com/v1/widgets: HTTP 429 TooManyRequests: injected 429`,
    },
    {
      reason: "HTTP 404 on the watch",
      inject: (api: FakeKubeApi) => api.failWatches(404, 1),
      message: `watch /apis/test.example.com/v1/widgets: HTTP 404 NotFound: injected 404`,
    },
    {
      reason: "a garbled line in the stream",
      inject: (api: FakeKubeApi) => api.failWatches("garbled", 1),
      message: `watch /apis/test.example.com/v1/widgets: a line of the stream is not JSON: {"type":"ADDED","object":{"metadata"`,
    },
    {
      reason: "a connection reset mid-watch",
      inject: (api: FakeKubeApi) => api.failWatches("reset", 1),
      message: "watch /apis/test.example.com/v1/widgets: the connection broke mid-stream (aborted)",
    },
  ])(
    "$reason: reported once, in one line naming the step and the collection; then stopped",
    async ({ inject, message }) => {
      const { api, lw, errors } = await setup({}, "refuse");
      await lw.start();
      inject(api);
      api.dropWatches("close");
      await vi.waitFor(() => expect(errors).toEqual([message]), WAIT);
      const requests = api.stats.queries.length;
      api.put("ns1", "z", { n: 9 });
      // Stopped for good: the supervisor restarts it. Nothing is open, nothing more is asked.
      await vi.waitFor(() => expect(api.stats.openWatches).toBe(0), WAIT);
      expect(api.stats.queries.length).toBe(requests);
      expect(errors).toHaveLength(1);
    },
  );

  it.each([
    {
      reason: "a watch-list refused with a status other than 400/422 fails as a watch-list",
      inject: (api: FakeKubeApi) => api.failWatches(503, 1),
      message: "watch-list /apis/test.example.com/v1/widgets: HTTP 503 ServiceUnavailable: injected 503",
    },
    {
      reason: "a watch-list whose initial events were in goes on as a watch, and fails as one",
      inject: (api: FakeKubeApi) => api.failWatches("reset", 1),
      message: "watch /apis/test.example.com/v1/widgets: the connection broke mid-stream (aborted)",
    },
  ])("$reason", async ({ inject, message }) => {
    const { api, lw, errors } = await setup({}, "serve");
    inject(api);
    await lw.start();
    await vi.waitFor(() => expect(errors).toEqual([message]), WAIT);
  });

  it("410 for every watch: relists once, then (410 twice right after a list) one error, no relist loop", async () => {
    const { api, lw, lists, errors } = await setup({}, "refuse");
    await lw.start();
    api.failWatches(410);
    api.dropWatches("close");
    await vi.waitFor(
      () =>
        expect(errors).toEqual([
          "watch /apis/test.example.com/v1/widgets: 410 Gone twice in a row for the resourceVersion a list had just returned",
        ]),
      WAIT,
    );
    expect(lists).toHaveLength(2); // the first, and one after the first 410
  });

  it("watches that end empty at once are resumed after a pause, never in a tight loop", async () => {
    const { api, lw, errors } = await setup({}, "refuse");
    await lw.start();
    const began = Date.now();
    const opened = api.stats.watches;
    api.failWatches("close");
    api.dropWatches("close");
    await vi.waitFor(() => expect(api.stats.watches).toBeGreaterThanOrEqual(opened + 3), WAIT);
    // The first resume follows a watch that was open; the next two follow empty ones: a pause each.
    expect(Date.now() - began).toBeGreaterThanOrEqual(2_000);
    expect(errors).toEqual([]);
  });

  it("a failed list says so: the step is 'list'", async () => {
    const { api, lw, errors } = await setup({}, "refuse");
    api.failLists(500, 1);
    await lw.start();
    expect(errors).toEqual(["list /apis/test.example.com/v1/widgets: HTTP 500 InternalError: injected 500"]);
  });

  it("stop() aborts a watch still waiting for its headers: no zombie watch", async () => {
    const { api, lw } = await setup({}, "refuse");
    api.failWatches("slow", 1);
    void lw.start();
    await vi.waitFor(() => expect(api.stats.openWatches).toBe(1), WAIT);
    await lw.stop();
    await vi.waitFor(() => expect(api.stats.openWatches).toBe(0), WAIT);
    expect(api.stats.slowWatchesAnswered).toBe(0);
  });
});

import { afterEach, describe, expect, it, vi } from "vitest";
import {
  SupervisedInformer,
  type InformerShard,
  type ListReason,
  type RestartBackoffOptions,
} from "./informer.ts";
import { silentLogger } from "../observability/logger.ts";
import { FakeKubeApi, type FakeObject } from "../testing/fake-kube-api.ts";
import { KubeHttp } from "../kube/kube-http.ts";

/**
 * Every test runs on the list-watch over `KubeHttp` (kube-list-watch.ts). The fake API refuses watch-lists here,
 * so each generation lists, then watches (watch-lists have their own tests beside kube-list-watch.ts).
 */
let http: KubeHttp | undefined;

const WAIT = { timeout: 20_000, interval: 20 };

let api: FakeKubeApi | undefined;
let informer: SupervisedInformer<FakeObject> | undefined;

afterEach(async () => {
  await informer?.stop();
  await api?.close();
  await http?.close();
  http = undefined;
  informer = undefined;
  api = undefined;
});

/** Starts a fake API holding three objects, and an informer over it with fast backoff. */
async function setup(
  options: { silenceMs?: number; backoff?: RestartBackoffOptions; shard?: InformerShard<FakeObject> } = {},
) {
  api = await FakeKubeApi.start();
  api.put("ns1", "a", { color: "red" });
  api.put("ns1", "b", { color: "green" });
  api.put("ns2", "c", { color: "blue" });
  const restarts: string[] = [];
  const lists: ListReason[] = [];
  /** The server's list count when each restart began. */
  const listsAtRestart: number[] = [];
  /** The restart count when each list was applied. */
  const restartsAtList: number[] = [];
  api.watchLists = "refuse";
  http = new KubeHttp(api.connection());
  const fake = api;
  informer = new SupervisedInformer<FakeObject>({
    name: "widgets",
    path: api.path,
    http,
    ...(options.shard ? { shard: options.shard } : {}),
    logger: silentLogger(),
    backoff: options.backoff ?? { initialDelayMs: 50, maxDelayMs: 400 },
    silenceMs: options.silenceMs,
    hooks: {
      onRestart: (_name, reason) => {
        listsAtRestart.push(api!.stats.lists);
        restarts.push(reason);
      },
      onList: (_name, reason) => {
        restartsAtList.push(restarts.length);
        lists.push(reason);
      },
    },
  });
  /** The shard selector each list was asked for (read on the server's side). */
  const listSelectors = () =>
    fake.stats.queries
      .filter((q) => q.get("watch") !== "true")
      .map((q) => q.get("shardSelector") ?? undefined);
  return { api, informer, restarts, lists, listsAtRestart, restartsAtList, listSelectors };
}

/** name@resourceVersion of every object, sorted: equal on both sides when the cache has converged. */
function versions(objects: readonly FakeObject[]): string[] {
  return objects
    .map((o) => `${o.metadata.namespace}/${o.metadata.name}@${o.metadata.resourceVersion}`)
    .sort();
}

interface FailureCase {
  reason: string;
  inject: (api: FakeKubeApi) => void;
  /** Does recovery need the supervisor (the list-watch stops for good) or does the list-watch recover by itself? */
  supervisorRestarts: boolean;
  silenceMs?: number;
}

const failures: FailureCase[] = [
  {
    reason: "a connection reset mid-watch makes the list-watch stop for good: the supervisor must restart it",
    inject: (api) => api.dropWatches("reset"),
    supervisorRestarts: true,
  },
  {
    reason: "a watch reset right after the backlog was sent (the stream errors, it does not end)",
    inject: (api) => {
      api.failWatches("reset", 2);
      api.dropWatches("close");
    },
    supervisorRestarts: true,
  },
  ...[401, 403, 429, 500].map((status): FailureCase => ({
    reason: `HTTP ${status} on the watch stops the list-watch for good: the supervisor must restart it`,
    inject: (api) => {
      api.failWatches(status, 2);
      api.dropWatches("close");
    },
    supervisorRestarts: true,
  })),
  {
    reason: "HTTP 500 on the relist after a 410 stops the list-watch for good (a failed list is fatal to it)",
    inject: (api) => {
      api.failLists(500, 2);
      api.expireHistory();
      api.dropWatches("close");
    },
    supervisorRestarts: true,
  },
  {
    reason: "a connection reset during the relist is fatal to the list-watch too",
    inject: (api) => {
      api.failLists("reset", 1);
      api.expireHistory();
      api.dropWatches("close");
    },
    supervisorRestarts: true,
  },
  {
    reason: "a watch that stays silent (headers, then nothing) is restarted by the watchdog",
    inject: (api) => {
      api.failWatches("silent", 1);
      api.dropWatches("close");
    },
    supervisorRestarts: true,
    silenceMs: 1_000,
  },
  {
    reason: "HTTP 410 on the watch: the list-watch relists by itself, no restart needed",
    inject: (api) => {
      api.failWatches(410, 1);
      api.dropWatches("close");
    },
    supervisorRestarts: false,
  },
  {
    reason: "an ERROR event with code 410 in the stream: the list-watch relists by itself",
    inject: (api) => {
      api.failWatches("gone-event", 1);
      api.dropWatches("close");
    },
    supervisorRestarts: false,
  },
  {
    reason: "a watch resumed from a compacted resourceVersion gets 410 like kube-apiserver's: relist",
    inject: (api) => {
      api.expireHistory();
      api.dropWatches("close");
    },
    supervisorRestarts: false,
  },
  {
    reason: "watches that close cleanly are resumed by the list-watch from the last resourceVersion",
    inject: (api) => {
      api.failWatches("close", 3);
      api.dropWatches("close");
    },
    supervisorRestarts: false,
  },
];

describe("on the list-watch", () => {
  describe("SupervisedInformer recovers from every failure", () => {
    it.each(failures)("$reason", async ({ inject, supervisorRestarts, silenceMs }) => {
      const { api, informer, restarts } = await setup({ silenceMs });
      await informer.start();
      expect(await informer.waitForSync()).toBe(true);
      expect(versions(informer.list())).toEqual(versions(api.objects()));

      inject(api);
      // The failure happened: the server served a fault, or the informer had to list again.
      await vi.waitFor(() => expect(api.stats.faults > 0 || api.stats.lists > 1).toBe(true), WAIT);
      // Change the world while the informer is failing or recovering.
      api.put("ns1", "a", { color: "purple" });
      api.remove("ns1", "b");
      api.put("ns3", "d", { color: "yellow" });
      await vi.waitFor(() => expect(versions(informer.list())).toEqual(versions(api.objects())), WAIT);
      api.heal();
      // The watch is live again: a later change arrives without any further fault.
      api.put("ns3", "e", { color: "orange" });
      await vi.waitFor(() => expect(versions(informer.list())).toEqual(versions(api.objects())), WAIT);

      if (supervisorRestarts) expect(restarts.length).toBeGreaterThan(0);
      else expect(restarts).toEqual([]);
      // Never two watches or two lists at once: no restart storm, no zombie list-watch loop.
      expect(api.stats.maxOpenWatches).toBe(1);
      expect(api.stats.maxOpenLists).toBe(1);
    });
  });

  describe("SupervisedInformer supervision", () => {
    it("restarts strictly one after another: each restart begins after the previous one listed again", async () => {
      const { api, informer, restarts, listsAtRestart } = await setup();
      api.failWatches(500);
      await informer.start();
      expect(await informer.waitForSync()).toBe(true);
      await vi.waitFor(() => expect(restarts.length).toBeGreaterThanOrEqual(5), WAIT);
      // Restart k began when generation k (1 list, 1 failed watch) failed: never two in flight, never a storm.
      expect(listsAtRestart.slice(0, 5)).toEqual([1, 2, 3, 4, 5]);
      expect(api.stats.maxOpenWatches).toBe(1);
      expect(api.stats.maxOpenLists).toBe(1);

      api.heal();
      api.put("ns1", "z", { color: "black" });
      await vi.waitFor(() => expect(informer.get("z", "ns1")).toBeDefined(), WAIT);
    });

    it("the watchdog does not pile a restart onto one already waiting out its backoff", async () => {
      const { api, informer, lists, restartsAtList } = await setup({
        silenceMs: 400,
        backoff: { initialDelayMs: 3_000, jitter: 0 },
      });
      await informer.start();
      await informer.waitForSync();
      api.failWatches(500, 1);
      api.dropWatches("close");
      await vi.waitFor(() => expect(lists).toContain("restart"), WAIT);
      // During the 3 s backoff the watchdog saw silence many times; it still was one restart.
      expect(lists).toEqual(["initial", "restart"]);
      expect(restartsAtList).toEqual([0, 1]);
    });

    it("syncs even when the first lists fail", async () => {
      const { api, informer, restarts, lists } = await setup();
      api.failLists(503, 2);
      await informer.start();
      expect(await informer.waitForSync()).toBe(true);
      expect(versions(informer.list())).toEqual(versions(api.objects()));
      expect(restarts).toHaveLength(2);
      expect(lists).toEqual(["restart"]);
    });

    it("stop() resolves pending waitForSync with false, cancels the pending restart and closes the watch", async () => {
      const { api, informer } = await setup();
      api.failLists(500);
      await informer.start();
      const synced = informer.waitForSync();
      await informer.stop();
      expect(await synced).toBe(false);
      expect(informer.hasSynced()).toBe(false);
      await expect(informer.start()).rejects.toThrow(/cannot start informer widgets/);
    });

    it("stop() after sync closes the watch and keeps the cache readable", async () => {
      const { api, informer } = await setup();
      await informer.start();
      await informer.waitForSync();
      await vi.waitFor(() => expect(api.stats.openWatches).toBe(1), WAIT);
      await informer.stop();
      await vi.waitFor(() => expect(api.stats.openWatches).toBe(0), WAIT);
      expect(informer.list()).toHaveLength(3);
    });
  });

  describe("SupervisedInformer cache", () => {
    it("holds deep-frozen objects without managedFields, in the cache and in every handler", async () => {
      const { api, informer } = await setup();
      const handed: FakeObject[] = [];
      informer.on("add", (obj) => handed.push(obj));
      informer.on("update", (oldObj, newObj) => handed.push(oldObj, newObj));
      informer.on("delete", (obj) => handed.push(obj));
      await informer.start();
      await informer.waitForSync();
      api.put("ns1", "a", { color: "pink", nested: { deep: [1, 2] } });
      api.remove("ns2", "c");
      await vi.waitFor(() => expect(versions(informer.list())).toEqual(versions(api.objects())), WAIT);

      const cached = informer.get("a", "ns1");
      expect(cached?.spec).toEqual({ color: "pink", nested: { deep: [1, 2] } });
      expect(handed.length).toBeGreaterThanOrEqual(6); // 3 adds, update (old + new), delete
      for (const obj of [...informer.list(), ...handed]) {
        expect(obj.metadata.managedFields).toBeUndefined();
        expect(Object.isFrozen(obj)).toBe(true);
        expect(Object.isFrozen(obj.metadata)).toBe(true);
        expect(Object.isFrozen(obj.spec)).toBe(true);
      }
      expect(() => {
        (cached!.spec as { color: string }).color = "mutated";
      }).toThrow(TypeError);
      expect(() => {
        (cached!.spec.nested as { deep: number[] }).deep.push(3);
      }).toThrow(TypeError);
    });

    it("after a restart delivers only the differences: delete, update(old, new), add; nothing for unchanged", async () => {
      const { api, informer, restarts } = await setup();
      const events: string[] = [];
      informer.on("add", (obj) => events.push(`add ${obj.metadata.name}`));
      informer.on("update", (o, n) =>
        events.push(`update ${n.metadata.name} ${String(o.spec.color)}->${String(n.spec.color)}`),
      );
      informer.on("delete", (obj) => events.push(`delete ${obj.metadata.name}`));
      await informer.start();
      await informer.waitForSync();
      expect(events.sort()).toEqual(["add a", "add b", "add c"]);
      events.length = 0;

      // Break every watch, change the world while the informer cannot watch, then let it recover.
      api.failWatches(500);
      api.dropWatches("reset");
      await vi.waitFor(() => expect(restarts.length).toBeGreaterThan(0), WAIT);
      api.put("ns1", "a", { color: "purple" });
      api.remove("ns1", "b");
      api.put("ns3", "d", { color: "yellow" });
      api.heal();
      await vi.waitFor(() => expect(versions(informer.list())).toEqual(versions(api.objects())), WAIT);

      expect(events.sort()).toEqual(["add d", "delete b", "update a red->purple"]);
    });

    it("a 410 relist with no change emits nothing", async () => {
      const { api, informer, lists } = await setup();
      const events: string[] = [];
      informer.on("add", (obj) => events.push(`add ${obj.metadata.name}`));
      informer.on("update", (_o, n) => events.push(`update ${n.metadata.name}`));
      informer.on("delete", (obj) => events.push(`delete ${obj.metadata.name}`));
      await informer.start();
      await informer.waitForSync();
      events.length = 0;
      api.expireHistory();
      api.dropWatches("close");
      await vi.waitFor(() => expect(lists).toEqual(["initial", "expired"]), WAIT);
      expect(events).toEqual([]);
    });

    it("serves get and list by namespace", async () => {
      const { informer } = await setup();
      await informer.start();
      await informer.waitForSync();
      expect(informer.get("a", "ns1")?.spec.color).toBe("red");
      expect(informer.get("a", "ns2")).toBeUndefined();
      expect(
        informer
          .list("ns1")
          .map((o) => o.metadata.name)
          .sort(),
      ).toEqual(["a", "b"]);
      expect(informer.list("nope")).toEqual([]);
      expect(informer.list()).toHaveLength(3);
    });
  });

  describe("SupervisedInformer sharded", () => {
    it("keeps one shard, and on reshard drops the rest without events and relists to pick up the new part", async () => {
      const mine = new Set(["ns1"]);
      const events: string[] = [];
      // The fake API ignores the selector, like an API server without the feature: our side filters.
      const { api, informer, listSelectors } = await setup({
        shard: { admits: (o) => mine.has(o.metadata.namespace), selector: () => `ns in ${[...mine].join()}` },
      });
      informer.on("add", (o) => events.push(`add ${o.metadata.name}`));
      informer.on("delete", (o) => events.push(`delete ${o.metadata.name}`));
      expect(await informer.reshard()).toBe(true); // starts it
      expect(informer.list().map((o) => o.metadata?.name)).toEqual(["a", "b"]);
      api.put("ns2", "d", { color: "pink" }); // not ours: never cached
      api.put("ns1", "a", { color: "orange" }); // ours: the watch still delivers
      await vi.waitFor(() => expect(informer?.get("a", "ns1")?.spec).toEqual({ color: "orange" }), WAIT);
      expect(informer.get("d", "ns2")).toBeUndefined();

      mine.clear();
      mine.add("ns2");
      expect(await informer.reshard()).toBe(true);
      expect(versions(informer.list())).toEqual(
        versions(api.objects().filter((o) => o.metadata.namespace === "ns2")),
      );
      expect(listSelectors()).toEqual(["ns in ns1", "ns in ns2"]);
      // ns1 went to another replica: no delete for it. ns2 is new to us: adds.
      expect(events).toEqual(["add a", "add b", "add c", "add d"]);
    });

    it("reshards while it is restarting after errors, and comes back once the API answers", async () => {
      const mine = new Set(["ns1"]);
      const { api, informer } = await setup({
        shard: { admits: (o) => mine.has(o.metadata.namespace), selector: () => undefined },
        backoff: { initialDelayMs: 200, maxDelayMs: 400 },
      });
      expect(await informer.reshard()).toBe(true);
      // The API server goes away (a restart): every list fails, so the informer is in its restart backoff...
      api.failLists(503);
      api.dropWatches("reset");
      await new Promise((resolve) => setTimeout(resolve, 300));
      // ...when the ring hands it a new part. The reshard's own list fails too; then the API comes back.
      mine.add("ns2");
      const resharded = informer.reshard();
      await new Promise((resolve) => setTimeout(resolve, 300));
      api.heal();
      expect(await resharded).toBe(true);
      expect(informer.list().map((o) => o.metadata?.name)).toEqual(["a", "b", "c"]);
    });

    it("says it cannot reshard without a shard", async () => {
      const { informer } = await setup();
      await expect(informer.reshard()).rejects.toThrow(/has no shard/);
    });
  });
});

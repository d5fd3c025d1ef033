/**
 * The handlers' predicate (`reconcileWorthy`) and key (`keyOf`), over plain managed resources: the core
 * knows no plugin, so neither does this test; the write-through of our cloud writes to the cache; and what an
 * event of the external cache hands on (`externalEventHandler`).
 */
import { describe, expect, it } from "vitest";
import type { ManagedResource } from "./reconcile/contract.ts";
import { externalEventHandler, keyOf, reconcileWorthy, writeThrough } from "./controllers.ts";
import { silentLogger } from "./observability/logger.ts";
import { ExternalResourceReconciler } from "./reconcile/reconciler.ts";
import { CacheEvents, onEveryEvent } from "./source/cache-events.ts";
import { ExternalInformer } from "./source/external-informer.ts";
import { OwnWrites } from "./source/own-writes.ts";
import {
  ItemApiError,
  WIDGET_FINALIZER,
  WidgetWorld,
  aWidget,
  aWidgetRef,
  type Item,
  type Widget,
} from "./testing/fake-plugin.ts";
import { resultSummary } from "./testing/fake-world.ts";

const FINALIZER = "example.com/external";
const base: ManagedResource = {
  apiVersion: "example.com/v1",
  kind: "Widget",
  metadata: {
    name: "foo",
    namespace: "default",
    uid: "uid-foo",
    generation: 1,
    resourceVersion: "100",
    finalizers: [FINALIZER],
    annotations: { team: "a" },
  },
  spec: {},
};
const changed = (
  meta: Partial<ManagedResource["metadata"]>,
  rest: Partial<ManagedResource> = {},
): ManagedResource => ({
  ...base,
  ...rest,
  metadata: { ...base.metadata, resourceVersion: "101", ...meta },
});

describe("reconcileWorthy", () => {
  it.each<{ reason: string; next: ManagedResource; worthy: boolean }>([
    {
      reason:
        "regression: a status-only update (our own write echoing back) is no reason to reconcile, or a failing resource would be retried at once, ignoring its backoff and the external API's Retry-After",
      next: changed({}, { status: { conditions: [], observedGeneration: 1 } }),
      worthy: false,
    },
    {
      reason: "a spec change (new generation) is reconciled",
      next: changed({ generation: 2 }),
      worthy: true,
    },
    {
      reason: "a new refresh annotation forces a reconcile",
      next: changed({ annotations: { team: "a", "example.com/refresh": "1" } }),
      worthy: true,
    },
    {
      reason: "pausing or unpausing is reconciled (the condition must say so)",
      next: changed({ annotations: { team: "a", "example.com/paused": "true" } }),
      worthy: true,
    },
    {
      reason: "a finalizer stripped by hand is reconciled (put back, or the deletion handled)",
      next: changed({ finalizers: [] }),
      worthy: true,
    },
    {
      reason: "a deletion (deletionTimestamp set) is reconciled",
      next: changed({ deletionTimestamp: new Date("2026-01-01T00:00:00Z") }),
      worthy: true,
    },
    {
      reason: "a resource replaced by a namesake (another uid) is reconciled",
      next: changed({ uid: "uid-new" }),
      worthy: true,
    },
  ])("$reason", ({ next, worthy }) => {
    expect(reconcileWorthy(base, next)).toBe(worthy);
  });
});

describe("keyOf", () => {
  it("is namespace/name", () => {
    expect(keyOf(changed({ namespace: "team-a", name: "web.v2" }))).toBe("team-a/web.v2");
  });
});

describe("writeThrough", () => {
  const ours = { owner: "k8s", uid: "uid-foo" };
  /**
   * A Widget world whose reconciler reads the list-watch cache of the fake API, which has no change feed: the cache learns of a change only at a listing, and none comes during the test.
   */
  async function noFeed(w: WidgetWorld) {
    const informer = new ExternalInformer<Item>({
      name: "items",
      client: w.plugin.external.listWatch("k8s"),
      key: (i) => i.name,
      revisionOf: (i) => i.revision,
      relistPeriodMs: 3_600_000,
      logger: silentLogger(),
    });
    informer.start();
    await informer.waitForSync();
    w.calls.length = 0; // its listing
    const reconciler = new ExternalResourceReconciler<Widget, Item>({
      ...w.deps(),
      cache: {
        get: (n) => informer.get(n),
        list: () => informer.list(),
        withUid: (u) => informer.indexed(u),
      },
      client: writeThrough(w.client, informer),
    });
    const reconcile = async () =>
      resultSummary(await reconciler.reconcile("default/foo", new AbortController().signal));
    return { informer, reconcile };
  }

  it("regression: a resync after our create, before the next listing, writes nothing (it used to create again: 409, a read, an adoption)", async () => {
    const w = new WidgetWorld();
    w.resourceObjects.set("default/foo", aWidget());
    const { informer, reconcile } = await noFeed(w);
    expect(await reconcile()).toBe("done");
    expect(w.calls).toContain("items.create default.foo");
    w.calls.length = 0;
    expect(await reconcile()).toBe("done"); // the periodic resync; the cache has not listed since
    expect(w.calls).toEqual([]);
    await informer.stop();
  });

  it("regression: a resync after our drift repair, before the next listing, writes nothing (it used to patch the stale revision again: 412, Synced=False)", async () => {
    const w = new WidgetWorld();
    w.resourceObjects.set(
      "default/foo",
      aWidget({ finalizers: [WIDGET_FINALIZER], status: { observedGeneration: 1 } }),
    );
    w.intentObjects.set("default.foo", aWidgetRef());
    w.api.put({ id: "i1", name: "default.foo", size: 7, tags: ours }); // someone resized it
    const { informer, reconcile } = await noFeed(w);
    expect(await reconcile()).toBe("done");
    expect(w.calls.filter((c) => c.startsWith("items."))).toEqual(['items.update i1 {"size":1}']);
    w.calls.length = 0;
    expect(await reconcile()).toBe("done");
    expect(w.calls).toEqual([]);
    await informer.stop();
  });

  it("tells the cache what our delete and release did, also when the object was gone already", async () => {
    const notes: string[] = [];
    const w = new WidgetWorld();
    const a = w.api.put({ id: "i1", name: "default.a", size: 1, tags: ours });
    const b = w.api.put({ id: "i2", name: "default.b", size: 1, tags: ours });
    const client = writeThrough(w.client, {
      wrote: (i) => notes.push(`wrote ${i.name}`),
      deleted: (i) => notes.push(`deleted ${i.name}`),
    });
    const signal = new AbortController().signal;
    await client.delete(a, signal);
    await expect(client.delete(a, signal)).rejects.toThrow(/not found/);
    await client.release(b, signal);
    w.api.fail("update", new ItemApiError(412, "changed"));
    await expect(client.update(b, { size: 2 }, signal)).rejects.toThrow(/changed/);
    expect(notes).toEqual(["deleted default.a", "deleted default.a", "deleted default.b"]);
  });
});

describe("the external cache's events (externalEventHandler over onEveryEvent)", () => {
  /** An item as the cache holds it: a name and a revision are all the handler reads. */
  interface Obj {
    name: string;
    revision: number;
  }
  const kind = { nameOf: (o: Obj) => o.name, revisionOf: (o: Obj) => o.revision };
  /** The three events wired as createExternalResourceControllers wires them; what got handed on. */
  const wire = () => {
    const handlers = new CacheEvents<Obj>(silentLogger());
    const echoes = new OwnWrites();
    const handedOn: string[] = [];
    onEveryEvent(
      handlers,
      externalEventHandler(kind, echoes, (name, event) => handedOn.push(`${event} ${name}`)),
    );
    return { handlers, echoes, handedOn };
  };
  /** Our update to `name`, answered at `revision`; `meanwhile` runs while it is in flight. */
  const ourUpdate = (echoes: OwnWrites, name: string, revision: number, meanwhile: () => void) =>
    echoes.write(
      name,
      () => {
        meanwhile();
        return Promise.resolve({ name, revision });
      },
      (answer) => String(answer.revision),
    );

  it("regression: a person's edit right after our update is handed on, when our echo came while the write was in flight (it was dropped as our echo: the update handler was offered the OLD object's revision)", async () => {
    const { handlers, echoes, handedOn } = wire();
    await ourUpdate(echoes, "a", 11, () =>
      handlers.emitUpdate({ name: "a", revision: 10 }, { name: "a", revision: 11 }),
    );
    expect(handedOn, "our own update's echo").toEqual([]);
    handlers.emitUpdate({ name: "a", revision: 11 }, { name: "a", revision: 12 });
    expect(handedOn, "the person's edit").toEqual(["update a"]);
  });

  it("regression: the echo of our update, after its answer, is dropped (it was always reconciled again)", async () => {
    const { handlers, echoes, handedOn } = wire();
    await ourUpdate(echoes, "a", 11, () => {});
    handlers.emitUpdate({ name: "a", revision: 10 }, { name: "a", revision: 11 });
    expect(handedOn).toEqual([]);
  });

  it.each<{ reason: string; emit: (h: CacheEvents<Obj>) => void; handedOn: string[] }>([
    {
      reason: "an object that appears, not written by us, is handed on",
      emit: (h) => h.emitAdd({ name: "b", revision: 3 }),
      handedOn: ["add b"],
    },
    {
      reason: "an update nobody here wrote is handed on, by its new object's name",
      emit: (h) => h.emitUpdate({ name: "b", revision: 3 }, { name: "b", revision: 4 }),
      handedOn: ["update b"],
    },
    {
      reason: "a deletion is always handed on: there is no echo to drop",
      emit: (h) => h.emitDelete({ name: "b", revision: 4 }),
      handedOn: ["delete b"],
    },
  ])("$reason", ({ emit, handedOn }) => {
    const wired = wire();
    emit(wired.handlers);
    expect(wired.handedOn).toEqual(handedOn);
  });
});

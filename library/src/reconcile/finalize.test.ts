/**
 * Deletion, one row per exit: the item deleted (Delete) or released (Orphan, an uninstall), then the intent
 * record, then the finalizer; each failure on the way keeps the finalizer. After the table: an uninstall in
 * the words a person reads, and a deletion this process already finished.
 */
import { describe, expect, it } from "vitest";
import {
  WidgetWorld,
  aWidget,
  aWidgetRef,
  ItemApiError,
  type Item,
  type Widget,
} from "../testing/fake-plugin.ts";
import { kubeError, resultSummary } from "../testing/fake-world.ts";
import { ExternalResourceReconciler } from "./reconciler.ts";
import {
  reconcileRow,
  ours,
  converged,
  settled,
  type Row,
  ORPHAN,
  uninstalling,
  looselyFiltered,
} from "./reconciler-rows.test-support.ts";

const rows: Row[] = [
  {
    reason: "deleting with Delete: item, then intent record, then finalizer (and the Widget is gone)",
    setup: (w) => converged(w, settled({ deleting: true })),
    result: "done",
    conditions: [],
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["DeletedItem"],
  },
  {
    reason: "deleting with Delete reads the CRD first (once): present and not being deleted, so it deletes",
    setup: (w) => converged(w, settled({ deleting: true })),
    result: "done",
    conditions: [],
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["DeletedItem"],
    definitionReads: 1,
  },
  {
    reason:
      "deleting with Delete while the CRD is being deleted (an uninstall): the item is released, not deleted",
    setup: (w) => {
      uninstalling(w);
      return converged(w, settled({ deleting: true }));
    },
    result: "done",
    conditions: [],
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["ReleasedOnUninstall"],
    definitionReads: 1,
  },
  {
    reason: "deleting with Delete when the CRD is gone (404): an uninstall too, released, not deleted",
    setup: (w) => {
      w.definition = undefined;
      return converged(w, settled({ deleting: true }));
    },
    result: "done",
    conditions: [],
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["ReleasedOnUninstall"],
  },
  {
    reason:
      "the CRD cannot be read (403, no grant): nothing deleted on a guess, failed, Synced=False CannotCheckUninstall",
    setup: (w) => {
      w.kubeFailures.set("readDefinition", kubeError(403, "forbidden"));
      return converged(w, settled({ deleting: true }));
    },
    result: "failed",
    conditions: ["Ready=False Deleting", "Synced=False CannotCheckUninstall"],
    calls: ["kube.updateStatus"],
    events: [],
  },
  {
    reason: "the CRD read fails (500): nothing deleted, failed and retried, the finalizer stays",
    setup: (w) => {
      w.kubeFailures.set("readDefinition", kubeError(500, "etcd timeout"));
      return converged(w, settled({ deleting: true }));
    },
    result: "failed",
    conditions: ["Ready=False Deleting", "Synced=False CannotCheckUninstall"],
    calls: ["kube.updateStatus"],
  },
  {
    reason:
      "started with deleteOnUninstall: Delete deletes even while the CRD is being deleted, without reading it",
    setup: (w) => {
      uninstalling(w);
      return converged(w, settled({ deleting: true }));
    },
    deps: () => ({ deleteOnUninstall: true }),
    result: "done",
    conditions: [],
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["DeletedItem"],
    definitionReads: 0,
  },
  {
    reason: "deleting with Orphan during an uninstall: released as ever (OrphanedItem), the CRD not read",
    setup: (w) => {
      uninstalling(w);
      return converged(w, settled({ deleting: true, deletionPolicy: "Orphan" }));
    },
    result: "done",
    conditions: [],
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["OrphanedItem"],
    definitionReads: 0,
  },
  {
    reason: "deleting with Delete when no item of ours exists: nothing to delete, the CRD not read",
    setup: (w) => {
      uninstalling(w);
      w.intentObjects.set("default.foo", aWidgetRef());
      return settled({ deleting: true });
    },
    result: "done",
    conditions: [],
    calls: ["items.getByName default.foo", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    definitionReads: 0,
  },
  {
    reason:
      "deleting with Delete, the API filtering owners loosely: its cache holds another owner's item with our name and uid, never deleted",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "f1", name: "default.foo", size: 1, tags: { owner: "someone-else", uid: "uid-foo" } });
      return settled({ deleting: true });
    },
    deps: (w) => ({ cache: looselyFiltered(w) }),
    result: "done",
    conditions: [],
    calls: ["kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: [],
  },
  {
    reason:
      "deleting with Orphan, the API filtering owners loosely: another owner's item with our uid is not released (its owner tags are not ours to remove)",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef("uid-foo", { deletionPolicy: "Orphan" }));
      w.api.put({ id: "f1", name: "default.foo", size: 1, tags: { owner: "someone-else", uid: "uid-foo" } });
      return settled({ deleting: true, deletionPolicy: "Orphan" });
    },
    deps: (w) => ({ cache: looselyFiltered(w) }),
    result: "done",
    conditions: [],
    calls: ["kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: [],
  },
  {
    reason:
      "deleting with Delete, the API filtering owners loosely: our item under an earlier owner id of ours is still ours, deleted",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: { owner: "old", uid: "uid-foo" } });
      return settled({ deleting: true });
    },
    deps: (w) => ({ cache: looselyFiltered(w), adoptOwnerIds: ["old"] }),
    result: "done",
    conditions: [],
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["DeletedItem"],
  },
  {
    reason:
      "the release during an uninstall fails (503): failed, Synced=False CannotDeleteItem, the finalizer stays",
    setup: (w) => {
      uninstalling(w);
      w.api.fail("release", new ItemApiError(503, "unavailable", 1_000));
      return converged(w, settled({ deleting: true }));
    },
    result: "failed:1000",
    conditions: ["Ready=False Deleting", "Synced=False CannotDeleteItem"],
    calls: ["items.release i1", "kube.updateStatus"],
    events: [],
  },
  {
    reason:
      "deleting, its deletionPolicy switched to Orphan since the last reconcile: the record first (a finalizer stripped now still orphans), then the item released",
    setup: (w) => converged(w, settled({ deleting: true, deletionPolicy: "Orphan" }), {}, "Delete"),
    result: "done",
    conditions: [],
    calls: [
      `kube.updateWidgetRefSpec default.foo ${ORPHAN}`,
      "items.release i1",
      "kube.deleteWidgetRef default.foo",
      "kube.removeFinalizer",
    ],
    events: ["OrphanedItem"],
  },
  {
    reason: "deleting with Orphan: the item stays without our owner tags",
    setup: (w) => converged(w, settled({ deleting: true, deletionPolicy: "Orphan" })),
    result: "done",
    conditions: [],
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["OrphanedItem"],
  },
  {
    reason: "deleting when someone deleted the item first (404): what we wanted, no event",
    setup: (w) => {
      const widget = converged(w, settled({ deleting: true }));
      w.api.fail("delete", new ItemApiError(404, "not found"));
      return widget;
    },
    result: "done",
    conditions: [],
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: [],
  },
  {
    reason: "deleting without our finalizer: not ours to hold",
    setup: () => aWidget({ deleting: true, finalizers: ["someone.else/f"] }),
    result: "done",
    conditions: [],
    calls: [],
  },
  {
    reason: "deleting with Delete, the item renamed behind our back: the renamed item is deleted",
    setup: (w) => converged(w, settled({ deleting: true }), { name: "default.foo-old" }),
    result: "done",
    conditions: [],
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["DeletedItem"],
  },
  {
    reason: "deleting with Orphan, the item renamed behind our back: the renamed item is released",
    setup: (w) =>
      converged(w, settled({ deleting: true, deletionPolicy: "Orphan" }), { name: "default.foo-old" }),
    result: "done",
    conditions: [],
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["OrphanedItem"],
  },
  {
    reason: "the delete is throttled (503, Retry-After): failed, CannotDeleteItem, finalizer stays",
    setup: (w) => {
      const widget = converged(w, settled({ deleting: true }));
      w.api.fail("delete", new ItemApiError(503, "unavailable", 2_000));
      return widget;
    },
    result: "failed:2000",
    conditions: ["Ready=False Deleting", "Synced=False CannotDeleteItem"],
    calls: ["items.delete i1", "kube.updateStatus"],
  },
  {
    reason: "the intent record delete fails: failed, CannotRecordIntent, finalizer stays",
    setup: (w) => {
      w.kubeFailures.set("deleteIntent", kubeError(500, "etcd timeout"));
      return converged(w, settled({ deleting: true }));
    },
    result: "failed",
    conditions: ["Ready=False Deleting", "Synced=False CannotRecordIntent"],
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo", "kube.updateStatus"],
  },
  {
    reason: "the finalizer removal meets a change (409): failed, CannotRemoveFinalizer",
    setup: (w) => {
      w.kubeFailures.set("removeFinalizer", kubeError(409, "modified"));
      return converged(w, settled({ deleting: true }));
    },
    result: "failed",
    conditions: ["Ready=False Deleting", "Synced=False CannotRemoveFinalizer"],
  },
  {
    reason: "deleting while the cache trails, and the live read fails: Deleting, CannotObserveItem",
    setup: (w) => {
      const widget = converged(w, settled({ deleting: true }));
      w.hiddenFromCache.add("i1");
      w.api.fail("getByName", new ItemApiError(503, "unavailable"));
      return widget;
    },
    result: "failed",
    conditions: ["Ready=False Deleting", "Synced=False CannotObserveItem"],
    calls: ["items.getByName default.foo", "kube.updateStatus"],
  },
];

describe("finalize: every exit", () => {
  it.each(rows)("$reason", reconcileRow);
});

describe("ExternalResourceReconciler: an uninstall, in words", () => {
  /** Deletes the converged widget `default/foo` in `world` and returns what a person reads. */
  async function finalize(world: WidgetWorld) {
    const widget = converged(world, settled({ deleting: true }));
    world.resourceObjects.set("default/foo", widget);
    const reconciler = new ExternalResourceReconciler<Widget, Item>({
      ...world.deps(),
      resources: { get: () => widget, list: () => [] },
    });
    const got = await reconciler.reconcile("default/foo", new AbortController().signal);
    const conditions = world.resourceObjects.get("default/foo")?.status?.conditions ?? [];
    return { got, events: world.events, synced: conditions.find((c) => c.type === "Synced") };
  }

  it("the Event says the item was released, not deleted, and why", async () => {
    const world = new WidgetWorld();
    uninstalling(world);
    const { events } = await finalize(world);
    expect(events).toEqual([
      {
        type: "Normal",
        reason: "ReleasedOnUninstall",
        message:
          "Item default.foo (i1) released, not deleted: the CRD widgets.test.example.com is being deleted (uninstall); it stays, without our owner tags",
      },
    ]);
    expect(world.api.items.get("i1")?.tags, "the item, without our owner tags").toEqual({});
  });

  it("a refused CRD read says what it could not tell, that nothing was deleted, and the grant it needs", async () => {
    const world = new WidgetWorld();
    world.kubeFailures.set("readDefinition", kubeError(403, "customresourcedefinitions is forbidden"));
    const { got, synced } = await finalize(world);
    const said =
      "cannot tell whether the CRD widgets.test.example.com is being deleted (an uninstall), so nothing is deleted (the controller needs get on customresourcedefinitions, resourceNames [widgets.test.example.com], in its ClusterRole): customresourcedefinitions is forbidden";
    expect(got).toMatchObject({ kind: "failed", error: { message: said } });
    expect(synced).toMatchObject({ status: "False", reason: "CannotCheckUninstall", message: said });
    expect(world.api.items.get("i1")?.tags, "the item, untouched").toEqual(ours);
  });
});

describe("ExternalResourceReconciler: a deletion it finished", () => {
  /** A Widget being deleted, at resourceVersion `version`, that the cache keeps showing as it was. */
  function deleting(version: string) {
    const world = new WidgetWorld();
    const widget = converged(world, settled({ deleting: true }));
    widget.metadata.resourceVersion = version;
    world.resourceObjects.set("default/foo", widget);
    let cached: Widget | undefined = widget;
    const reconciler = new ExternalResourceReconciler<Widget, Item>({
      ...world.deps(),
      resources: { get: (k) => (k === "default/foo" ? cached : undefined), list: () => [] },
    });
    const reconcile = async () =>
      resultSummary(await reconciler.reconcile("default/foo", new AbortController().signal));
    return { world, reconcile, show: (w: Widget | undefined) => (cached = w) };
  }

  it("a second look at the version it let go (the cache trails the removal) reads and writes nothing", async () => {
    const { world, reconcile } = deleting("7");
    expect(await reconcile()).toBe("done");
    expect(world.calls).toEqual([
      "items.delete i1",
      "kube.deleteWidgetRef default.foo",
      "kube.removeFinalizer",
    ]);
    world.calls.length = 0;

    expect(await reconcile()).toBe("done");
    expect(world.calls).toEqual([]);
  });

  it("a newer version that carries our finalizer again is finalized again, reading what exists", async () => {
    const { world, reconcile, show } = deleting("7");
    expect(await reconcile()).toBe("done");
    world.calls.length = 0;
    const again = settled({ deleting: true });
    again.metadata.resourceVersion = "9";
    world.resourceObjects.set("default/foo", again);
    show(again);

    expect(await reconcile()).toBe("done");
    expect(world.calls).toEqual(["items.getByName default.foo", "kube.removeFinalizer"]);
  });
});

/**
 * Every exit of the intent reconciler, one row each, over the library's own fake plugin (no Shapes): the
 * result it returns, and what it did. It writes no condition (there is no resource left to write on): each
 * row's `calls` shows that no status write happened. No row ends `terminal` or `requeueAfter`: a missed
 * deletion is either cleaned up or retried.
 */
import { describe, expect, it } from "vitest";
import {
  throwingIn,
  WidgetWorld,
  aWidget,
  aWidgetRef,
  ItemApiError,
  type Item,
  type Widget,
} from "../testing/fake-plugin.ts";
import { kubeError, resultSummary } from "../testing/fake-world.ts";
import { IntentReconciler, type IntentReconcilerDeps } from "./intent-reconciler.ts";
import { Tombstones } from "./tombstones.ts";

interface Row {
  /** Why this exit exists. */
  reason: string;
  setup: (w: WidgetWorld) => void;
  deps?: (w: WidgetWorld) => Partial<IntentReconcilerDeps<Widget, Item>>;
  result: string;
  calls: string[];
  /** Leaks removed (the counter). */
  leaks?: number;
  /** How often the Widget's CRD was read (a live read: not in `calls`), when the row says. */
  definitionReads?: number;
  /** The Widget as the informer last saw it, noted as a tombstone before the reconcile (tombstones.ts). */
  lastSeen?: Widget;
  /** Whether that tombstone is still kept after the reconcile, when the row says. */
  tombstoneKept?: boolean;
}

const tags = (uid: string) => ({ owner: "k8s", uid });

/** A dangling record of a Delete widget and its item `i1`, the record written at `createdAt`. */
function missedDeletion(w: WidgetWorld, createdAt = "2026-01-15T00:00:00Z"): void {
  const ref = aWidgetRef();
  // The API server's timestamp, as JSON carries it (client-node types it as a Date).
  const creationTimestamp = createdAt as unknown as Date;
  w.intentObjects.set("default.foo", { ...ref, metadata: { ...ref.metadata, creationTimestamp } });
  w.api.put({ id: "i1", name: "default.foo", size: 1, tags: tags("uid-foo") });
}

/** The spec of the Widget's record once it says Orphan. */
const ORPHAN = JSON.stringify({
  widget: { namespace: "default", name: "foo", uid: "uid-foo" },
  itemName: "default.foo",
  deletionPolicy: "Orphan",
  owner: "k8s",
});

/**
 * The items cache of a plugin whose external API filters owners loosely: every item, whoever's (the
 * WidgetWorld's own cache shows only those tagged with our owner id).
 */
function looselyFiltered(w: WidgetWorld): IntentReconcilerDeps<Widget, Item>["cache"] {
  const all = () => [...w.api.items.values()];
  return {
    get: (name) => all().find((i) => i.name === name),
    list: all,
    withUid: (uid) => all().filter((i) => i.tags.uid === uid),
  };
}

/** The Widget's CRD is being deleted: an uninstall (uninstall.ts). */
const terminating = {
  uid: "crd-uid",
  createdAt: "2026-01-01T00:00:00Z",
  deletingSince: "2026-02-01T00:00:00Z",
};

const rows: Row[] = [
  {
    reason: "the record is gone: nothing left to guard",
    setup: () => {},
    result: "done",
    calls: [],
  },
  {
    reason: "its Widget lives (same uid): the record is the Widget reconciler's",
    setup: (w) => {
      w.resourceObjects.set("default/foo", aWidget());
      w.intentObjects.set("default.foo", aWidgetRef());
    },
    result: "done",
    calls: [],
  },
  {
    reason: "the Widget cache trails: a live read finds the Widget, so no leak",
    setup: (w) => {
      w.resourceObjects.set("default/foo", aWidget());
      w.intentObjects.set("default.foo", aWidgetRef());
    },
    deps: () => ({ resources: { get: () => undefined, list: () => [] } }),
    result: "done",
    calls: [],
  },
  {
    reason: "the record cache trails: a live read finds the record deleted already, so no leak",
    setup: (w) => w.intentObjects.set("default.foo", aWidgetRef()),
    deps: (w) => {
      const cached = w.intents.get("default.foo");
      w.intentObjects.clear();
      return { intents: { get: () => cached, list: () => [] } };
    },
    result: "done",
    calls: [],
  },
  {
    reason: "the live read fails: failed, nothing destructive done on a guess",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: tags("uid-foo") });
      w.kubeFailures.set("readResource", kubeError(500, "etcd timeout"));
    },
    result: "failed",
    calls: [],
  },
  {
    reason: "a missed deletion (Delete): the item is deleted, then the record",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: tags("uid-foo") });
    },
    result: "done",
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
  },
  {
    reason: "a missed deletion (Delete) reads the CRD first: present, older than the record, so it deletes",
    setup: (w) => missedDeletion(w),
    result: "done",
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
    definitionReads: 1,
  },
  {
    reason:
      "a missed deletion (Delete) while the CRD is being deleted (an uninstall): released, not deleted; the record goes",
    setup: (w) => {
      missedDeletion(w);
      w.definition = terminating;
    },
    result: "done",
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
    definitionReads: 1,
  },
  {
    reason: "a missed deletion (Delete) when the CRD is gone (404): an uninstall, released, not deleted",
    setup: (w) => {
      missedDeletion(w);
      w.definition = undefined;
    },
    result: "done",
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
  },
  {
    reason:
      "a record older than the CRD (deleted and created again since: its Widget went with the old one): released",
    setup: (w) => {
      missedDeletion(w, "2026-01-15T00:00:00Z");
      w.definition = { uid: "crd-uid-2", createdAt: "2026-01-20T00:00:00Z" };
    },
    result: "done",
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
  },
  {
    reason: "the CRD cannot be read (403): failed, nothing deleted on a guess, the record stays",
    setup: (w) => {
      missedDeletion(w);
      w.kubeFailures.set("readDefinition", kubeError(403, "forbidden"));
    },
    result: "failed",
    calls: [],
  },
  {
    reason:
      "started with deleteOnUninstall: a missed deletion deletes even during an uninstall, the CRD not read",
    setup: (w) => {
      missedDeletion(w);
      w.definition = terminating;
    },
    deps: () => ({ deleteOnUninstall: true }),
    result: "done",
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
    definitionReads: 0,
  },
  {
    reason: "a missed deletion (Orphan) during an uninstall: released as ever, the CRD not read",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef("uid-foo", { deletionPolicy: "Orphan" }));
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: tags("uid-foo") });
      w.definition = terminating;
    },
    result: "done",
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
    definitionReads: 0,
  },
  {
    reason:
      "the release during an uninstall fails (503, Retry-After): failed after the wait, the record stays",
    setup: (w) => {
      missedDeletion(w);
      w.definition = terminating;
      w.api.fail("release", new ItemApiError(503, "unavailable", 1_000));
    },
    result: "failed:1000",
    calls: ["items.release i1"],
  },
  {
    reason: "a missed deletion (Orphan): the item loses our owner tags and stays, then the record goes",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef("uid-foo", { deletionPolicy: "Orphan" }));
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: tags("uid-foo") });
    },
    result: "done",
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
  },
  {
    reason: "a missed deletion (Delete) of an item renamed behind our back: found by its uid mark, deleted",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo-old", size: 1, tags: tags("uid-foo") });
    },
    result: "done",
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
  },
  {
    reason:
      "a missed deletion whose record trails: it says Delete, the Widget was last seen Orphan (switched, then deleted at once): the record is written Orphan first, then the item released, the CRD not read",
    setup: (w) => missedDeletion(w),
    lastSeen: aWidget({ deletionPolicy: "Orphan", deleting: true }),
    result: "done",
    calls: [
      `kube.updateWidgetRefSpec default.foo ${ORPHAN}`,
      "items.release i1",
      "kube.deleteWidgetRef default.foo",
    ],
    leaks: 1,
    definitionReads: 0,
    tombstoneKept: false,
  },
  {
    reason:
      "management policies without Delete, last seen: Orphan too, whatever spec.deletionPolicy said (policies.ts)",
    setup: (w) => missedDeletion(w),
    lastSeen: aWidget({ deletionPolicy: "Delete", managementPolicies: ["Observe", "Create", "Update"] }),
    result: "done",
    calls: [
      `kube.updateWidgetRefSpec default.foo ${ORPHAN}`,
      "items.release i1",
      "kube.deleteWidgetRef default.foo",
    ],
    leaks: 1,
  },
  {
    reason:
      "the record cannot be written Orphan: failed, nothing released or deleted on the record's old word; the tombstone stays for the retry",
    setup: (w) => {
      missedDeletion(w);
      w.kubeFailures.set("updateIntentSpec", kubeError(500, "etcd timeout"));
    },
    lastSeen: aWidget({ deletionPolicy: "Orphan" }),
    result: "failed",
    calls: [`kube.updateWidgetRefSpec default.foo ${ORPHAN}`],
    tombstoneKept: true,
  },
  {
    reason: "last seen Delete: nothing kept, the record decides (Delete)",
    setup: (w) => missedDeletion(w),
    lastSeen: aWidget({ deletionPolicy: "Delete" }),
    result: "done",
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
  },
  {
    reason: "a missed deletion (Orphan) of an item renamed behind our back: found by its uid mark, released",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef("uid-foo", { deletionPolicy: "Orphan" }));
      w.api.put({ id: "i1", name: "default.foo-old", size: 1, tags: tags("uid-foo") });
    },
    result: "done",
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
  },
  {
    reason:
      "a tombstone of an earlier Widget of the name (another uid) says nothing of this one: the record decides (Delete)",
    setup: (w) => missedDeletion(w),
    lastSeen: aWidget({ uid: "uid-earlier", deletionPolicy: "Orphan" }),
    result: "done",
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
  },
  {
    reason:
      "last seen Orphan, the record found deleted by a live read (the finalizer ran): no leak, the tombstone goes",
    setup: (w) => w.intentObjects.set("default.foo", aWidgetRef()),
    deps: (w) => {
      const cached = w.intents.get("default.foo");
      w.intentObjects.clear();
      return { intents: { get: () => cached, list: () => [] } };
    },
    lastSeen: aWidget({ deletionPolicy: "Orphan" }),
    result: "done",
    calls: [],
    tombstoneKept: false,
  },
  {
    reason: "a replaced Widget (another uid) does not save the old one's item",
    setup: (w) => {
      w.resourceObjects.set("default/foo", aWidget({ uid: "new-uid" }));
      w.intentObjects.set("default.foo", aWidgetRef("old-uid"));
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: tags("old-uid") });
    },
    result: "done",
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
  },
  {
    reason: "a Pending record whose item was never created: read by name, nothing there, the record goes",
    setup: (w) => w.intentObjects.set("default.foo", aWidgetRef()),
    result: "done",
    calls: ["items.getByName default.foo", "kube.deleteWidgetRef default.foo"],
    leaks: 0,
  },
  {
    reason: "a foreign item with our name (no owner tag of ours) is never touched; the record goes",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "f1", name: "default.foo", size: 1, tags: { owner: "someone-else", uid: "uid-foo" } });
    },
    result: "done",
    calls: ["items.getByName default.foo", "kube.deleteWidgetRef default.foo"],
    leaks: 0,
  },
  {
    reason:
      "the API filters owners loosely: its cache holds another owner's item with our name and uid, never deleted; the record goes",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "f1", name: "default.foo", size: 1, tags: { owner: "someone-else", uid: "uid-foo" } });
    },
    deps: (w) => ({ cache: looselyFiltered(w) }),
    result: "done",
    calls: ["kube.deleteWidgetRef default.foo"],
    leaks: 0,
  },
  {
    reason:
      "the API filters owners loosely (Orphan): another owner's item with our uid is not released; the record goes",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef("uid-foo", { deletionPolicy: "Orphan" }));
      w.api.put({ id: "f1", name: "default.foo", size: 1, tags: { owner: "someone-else", uid: "uid-foo" } });
    },
    deps: (w) => ({ cache: looselyFiltered(w) }),
    result: "done",
    calls: ["kube.deleteWidgetRef default.foo"],
    leaks: 0,
  },
  {
    reason:
      "the API filters owners loosely: our item under an earlier owner id of ours is still ours, deleted",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: { owner: "old", uid: "uid-foo" } });
    },
    deps: (w) => ({ cache: looselyFiltered(w), adoptOwnerIds: ["old"] }),
    result: "done",
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
  },
  {
    reason: "the item delete is throttled (429, Retry-After): failed after the wait, the record stays",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: tags("uid-foo") });
      w.api.fail("delete", new ItemApiError(429, "slow down", 1_000));
    },
    result: "failed:1000",
    calls: ["items.delete i1"],
  },
  {
    reason: "the item delete fails otherwise (500): failed with backoff",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: tags("uid-foo") });
      w.api.fail("delete", new ItemApiError(500, "internal error"));
    },
    result: "failed",
    calls: ["items.delete i1"],
  },
  {
    reason: "someone deleted the item first (404): what we wanted, the record goes",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: tags("uid-foo") });
      w.api.fail("delete", new ItemApiError(404, "not found"));
    },
    result: "done",
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo"],
    leaks: 1,
  },
  {
    reason: "the record delete fails: failed (the item is gone already; the next pass finds nothing)",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: tags("uid-foo") });
      w.kubeFailures.set("deleteIntent", kubeError(500, "etcd timeout"));
    },
    result: "failed",
    calls: ["items.delete i1", "kube.deleteWidgetRef default.foo"],
  },
  {
    reason: "an unforeseen throw (the plugin's marksOf throws): failed, never a throw",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: tags("uid-foo") });
    },
    deps: (w) => ({ plugin: throwingIn(w, "external", "marksOf", new TypeError("tags is not an object")) }),
    result: "failed",
    calls: [],
  },
];

describe("IntentReconciler: every exit", () => {
  it.each(rows)("$reason", async (row) => {
    const world = new WidgetWorld();
    row.setup(world);
    const tombstones = new Tombstones();
    if (row.lastSeen) tombstones.noteDeleted(row.lastSeen);
    const reconciler = new IntentReconciler<Widget, Item>({
      ...world.deps(),
      tombstones,
      ...row.deps?.(world),
    });

    const got = await reconciler.reconcile("default.foo", new AbortController().signal);

    expect(resultSummary(got)).toBe(row.result);
    expect(world.calls).toEqual(row.calls);
    expect(world.counts.leaksRemoved.intent).toBe(row.leaks ?? 0);
    if (row.definitionReads !== undefined) expect(world.definitionReads).toBe(row.definitionReads);
    if (row.tombstoneKept !== undefined && row.lastSeen) {
      const kept = tombstones.deletionPolicyOf(row.lastSeen.metadata.uid) !== undefined;
      expect(kept, "the tombstone kept").toBe(row.tombstoneKept);
    }
  });

  it("a refused CRD read is returned with what it could not tell and the grant it needs", async () => {
    const world = new WidgetWorld();
    missedDeletion(world);
    world.kubeFailures.set("readDefinition", kubeError(403, "forbidden"));
    const got = await new IntentReconciler<Widget, Item>(world.deps()).reconcile(
      "default.foo",
      new AbortController().signal,
    );
    expect(got).toMatchObject({
      kind: "failed",
      error: {
        message:
          "cannot tell whether the CRD widgets.test.example.com is being deleted (an uninstall), so nothing is deleted (the controller needs get on customresourcedefinitions, resourceNames [widgets.test.example.com], in its ClusterRole): forbidden",
      },
    });
  });

  it("an unforeseen throw is returned with what it was reconciling", async () => {
    const world = new WidgetWorld();
    world.intentObjects.set("default.foo", aWidgetRef());
    const reconciler = new IntentReconciler<Widget, Item>({
      ...world.deps(),
      resources: {
        get: () => {
          throw new Error("cache closed");
        },
        list: () => [],
      },
    });
    const got = await reconciler.reconcile("default.foo", new AbortController().signal);
    expect(got).toMatchObject({
      kind: "failed",
      error: { message: "cannot reconcile WidgetRef default.foo: cache closed" },
    });
  });
});

/**
 * Create or adopt, one row per exit: the create (and its failures, after the item was deleted in the API),
 * the adoption of our own item (a crash after the create, an earlier owner id), adoption on request (the
 * adoption-policy annotation), and a foreign item under the name, never touched.
 */
import { describe, it } from "vitest";
import { WIDGET_FINALIZER, aWidget, aWidgetRef, ItemApiError } from "../testing/fake-plugin.ts";
import {
  reconcileRow,
  ours,
  ADOPT,
  available,
  converged,
  settled,
  deletedInTheApi,
  type Row,
} from "./reconciler-rows.test-support.ts";

const rows: Row[] = [
  {
    reason: "adopted: the create meets our own item the cache does not show yet (a crash after the create)",
    setup: (w) => {
      const widget = aWidget({ finalizers: [WIDGET_FINALIZER] });
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i9", name: "default.foo", size: 1, tags: ours });
      w.hiddenFromCache.add("i9");
      return widget;
    },
    result: "done",
    conditions: available,
    calls: ["items.create default.foo", "items.getByName default.foo", "kube.updateStatus"],
    events: ["AdoptedItem"],
  },
  {
    reason: "adopted: our item under an earlier owner id is retagged in one update",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: { owner: "old", uid: "uid-foo" } });
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    deps: () => ({ adoptOwnerIds: ["old"] }),
    result: "done",
    conditions: available,
    calls: [
      "items.create default.foo",
      "items.getByName default.foo",
      'items.update i1 {"tags":{"owner":"k8s"}}',
      "kube.updateStatus",
    ],
    events: ["AdoptedItem"],
  },
  {
    reason:
      "adopted from an earlier owner id without Update in the management policies: the owner tag only, the size left alone",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 9, tags: { owner: "old", uid: "uid-foo" } });
      return aWidget({
        finalizers: [WIDGET_FINALIZER],
        managementPolicies: ["Observe", "Create", "Delete"],
      });
    },
    deps: () => ({ adoptOwnerIds: ["old"] }),
    result: "done",
    conditions: ["Ready=True Available", "Synced=True DriftLeftAlone"],
    calls: [
      "items.create default.foo",
      "items.getByName default.foo",
      'items.update i1 {"tags":{"owner":"k8s"}}',
      "kube.updateStatus",
    ],
    events: ["AdoptedItem"],
    syncedSays: "size: 9 → 1",
  },
  {
    reason: "conflict: a foreign item holds the name; never touched, looked at again in a few seconds",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: { owner: "someone-else" } });
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    deps: () => ({ conflictRecheckMs: 7_000 }),
    result: "requeueAfter:7000",
    conditions: ["Ready=False NameConflict", "Synced=False NameConflict"],
    calls: [
      "kube.createWidgetRef default.foo",
      "items.create default.foo",
      "items.getByName default.foo",
      "kube.updateStatus",
    ],
    events: ["NameConflict"],
  },
  {
    reason:
      "adopt on request: an item with no owner tag is retagged as ours and brought to the spec in one update",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: {} });
      return aWidget({ finalizers: [WIDGET_FINALIZER], annotations: { [ADOPT]: "adopt" } });
    },
    result: "done",
    conditions: available,
    calls: [
      "kube.createWidgetRef default.foo",
      "items.getByName default.foo",
      'items.update f1 {"size":1,"tags":{"owner":"k8s","uid":"uid-foo"}}',
      "kube.updateStatus",
    ],
    events: ["AdoptedItem"],
  },
  {
    reason:
      "adopt after a crash between the intent record and the retag: the record is there, the item still untagged",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: {} });
      return aWidget({ finalizers: [WIDGET_FINALIZER], annotations: { [ADOPT]: "adopt" } });
    },
    result: "done",
    conditions: available,
    calls: [
      "items.getByName default.foo",
      'items.update f1 {"size":1,"tags":{"owner":"k8s","uid":"uid-foo"}}',
      "kube.updateStatus",
    ],
    events: ["AdoptedItem"],
  },
  {
    reason: "adopt-or-create: the create meets an item with no owner tag, which is adopted in one update",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: {} });
      return aWidget({ finalizers: [WIDGET_FINALIZER], annotations: { [ADOPT]: "adopt-or-create" } });
    },
    result: "done",
    conditions: available,
    calls: [
      "kube.createWidgetRef default.foo",
      "items.create default.foo",
      "items.getByName default.foo",
      'items.update f1 {"size":1,"tags":{"owner":"k8s","uid":"uid-foo"}}',
      "kube.updateStatus",
    ],
    events: ["AdoptedItem"],
  },
  {
    reason: "adopt-or-create with nothing there: created, as without the annotation",
    setup: () => aWidget({ finalizers: [WIDGET_FINALIZER], annotations: { [ADOPT]: "adopt-or-create" } }),
    result: "done",
    conditions: available,
    calls: ["kube.createWidgetRef default.foo", "items.create default.foo", "kube.updateStatus"],
    events: ["CreatedItem"],
  },
  {
    reason: "adopt with nothing there: nothing to adopt, nothing created, looked at again in a few seconds",
    setup: () => aWidget({ finalizers: [WIDGET_FINALIZER], annotations: { [ADOPT]: "adopt" } }),
    deps: () => ({ conflictRecheckMs: 7_000 }),
    result: "requeueAfter:7000",
    conditions: ["Ready=False Absent", "Synced=False NothingToAdopt"],
    calls: ["kube.createWidgetRef default.foo", "items.getByName default.foo", "kube.updateStatus"],
    events: [],
    syncedSays: "Nothing to adopt",
  },
  {
    reason: "adopt refuses an item of another owner id, naming it: never touched, looked at again",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: { owner: "someone-else" } });
      return aWidget({ finalizers: [WIDGET_FINALIZER], annotations: { [ADOPT]: "adopt" } });
    },
    deps: () => ({ conflictRecheckMs: 7_000 }),
    result: "requeueAfter:7000",
    conditions: ["Ready=False OwnedByAnother", "Synced=False OwnedByAnother"],
    calls: ["kube.createWidgetRef default.foo", "items.getByName default.foo", "kube.updateStatus"],
    events: ["OwnedByAnother"],
    syncedSays: 'owned by owner id "someone-else"',
  },
  {
    reason: "adopt-or-create refuses an item of another owner id too, naming it",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: { owner: "someone-else", uid: "uid-foo" } });
      return aWidget({ finalizers: [WIDGET_FINALIZER], annotations: { [ADOPT]: "adopt-or-create" } });
    },
    result: "requeueAfter:5000",
    conditions: ["Ready=False OwnedByAnother", "Synced=False OwnedByAnother"],
    calls: [
      "kube.createWidgetRef default.foo",
      "items.create default.foo",
      "items.getByName default.foo",
      "kube.updateStatus",
    ],
    events: ["OwnedByAnother"],
    syncedSays: 'owned by owner id "someone-else"',
  },
  {
    reason: "without the annotation an item with no owner tag is foreign: never touched (NameConflict)",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: {} });
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    result: "requeueAfter:5000",
    conditions: ["Ready=False NameConflict", "Synced=False NameConflict"],
    calls: [
      "kube.createWidgetRef default.foo",
      "items.create default.foo",
      "items.getByName default.foo",
      "kube.updateStatus",
    ],
    events: ["NameConflict"],
  },
  {
    reason: "adopt on a Widget whose item is already ours: as without the annotation, zero writes",
    setup: (w) => converged(w, settled({ annotations: { [ADOPT]: "adopt" } })),
    result: "done",
    conditions: available,
    calls: [],
  },
  {
    reason: "adopt, the adopting update is stale (the item changed since the read): failed, retried",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: {} });
      w.api.fail("update", new ItemApiError(412, "stale"));
      return aWidget({ finalizers: [WIDGET_FINALIZER], annotations: { [ADOPT]: "adopt" } });
    },
    result: "failed",
    conditions: ["Ready=False Absent", "Synced=False CannotUpdateItem"],
    events: [],
  },
  {
    reason:
      "deleted in the API, then the create fails (503, an outage): Ready=False Absent, not the old True",
    setup: (w) => deletedInTheApi(w, new ItemApiError(503, "unavailable")),
    result: "failed",
    conditions: ["Ready=False Absent", "Synced=False CannotCreateItem"],
    calls: ["items.create default.foo", "kube.updateStatus"],
  },
  {
    reason: "deleted in the API, then the create fails (500): Ready=False Absent",
    setup: (w) => deletedInTheApi(w, new ItemApiError(500, "internal error")),
    result: "failed",
    conditions: ["Ready=False Absent", "Synced=False CannotCreateItem"],
  },
  {
    reason: "deleted in the API, then the create is throttled (429, Retry-After): Ready=False Absent",
    setup: (w) => deletedInTheApi(w, new ItemApiError(429, "slow down", 4_000)),
    result: "failed:4000",
    conditions: ["Ready=False Absent", "Synced=False CannotCreateItem"],
  },
  {
    reason: "deleted in the API, then the create times out (no answer): Ready=False Absent",
    setup: (w) => deletedInTheApi(w, new ItemApiError(0, "timed out")),
    result: "failed",
    conditions: ["Ready=False Absent", "Synced=False CannotCreateItem"],
  },
  {
    reason: "deleted in the API while the spec changed, the create fails: Absent, for the new generation",
    setup: (w) => deletedInTheApi(w, new ItemApiError(503, "unavailable"), { size: 2, generation: 2 }),
    result: "failed",
    conditions: ["Ready=False Absent", "Synced=False CannotCreateItem"],
  },
  {
    reason: "deleted in the API, and a foreign item took the name: NameConflict, both False",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: { owner: "someone-else" } });
      return deletedInTheApi(w);
    },
    result: "requeueAfter:5000",
    conditions: ["Ready=False NameConflict", "Synced=False NameConflict"],
  },
  {
    reason:
      "deleted in the API, then a create meets an earlier namesake's item: WaitingForCleanup, both False",
    setup: (w) => {
      w.api.put({ id: "o1", name: "default.foo", size: 1, tags: { owner: "k8s", uid: "old-uid" } });
      w.hiddenFromCache.add("o1");
      return deletedInTheApi(w);
    },
    result: "requeueAfter:5000",
    conditions: ["Ready=False WaitingForCleanup", "Synced=False WaitingForCleanup"],
  },
  {
    reason: "the adopting update of our item under an earlier owner id fails: SpecMismatch (not ours yet)",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: { owner: "old", uid: "uid-foo" } });
      w.api.fail("update", new ItemApiError(500, "internal error"));
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    deps: () => ({ adoptOwnerIds: ["old"] }),
    result: "failed",
    conditions: ["Ready=False SpecMismatch", "Synced=False CannotUpdateItem"],
  },
  {
    reason: "the create is throttled (429, Retry-After): failed after the API's wait, CannotCreateItem",
    setup: (w) => {
      w.api.fail("create", new ItemApiError(429, "slow down", 3_000));
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    result: "failed:3000",
    conditions: ["Ready=False Absent", "Synced=False CannotCreateItem"],
    calls: ["kube.createWidgetRef default.foo", "items.create default.foo", "kube.updateStatus"],
  },
  {
    reason: "the create fails otherwise (500, retryable): failed with backoff, CannotCreateItem",
    setup: (w) => {
      w.api.fail("create", new ItemApiError(500, "internal error"));
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    result: "failed",
    conditions: ["Ready=False Absent", "Synced=False CannotCreateItem"],
  },
  {
    reason: "the create meets a holder that is gone when read: failed, CannotCreateItem (the name was freed)",
    setup: (w) => {
      w.api.fail("create", new ItemApiError(409, "exists"));
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    result: "failed",
    conditions: ["Ready=False Absent", "Synced=False CannotCreateItem"],
    calls: [
      "kube.createWidgetRef default.foo",
      "items.create default.foo",
      "items.getByName default.foo",
      "kube.updateStatus",
    ],
  },
  {
    reason:
      "the holder read after a 409 is unavailable (503): failed, CannotObserveItem; whose it is: Unknown",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: {} });
      w.api.fail("getByName", new ItemApiError(503, "unavailable", 1_000));
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    result: "failed:1000",
    conditions: ["Ready=Unknown Unobserved", "Synced=False CannotObserveItem"],
  },
];

describe("createOrAdopt: every exit", () => {
  it.each(rows)("$reason", reconcileRow);
});

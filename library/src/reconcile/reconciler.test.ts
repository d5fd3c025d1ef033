/**
 * Every exit of the resource reconciler, one row each, over the library's own fake plugin (no Shapes):
 * the result it returns and the conditions it leaves on the Widget — both of them, each speaking of the
 * Widget's current generation (status.ts defines them): a failure never keeps an earlier `Ready=True`, it
 * says what that reconcile knew of the item. Only the API's refusal of the spec itself (classify says
 * "rejected": a 422, a 400) ends `terminal`: retrying the same spec cannot help; every other failure is
 * retried. After the table, a refused spec's life: not sent again until the spec changes or a refresh asks.
 */
import { describe, expect, it } from "vitest";
import {
  throwingIn,
  WIDGET_FINALIZER,
  WidgetWorld,
  aWidget,
  aWidgetRef,
  ItemApiError,
  type FakeItemApi,
  type Item,
  type Widget,
} from "../testing/fake-plugin.ts";
import type { ExternalClient } from "./contract.ts";
import { kubeError, resultSummary } from "../testing/fake-world.ts";
import type { DeletionPolicy } from "./contract.ts";
import { deletionPolicyOf } from "./policies.ts";
import { ExternalResourceReconciler, type ReconcilerDeps } from "./reconciler.ts";
import { Reason } from "./status.ts";

const ours = { owner: "k8s", uid: "uid-foo" };
/** The Widget's adoption-policy annotation (adoption.ts). */
const ADOPT = "test.example.com/adoption-policy";
const available = ["Ready=True Available", "Synced=True ReconcileSuccess"];
const readyStatus: Widget["status"] = {
  observedGeneration: 1,
  itemId: "i1",
  itemName: "default.foo",
  driftRepairs: 0,
  lastSyncTime: "2026-01-01T00:00:00Z",
  conditions: [
    {
      type: "Ready",
      status: "True",
      observedGeneration: 1,
      reason: "Available",
      message: "Item default.foo matches the spec",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    },
    {
      type: "Synced",
      status: "True",
      observedGeneration: 1,
      reason: "ReconcileSuccess",
      message: "The item matches the spec",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    },
  ],
};

/**
 * `widget` converged in `w`: its record, and its item `i1` (size 1 unless `item` says otherwise). The record
 * says the widget's deletion policy, as its reconciles kept it, unless `recorded` says another: the policy
 * changed since.
 */
function converged(
  w: WidgetWorld,
  widget: Widget,
  item: Partial<Item> = {},
  recorded: DeletionPolicy = deletionPolicyOf(widget),
): Widget {
  w.intentObjects.set("default.foo", aWidgetRef(widget.metadata.uid, { deletionPolicy: recorded }));
  w.api.put({ id: "i1", name: "default.foo", size: 1, tags: ours, ...item });
  return widget;
}

/** What the fake API answers a spec it refuses for good: its own words, which the condition must carry. */
const REFUSAL = "cannot accept size 2: this API's items are at most size 1";

/**
 * The status of a widget whose generation `generation` the API refused: Synced=False SpecRejected with the
 * API's words, and `ready` (e.g. `Absent`) as that reconcile saw it.
 */
function refusedStatus(
  generation: number,
  ready: { status: "False"; reason: string; message: string },
): Widget["status"] {
  const at = "2026-01-01T00:00:00Z";
  return {
    observedGeneration: 1,
    conditions: [
      { type: "Ready", ...ready, observedGeneration: generation, lastTransitionTime: at },
      {
        type: "Synced",
        status: "False",
        reason: Reason.SpecRejected,
        observedGeneration: generation,
        message: `The item API refused the spec: ${REFUSAL}`,
        lastTransitionTime: at,
      },
    ],
  };
}

/** The fake API's client as an API that cannot rename would give it: the five calls and `classify`. */
function withoutRename(api: FakeItemApi): ExternalClient<Item> {
  return {
    getByName: (name) => api.getByName(name),
    create: (desired) => api.create(desired),
    update: (observed, patch) => api.update(observed, patch),
    delete: (observed) => api.delete(observed),
    release: (observed) => api.release(observed),
    classify: (err) => api.classify(err),
  };
}

/** A converged widget (finalizer, status) with these overrides. */
const settled = (overrides: Parameters<typeof aWidget>[0] = {}) =>
  aWidget({ finalizers: [WIDGET_FINALIZER], status: readyStatus, ...overrides });

/**
 * A widget that was Ready (its record, its status naming item i1) whose item is gone: deleted in the API
 * behind our back. The next create fails with `createFails`, when given.
 */
function deletedInTheApi(w: WidgetWorld, createFails?: Error, overrides: Parameters<typeof aWidget>[0] = {}) {
  w.intentObjects.set("default.foo", aWidgetRef());
  if (createFails) w.api.fail("create", createFails);
  return settled(overrides);
}

interface Row {
  /** Why this exit exists. */
  reason: string;
  /** The Widget the cache shows (undefined: none); the API server holds it too, unless `gone`. */
  setup: (w: WidgetWorld) => Widget | undefined;
  gone?: true;
  deps?: (w: WidgetWorld) => Partial<ReconcilerDeps<Widget, Item>>;
  result: string;
  /**
   * The Widget's conditions after the reconcile, `Type=Status Reason`; [] when it has none (or is gone).
   * Every one must speak of the Widget's generation (`observedGeneration`), checked for every row.
   */
  conditions: string[];
  calls?: string[];
  events?: string[];
  /** Words the Synced message must carry (e.g. the external API's own message). */
  syncedSays?: string;
  /** How often the Widget's CRD was read (a live read: not in `calls`), when the row says. */
  definitionReads?: number;
  /** `status.driftRepairs` after the reconcile, when the row says. */
  driftRepairs?: number;
}

/** The spec of the Widget's record once it says Orphan. */
const ORPHAN = JSON.stringify({
  widget: { namespace: "default", name: "foo", uid: "uid-foo" },
  itemName: "default.foo",
  deletionPolicy: "Orphan",
  owner: "k8s",
});

/** The Widget's CRD is being deleted: an uninstall (uninstall.ts). */
function uninstalling(w: WidgetWorld): void {
  w.definition = { uid: "crd-uid", createdAt: "2026-01-01T00:00:00Z", deletingSince: "2026-02-01T00:00:00Z" };
}

/**
 * The items cache of a plugin whose external API filters owners loosely: every item, whoever's (the
 * WidgetWorld's own cache shows only those tagged with our owner id).
 */
function looselyFiltered(w: WidgetWorld): ReconcilerDeps<Widget, Item>["cache"] {
  const all = () => [...w.api.items.values()];
  return {
    get: (name) => all().find((i) => i.name === name),
    list: all,
    withUid: (uid) => all().filter((i) => i.tags.uid === uid),
  };
}

const rows: Row[] = [
  {
    reason: "a Widget not in the cache is gone: nothing to do",
    setup: () => undefined,
    result: "done",
    conditions: [],
    calls: [],
  },
  {
    reason: "a new Widget: finalizer added, intent record written, item created, status",
    setup: () => aWidget(),
    result: "done",
    conditions: available,
    calls: [
      "kube.addFinalizer",
      "kube.createWidgetRef default.foo",
      "items.create default.foo",
      "kube.updateStatus",
    ],
    events: ["CreatedItem"],
  },
  {
    reason: "up to date: zero writes",
    setup: (w) => converged(w, settled()),
    result: "done",
    conditions: available,
    calls: [],
  },
  {
    reason: "a deletionPolicy changed to Orphan is kept in the intent record too",
    setup: (w) => converged(w, settled({ deletionPolicy: "Orphan" }), {}, "Delete"),
    result: "done",
    conditions: available,
    calls: [
      'kube.updateWidgetRefSpec default.foo {"widget":{"namespace":"default","name":"foo","uid":"uid-foo"},"itemName":"default.foo","deletionPolicy":"Orphan","owner":"k8s"}',
    ],
  },
  {
    reason: "a spec change is written to the item: an update, not drift",
    setup: (w) => converged(w, settled({ size: 2, generation: 2 })),
    result: "done",
    conditions: available,
    calls: ['items.update i1 {"size":2}', "kube.updateStatus"],
    events: ["UpdatedItem"],
  },
  {
    reason: "drift repaired: the item changed, the spec did not",
    setup: (w) => converged(w, settled(), { size: 7 }),
    result: "done",
    conditions: available,
    calls: ['items.update i1 {"size":1}', "kube.updateStatus"],
    events: ["RepairedCloudDrift"],
  },
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
    reason:
      "an adoption policy that is no policy: Synced=False InvalidAdoptionPolicy, nothing written, terminal",
    setup: () => aWidget({ annotations: { [ADOPT]: "take-it" } }),
    result: "terminal",
    conditions: ["Ready=Unknown Unobserved", "Synced=False InvalidAdoptionPolicy"],
    calls: ["kube.updateStatus"],
    events: [],
    syncedSays: '"take-it"',
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
    reason: "an earlier namesake's intent record: wait for its cleanup",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef("old-uid"));
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    result: "requeueAfter:5000",
    conditions: ["Ready=False WaitingForCleanup", "Synced=False WaitingForCleanup"],
    calls: ["kube.updateStatus"],
  },
  {
    reason: "an earlier namesake's item in the cache: wait for its cleanup",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: { owner: "k8s", uid: "old-uid" } });
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    deps: () => ({ cleanupWaitMs: 2_000 }),
    result: "requeueAfter:2000",
    conditions: ["Ready=False WaitingForCleanup", "Synced=False WaitingForCleanup"],
    calls: ["kube.updateStatus"],
  },
  {
    reason: "an earlier namesake's item the cache does not show: the create meets it, wait for its cleanup",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: { owner: "k8s", uid: "old-uid" } });
      w.hiddenFromCache.add("i1");
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    result: "requeueAfter:5000",
    conditions: ["Ready=False WaitingForCleanup", "Synced=False WaitingForCleanup"],
    calls: ["items.create default.foo", "items.getByName default.foo", "kube.updateStatus"],
  },
  {
    reason: "paused: no writes but the conditions, even with drift; nothing observed, so Ready is Unknown",
    setup: (w) => converged(w, settled({ paused: true }), { size: 7 }),
    result: "done",
    conditions: ["Ready=Unknown ReconcilePaused", "Synced=False ReconcilePaused"],
    calls: ["kube.updateStatus"],
  },
  {
    reason: "paused after the item was deleted in the API: nothing observed, Ready not True",
    setup: (w) => deletedInTheApi(w, undefined, { paused: true }),
    result: "done",
    conditions: ["Ready=Unknown ReconcilePaused", "Synced=False ReconcilePaused"],
    calls: ["kube.updateStatus"],
  },
  {
    reason: "paused with a spec change waiting: both conditions speak of the new generation",
    setup: (w) => converged(w, settled({ paused: true, size: 2, generation: 2 })),
    result: "done",
    conditions: ["Ready=Unknown ReconcilePaused", "Synced=False ReconcilePaused"],
    calls: ["kube.updateStatus"],
  },
  {
    reason:
      "paused, its deletionPolicy changed to Orphan: the record follows first (it is ours, no write a pause forbids), then only the conditions",
    setup: (w) => converged(w, settled({ paused: true, deletionPolicy: "Orphan" }), {}, "Delete"),
    result: "done",
    conditions: ["Ready=Unknown ReconcilePaused", "Synced=False ReconcilePaused"],
    calls: [`kube.updateWidgetRefSpec default.foo ${ORPHAN}`, "kube.updateStatus"],
  },
  {
    reason:
      "paused, and the record's update fails: CannotRecordIntent, retried (a deletion missed meanwhile would read the old policy)",
    setup: (w) => {
      w.kubeFailures.set("updateIntentSpec", kubeError(500, "etcd timeout"));
      return converged(w, settled({ paused: true, deletionPolicy: "Orphan" }), {}, "Delete");
    },
    result: "failed",
    conditions: ["Ready=Unknown Unobserved", "Synced=False CannotRecordIntent"],
    calls: [`kube.updateWidgetRefSpec default.foo ${ORPHAN}`, "kube.updateStatus"],
  },
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
    reason: "the finalizer add is refused (403): failed, Synced=False CannotAddFinalizer",
    setup: (w) => {
      w.kubeFailures.set("addFinalizer", kubeError(403, "forbidden"));
      return aWidget();
    },
    result: "failed",
    conditions: ["Ready=Unknown Unobserved", "Synced=False CannotAddFinalizer"],
    calls: ["kube.addFinalizer", "kube.updateStatus"],
  },
  {
    reason: "the finalizer add meets a 404: the Widget is gone, done, nothing reported",
    setup: () => aWidget(),
    gone: true,
    result: "done",
    conditions: [],
    calls: ["kube.addFinalizer"],
  },
  {
    reason: "the intent record cannot be written (500): failed, CannotRecordIntent, no create",
    setup: (w) => {
      w.kubeFailures.set("createIntent", kubeError(500, "etcd timeout"));
      return aWidget({ finalizers: [WIDGET_FINALIZER] });
    },
    result: "failed",
    conditions: ["Ready=Unknown Unobserved", "Synced=False CannotRecordIntent"],
    calls: ["kube.createWidgetRef default.foo", "kube.updateStatus"],
  },
  {
    reason:
      "the intent record update of a Ready Widget fails: Unobserved (it stopped before looking), not True",
    setup: (w) => {
      w.kubeFailures.set("updateIntentSpec", kubeError(409, "modified"));
      return converged(w, settled({ deletionPolicy: "Orphan" }), {}, "Delete");
    },
    result: "failed",
    conditions: ["Ready=Unknown Unobserved", "Synced=False CannotRecordIntent"],
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
    reason: "renamed behind our back: given its name back in one rename (same item), never created again",
    setup: (w) => converged(w, settled(), { name: "default.foo-old" }),
    result: "done",
    conditions: available,
    calls: ["items.rename i1 default.foo", "kube.updateStatus"],
    events: ["RenamedItem"],
    driftRepairs: 1,
  },
  {
    reason: "renamed behind our back, and drifted too: renamed back, then repaired",
    setup: (w) => converged(w, settled(), { name: "default.foo-old", size: 7 }),
    result: "done",
    conditions: available,
    calls: ["items.rename i1 default.foo", 'items.update i1 {"size":1}', "kube.updateStatus"],
    events: ["RenamedItem", "RepairedCloudDrift"],
    driftRepairs: 2,
  },
  {
    reason:
      "renamed behind our back, the policies without Update: left under its new name, Renamed, nothing created",
    setup: (w) =>
      converged(w, settled({ managementPolicies: ["Observe", "Create", "Delete"] }), {
        name: "default.foo-old",
      }),
    result: "requeueAfter:5000",
    conditions: ["Ready=False Renamed", "Synced=False Renamed"],
    calls: ["kube.updateStatus"],
    events: ["RenamedItem"],
    syncedSays: "renamed to default.foo-old",
  },
  {
    reason: "renamed behind our back by a client that cannot rename: left under its new name, Renamed",
    setup: (w) => converged(w, settled(), { name: "default.foo-old" }),
    deps: (w) => ({ client: withoutRename(w.api) }),
    result: "requeueAfter:5000",
    conditions: ["Ready=False Renamed", "Synced=False Renamed"],
    calls: ["kube.updateStatus"],
    events: ["RenamedItem"],
    syncedSays: "cannot rename",
  },
  {
    reason:
      "renamed behind our back, and a foreign item took the name: the rename back conflicts, left, Renamed",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: { owner: "someone-else" } });
      return converged(w, settled(), { name: "default.foo-old" });
    },
    result: "requeueAfter:5000",
    conditions: ["Ready=False Renamed", "Synced=False Renamed"],
    calls: ["items.rename i1 default.foo", "kube.updateStatus"],
    events: ["RenamedItem"],
    syncedSays: "another object holds default.foo",
  },
  {
    reason:
      "renamed behind our back, the rename back fails (503): failed, CannotUpdateItem, Ready=False Renamed",
    setup: (w) => {
      w.api.fail("rename", new ItemApiError(503, "unavailable"));
      return converged(w, settled(), { name: "default.foo-old" });
    },
    result: "failed",
    conditions: ["Ready=False Renamed", "Synced=False CannotUpdateItem"],
    calls: ["items.rename i1 default.foo", "kube.updateStatus"],
    events: [],
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
    reason: "a drift repair fails (500): the item is ours but not as the spec says, Ready=False SpecMismatch",
    setup: (w) => {
      const widget = converged(w, settled(), { size: 7 });
      w.api.fail("update", new ItemApiError(500, "internal error"));
      return widget;
    },
    result: "failed",
    conditions: ["Ready=False SpecMismatch", "Synced=False CannotUpdateItem"],
    calls: ['items.update i1 {"size":1}', "kube.updateStatus"],
    events: [],
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
  {
    reason:
      "the update of a spec change meets a newer revision (412, stale): failed, CannotUpdateItem, SpecMismatch",
    setup: (w) => {
      const widget = converged(w, settled({ size: 2, generation: 2 }));
      w.api.fail("update", new ItemApiError(412, "changed"));
      return widget;
    },
    result: "failed",
    conditions: ["Ready=False SpecMismatch", "Synced=False CannotUpdateItem"],
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
  {
    reason: "paused while being deleted: the deletion waits, nothing observed, Ready Unknown",
    setup: (w) => converged(w, settled({ deleting: true, paused: true })),
    result: "done",
    conditions: ["Ready=Unknown ReconcilePaused", "Synced=False ReconcilePaused"],
    calls: ["kube.updateStatus"],
  },
  {
    reason:
      "a create the API refuses for good (422): terminal (no retry), Synced=False SpecRejected with the API's words, Ready=False Absent, one Warning event",
    setup: (w) => {
      w.api.fail("create", new ItemApiError(422, REFUSAL));
      return aWidget({ finalizers: [WIDGET_FINALIZER], size: 2 });
    },
    result: "terminal",
    conditions: ["Ready=False Absent", "Synced=False SpecRejected"],
    calls: ["kube.createWidgetRef default.foo", "items.create default.foo", "kube.updateStatus"],
    events: ["SpecRejected"],
    syncedSays: REFUSAL,
  },
  {
    reason: "a create the API calls invalid (400): the same refusal for good, SpecRejected, terminal",
    setup: (w) => {
      w.api.fail("create", new ItemApiError(400, REFUSAL));
      return aWidget({ finalizers: [WIDGET_FINALIZER], size: 2 });
    },
    result: "terminal",
    conditions: ["Ready=False Absent", "Synced=False SpecRejected"],
    events: ["SpecRejected"],
    syncedSays: REFUSAL,
  },
  {
    reason:
      "deleted in the API, then the create is refused for good (422): SpecRejected, Ready=False Absent, not the old True",
    setup: (w) => deletedInTheApi(w, new ItemApiError(422, REFUSAL), { size: 2, generation: 2 }),
    result: "terminal",
    conditions: ["Ready=False Absent", "Synced=False SpecRejected"],
    events: ["SpecRejected"],
    syncedSays: REFUSAL,
  },
  {
    reason:
      "the update of a spec change is refused for good (422): terminal, SpecRejected; ours keeps the earlier spec: Ready=False SpecMismatch",
    setup: (w) => {
      const widget = converged(w, settled({ size: 2, generation: 2 }));
      w.api.fail("update", new ItemApiError(422, REFUSAL));
      return widget;
    },
    result: "terminal",
    conditions: ["Ready=False SpecMismatch", "Synced=False SpecRejected"],
    calls: ['items.update i1 {"size":2}', "kube.updateStatus"],
    events: ["SpecRejected"],
    syncedSays: REFUSAL,
  },
  {
    reason:
      "the adopting update of our item under an earlier owner id is refused for good: SpecRejected, SpecMismatch",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: { owner: "old", uid: "uid-foo" } });
      w.api.fail("update", new ItemApiError(422, REFUSAL));
      return aWidget({ finalizers: [WIDGET_FINALIZER], size: 2 });
    },
    deps: () => ({ adoptOwnerIds: ["old"] }),
    result: "terminal",
    conditions: ["Ready=False SpecMismatch", "Synced=False SpecRejected"],
    events: ["SpecRejected"],
  },
  {
    reason:
      "the refused spec again with nothing changed (a resync, a restart's full resync): the API is not called, no write, no second event",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      return aWidget({
        finalizers: [WIDGET_FINALIZER],
        size: 2,
        generation: 2,
        status: refusedStatus(2, {
          status: "False",
          reason: "Absent",
          message: "No item of this Widget exists: none of ours is named default.foo",
        }),
      });
    },
    result: "terminal",
    conditions: ["Ready=False Absent", "Synced=False SpecRejected"],
    calls: [],
    events: [],
    syncedSays: REFUSAL,
  },
  {
    reason:
      "the refused update again with nothing changed, while a drift waits: not sent (the patch carries the refused spec)",
    setup: (w) => {
      const status = refusedStatus(2, { status: "False", reason: "SpecMismatch", message: "size: 1 → 2" });
      return converged(w, settled({ size: 2, generation: 2, status }), { size: 7 });
    },
    result: "terminal",
    conditions: ["Ready=False SpecMismatch", "Synced=False SpecRejected"],
    calls: ["kube.updateStatus"],
    events: [],
  },
  {
    reason: "a spec edited after a refusal (a new generation): sent again, and accepted",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      const status = refusedStatus(2, { status: "False", reason: "Absent", message: "none" });
      return aWidget({ finalizers: [WIDGET_FINALIZER], size: 1, generation: 3, status });
    },
    result: "done",
    conditions: available,
    calls: ["items.create default.foo", "kube.updateStatus"],
    events: ["CreatedItem"],
  },
  {
    reason:
      "a delete refused with a 422 is no spec's fault (the spec asks for no item): failed with backoff, CannotDeleteItem",
    setup: (w) => {
      const widget = converged(w, settled({ deleting: true }));
      w.api.fail("delete", new ItemApiError(422, "cannot delete item i1: it is locked"));
      return widget;
    },
    result: "failed",
    conditions: ["Ready=False Deleting", "Synced=False CannotDeleteItem"],
  },
  {
    reason:
      "the refusal's status write fails (409): failed, so it is retried until the status says it (what keeps it from being resent)",
    setup: (w) => {
      w.api.fail("create", new ItemApiError(422, REFUSAL));
      w.kubeFailures.set("updateStatus", kubeError(409, "modified"));
      return aWidget({ finalizers: [WIDGET_FINALIZER], size: 2 });
    },
    result: "failed",
    conditions: [],
    events: ["SpecRejected"],
  },
  {
    reason: "an unforeseen throw (the plugin's desired() throws): failed, ReconcileError, never a throw",
    setup: (w) => converged(w, settled()),
    deps: (w) => ({
      plugin: throwingIn(w, "resource", "desired", new TypeError("spec.size is not a number")),
    }),
    result: "failed",
    conditions: ["Ready=Unknown Unobserved", "Synced=False ReconcileError"],
  },
  {
    reason:
      "the status write of a success fails (409): ReconcileError, recorded by the next write; the item exists and matches: Ready=True for generation 2",
    setup: (w) => {
      w.kubeFailures.set("updateStatus", kubeError(409, "modified"));
      return converged(w, settled({ size: 2, generation: 2 }));
    },
    result: "failed",
    conditions: ["Ready=True Available", "Synced=False ReconcileError"],
    calls: ['items.update i1 {"size":2}', "kube.updateStatus", "kube.updateStatus"],
  },
];

describe("ExternalResourceReconciler: every exit", () => {
  it.each(rows)("$reason", async (row) => {
    const world = new WidgetWorld();
    const widget = row.setup(world);
    if (widget && !row.gone) world.resourceObjects.set("default/foo", widget);
    const reconciler = new ExternalResourceReconciler<Widget, Item>({
      ...world.deps(),
      resources: { get: (k) => (k === "default/foo" ? widget : undefined), list: () => [] },
      ...row.deps?.(world),
    });

    const got = await reconciler.reconcile("default/foo", new AbortController().signal);

    expect(resultSummary(got)).toBe(row.result);
    const conditions = world.resourceObjects.get("default/foo")?.status?.conditions ?? [];
    expect(conditions.map((c) => `${c.type}=${c.status} ${c.reason}`)).toEqual(row.conditions);
    for (const c of conditions) {
      expect(c.observedGeneration, `${c.type}'s observedGeneration`).toBe(widget?.metadata.generation);
    }
    if (row.calls) expect(world.calls).toEqual(row.calls);
    if (row.events) expect(world.events.map((e) => e.reason)).toEqual(row.events);
    if (row.syncedSays) {
      const synced = conditions.find((c) => c.type === "Synced");
      expect(synced?.message, "the Synced message").toContain(row.syncedSays);
    }
    if (row.definitionReads !== undefined) expect(world.definitionReads).toBe(row.definitionReads);
    if (row.driftRepairs !== undefined) {
      expect(world.resourceObjects.get("default/foo")?.status?.driftRepairs).toBe(row.driftRepairs);
    }
  });
});

describe("ExternalResourceReconciler: a spec the API refuses for good", () => {
  /**
   * One Widget whose size 2 the API always refuses, reconciled again and again as the queue would bring it
   * back: each step says what brings it (an event, a resync, the refresh, a restart, a spec edit), whether
   * the API is asked again, and what the reconcile returns. The status and events accumulate in `world`.
   */
  it("is sent again only when the spec changes or the annotations do (the refresh); never by a resync or a restart", async () => {
    const world = new WidgetWorld();
    // Refused three times: the fourth create (after the spec edit) goes through.
    for (let i = 0; i < 3; i++) world.api.fail("create", new ItemApiError(422, REFUSAL));
    world.resourceObjects.set(
      "default/foo",
      aWidget({ finalizers: [WIDGET_FINALIZER], size: 2, generation: 2 }),
    );
    let reconciler = new ExternalResourceReconciler<Widget, Item>(world.deps());
    const creates = () => world.calls.filter((c) => c.startsWith("items.create")).length;
    const widget = () => world.resourceObjects.get("default/foo") as Widget;
    const edit = (change: (w: Widget) => Widget) =>
      world.resourceObjects.set("default/foo", change(widget()));
    const refresh = (value: string) =>
      edit((w) => ({
        ...w,
        metadata: { ...w.metadata, annotations: { "test.example.com/refresh": value } },
      }));

    const steps: { reason: string; before?: () => void; creates: number; result: string }[] = [
      { reason: "the Widget is created: the API refuses size 2", creates: 1, result: "terminal" },
      {
        reason: "a resync: the status says the API refused generation 2; not sent",
        creates: 1,
        result: "terminal",
      },
      { reason: "another resync: still not sent", creates: 1, result: "terminal" },
      {
        reason: "the refresh annotation: a person asks to look again; sent, refused again",
        before: () => refresh("1"),
        creates: 2,
        result: "terminal",
      },
      { reason: "a resync after the refresh: not sent", creates: 2, result: "terminal" },
      {
        reason: "a restart: the refusal is in the status, so the full resync does not send it either",
        before: () => {
          reconciler = new ExternalResourceReconciler<Widget, Item>(world.deps());
        },
        creates: 2,
        result: "terminal",
      },
      {
        reason: "the refresh after the restart: sent again",
        before: () => refresh("2"),
        creates: 3,
        result: "terminal",
      },
      {
        reason: "the spec edited to a size the API accepts (generation 3): sent, created",
        before: () => {
          edit((w) => ({ ...w, metadata: { ...w.metadata, generation: 3 }, spec: { ...w.spec, size: 1 } }));
        },
        creates: 4,
        result: "done",
      },
    ];
    for (const step of steps) {
      step.before?.();
      const got = await reconciler.reconcile("default/foo", new AbortController().signal);
      expect({ step: step.reason, result: resultSummary(got), creates: creates() }).toEqual({
        step: step.reason,
        result: step.result,
        creates: step.creates,
      });
    }

    // One Warning for the refusal (the refresh met the same refusal: nothing new to say), then the create.
    expect(world.events.map((e) => `${e.type} ${e.reason}`)).toEqual([
      "Warning SpecRejected",
      "Normal CreatedItem",
    ]);
    expect(world.events[0]?.message).toContain(REFUSAL);
    const conditions = widget().status?.conditions ?? [];
    expect(conditions.map((c) => `${c.type}=${c.status} ${c.reason} ${c.observedGeneration}`)).toEqual([
      "Ready=True Available 3",
      "Synced=True ReconcileSuccess 3",
    ]);
  });
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

/**
 * The resource reconciler's story, one row per exit that is none of the stories' own (those are beside
 * their files: create-or-adopt, drift, finalize, observe-only, rejected-specs .test.ts): gone, created,
 * up to date, the finalizer and the intent record, an earlier namesake's leftovers, the unforeseen. A failure
 * never keeps an earlier `Ready=True`: it says what that reconcile knew of the item.
 */
import { describe, it } from "vitest";
import { throwingIn, WIDGET_FINALIZER, aWidget, aWidgetRef } from "../testing/fake-plugin.ts";
import { kubeError } from "../testing/fake-world.ts";
import { reconcileRow, available, converged, settled, type Row } from "./reconciler-rows.test-support.ts";

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
  it.each(rows)("$reason", reconcileRow);
});

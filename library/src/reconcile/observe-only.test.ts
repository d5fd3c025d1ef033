/**
 * Paused, one row per exit: nothing observed (Ready Unknown), nothing written but the conditions and the
 * intent record's policy, the deletion waiting. (Observe only, the management policies without Create, is in
 * policies.test.ts with the other policies.)
 */
import { describe, it } from "vitest";
import { kubeError } from "../testing/fake-world.ts";
import {
  reconcileRow,
  converged,
  settled,
  deletedInTheApi,
  type Row,
  ORPHAN,
} from "./reconciler-rows.test-support.ts";

const rows: Row[] = [
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
    reason: "paused while being deleted: the deletion waits, nothing observed, Ready Unknown",
    setup: (w) => converged(w, settled({ deleting: true, paused: true })),
    result: "done",
    conditions: ["Ready=Unknown ReconcilePaused", "Synced=False ReconcilePaused"],
    calls: ["kube.updateStatus"],
  },
];

describe("paused: every exit", () => {
  it.each(rows)("$reason", reconcileRow);
});

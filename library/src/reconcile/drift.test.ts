/**
 * Drift, one row per exit: a spec change or a drift written back (or the write failing), and an item renamed
 * behind our back, given its name back or left and reported; never a second item.
 */
import { describe, it } from "vitest";
import { ItemApiError } from "../testing/fake-plugin.ts";
import {
  reconcileRow,
  available,
  converged,
  withoutRename,
  settled,
  type Row,
} from "./reconciler-rows.test-support.ts";

const rows: Row[] = [
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
    events: ["RepairedItemDrift"],
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
    events: ["RenamedItem", "RepairedItemDrift"],
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
];

describe("repairDrift and renamedBehindOurBack: every exit", () => {
  it.each(rows)("$reason", reconcileRow);
});

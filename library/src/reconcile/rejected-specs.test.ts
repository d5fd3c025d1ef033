/**
 * Specs the external API refuses for good, one row per exit: only the API's refusal of the spec itself
 * (classify says "rejected": a 422, a 400) ends `terminal` — retrying the same spec cannot help; every other
 * failure is retried. An adoption policy that is no policy is terminal too. After the table, a refused spec's
 * life: not sent again until the spec changes or a refresh asks.
 */
import { describe, expect, it } from "vitest";
import {
  WIDGET_FINALIZER,
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
  ADOPT,
  available,
  converged,
  REFUSAL,
  refusedStatus,
  settled,
  deletedInTheApi,
  type Row,
} from "./reconciler-rows.test-support.ts";

const rows: Row[] = [
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
];

describe("rejected specs: every exit", () => {
  it.each(rows)("$reason", reconcileRow);
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

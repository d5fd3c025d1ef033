/**
 * The rows of the resource reconciler's unit tests (library/src/reconcile/*.test.ts), over the library's own
 * fake plugin (no Shapes): a row is one exit — the Widget and world it starts from, the result the
 * reconcile returns and the conditions it leaves on the Widget, both of them, each speaking of the Widget's
 * current generation (status.ts defines them). Here: the fixtures the rows share, and the one runner.
 */
import { expect } from "vitest";
import {
  WIDGET_FINALIZER,
  WidgetWorld,
  aWidget,
  aWidgetRef,
  type FakeItemApi,
  type Item,
  type Widget,
} from "../testing/fake-plugin.ts";
import { resultSummary } from "../testing/fake-world.ts";
import type { DeletionPolicy, ExternalClient } from "./contract.ts";
import { deletionPolicyOf } from "./policies.ts";
import { ExternalResourceReconciler, type ReconcilerDeps } from "./reconciler.ts";
import { Reason } from "./status.ts";

/** The owner marks of our item: our owner id, the Widget's uid. */
export const ours = { owner: "k8s", uid: "uid-foo" };
/** The Widget's adoption-policy annotation (adoption.ts). */
export const ADOPT = "test.example.com/adoption-policy";
/** The conditions of a Widget whose item exists and matches the spec. */
export const available = ["Ready=True Available", "Synced=True ReconcileSuccess"];
/** The status of a converged Widget: item `i1`, Ready and Synced True for generation 1. */
export const readyStatus: Widget["status"] = {
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
export function converged(
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
export const REFUSAL = "cannot accept size 2: this API's items are at most size 1";

/**
 * The status of a widget whose generation `generation` the API refused: Synced=False SpecRejected with the
 * API's words, and `ready` (e.g. `Absent`) as that reconcile saw it.
 */
export function refusedStatus(
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
export function withoutRename(api: FakeItemApi): ExternalClient<Item> {
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
export const settled = (overrides: Parameters<typeof aWidget>[0] = {}) =>
  aWidget({ finalizers: [WIDGET_FINALIZER], status: readyStatus, ...overrides });

/**
 * A widget that was Ready (its record, its status naming item i1) whose item is gone: deleted in the API
 * behind our back. The next create fails with `createFails`, when given.
 */
export function deletedInTheApi(
  w: WidgetWorld,
  createFails?: Error,
  overrides: Parameters<typeof aWidget>[0] = {},
) {
  w.intentObjects.set("default.foo", aWidgetRef());
  if (createFails) w.api.fail("create", createFails);
  return settled(overrides);
}

/** One exit of the reconciler: where it starts, and what the reconcile returns, leaves and calls. */
export interface Row {
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
export const ORPHAN = JSON.stringify({
  widget: { namespace: "default", name: "foo", uid: "uid-foo" },
  itemName: "default.foo",
  deletionPolicy: "Orphan",
  owner: "k8s",
});

/** The Widget's CRD is being deleted: an uninstall (uninstall.ts). */
export function uninstalling(w: WidgetWorld): void {
  w.definition = { uid: "crd-uid", createdAt: "2026-01-01T00:00:00Z", deletingSince: "2026-02-01T00:00:00Z" };
}

/**
 * The items cache of a plugin whose external API filters owners loosely: every item, whoever's (the
 * WidgetWorld's own cache shows only those tagged with our owner id).
 */
export function looselyFiltered(w: WidgetWorld): ReconcilerDeps<Widget, Item>["cache"] {
  const all = () => [...w.api.items.values()];
  return {
    get: (name) => all().find((i) => i.name === name),
    list: all,
    withUid: (uid) => all().filter((i) => i.tags.uid === uid),
  };
}

/**
 * Runs one row: reconciles the Widget `default/foo` of a fresh {@link WidgetWorld} once and checks what the
 * row says — the result, the conditions (each speaking of the Widget's generation), the calls, the events.
 */
export async function reconcileRow(row: Row): Promise<void> {
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
}

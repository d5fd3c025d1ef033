/**
 * Management policies (policies.ts), one row per exit they add, over the library's own fake plugin: what the
 * resource reconciler returns, the conditions it leaves on the Widget, and every call it makes — for
 * observe only, the proof that nothing is written outside (no create, update, delete or release in
 * `calls`). Then how {@link policiesOf} reads a spec.
 */
import { describe, expect, it } from "vitest";
import {
  WIDGET_FINALIZER,
  WidgetWorld,
  aWidget,
  aWidgetRef,
  type Item,
  type Widget,
} from "../testing/fake-plugin.ts";
import { resultSummary } from "../testing/fake-world.ts";
import type { ManagedResource } from "./contract.ts";
import { deletionPolicyOf, policiesOf, type ManagementPolicy } from "./policies.ts";
import { ExternalResourceReconciler } from "./reconciler.ts";

const ours = { owner: "k8s", uid: "uid-foo" };
/** The Widget's adoption-policy annotation (adoption.ts). */
const ADOPT = "test.example.com/adoption-policy";
const foreign = { owner: "someone-else" };
const observe: ManagementPolicy[] = ["Observe"];
const noUpdate: ManagementPolicy[] = ["Observe", "Create", "Delete"];
const noDelete: ManagementPolicy[] = ["Observe", "Create", "Update"];

interface Row {
  /** Why this exit exists. */
  reason: string;
  /** The Widget the cache shows; the world as it is before the reconcile. */
  setup: (w: WidgetWorld) => Widget;
  result: string;
  /** The Widget's conditions after the reconcile, `Type=Status Reason`. */
  conditions: string[];
  /** Every call, on both sides, in order. */
  calls: string[];
  events?: string[];
  /** The Widget's `status.atProvider` after the reconcile, when the row says. */
  atProvider?: Record<string, unknown>;
  /** Words the Ready or Synced message must carry. */
  says?: { Ready?: string; Synced?: string };
  /** The deletion policy the intent record says afterwards, when the row says. */
  recordSays?: "Delete" | "Orphan";
  /** The Widget still holds (true) or no longer holds (false) our finalizer afterwards. */
  finalizer?: boolean;
}

const rows: Row[] = [
  {
    reason: "observe only, a foreign item holds the name: read live by name, reported, never written",
    setup: (w) => {
      w.api.put({ id: "i7", name: "default.foo", size: 3, tags: foreign });
      return aWidget({ managementPolicies: observe });
    },
    result: "requeueAfter:30000",
    conditions: ["Ready=True Available", "Synced=True ObserveOnly"],
    calls: ["items.getByName default.foo", "kube.updateStatus"],
    atProvider: { id: "i7", size: 3 },
    says: { Ready: '"someone-else"', Synced: '["Observe"] has no Create' },
    finalizer: false,
  },
  {
    reason: "observe only, nothing holds the name: Absent, and nothing is created",
    setup: () => aWidget({ managementPolicies: observe }),
    result: "requeueAfter:30000",
    conditions: ["Ready=False Absent", "Synced=True ObserveOnly"],
    calls: ["items.getByName default.foo", "kube.updateStatus"],
    atProvider: {},
  },
  {
    reason: "observe only, already reported: one read, no write at all",
    setup: (w) => {
      w.api.put({ id: "i7", name: "default.foo", size: 3, tags: foreign });
      const at = "2026-01-01T00:00:00Z";
      return aWidget({
        managementPolicies: observe,
        status: {
          observedGeneration: 1,
          itemId: "i7",
          itemName: "default.foo",
          atProvider: { id: "i7", size: 3 },
          conditions: [
            {
              type: "Ready",
              status: "True",
              observedGeneration: 1,
              reason: "Available",
              message: 'Item default.foo (i7) exists, owner tag "someone-else" (observed only)',
              lastTransitionTime: at,
            },
            {
              type: "Synced",
              status: "True",
              observedGeneration: 1,
              reason: "ObserveOnly",
              message:
                'Observed only: spec.managementPolicies ["Observe"] has no Create, so the item is never created, updated or deleted',
              lastTransitionTime: at,
            },
          ],
        },
      });
    },
    result: "requeueAfter:30000",
    conditions: ["Ready=True Available", "Synced=True ObserveOnly"],
    calls: ["items.getByName default.foo"],
  },
  {
    reason:
      "observe only, the item is ours and differs from the spec: the cache shows it, nothing is repaired",
    setup: (w) => {
      w.api.put({ id: "i1", name: "default.foo", size: 9, tags: ours });
      return aWidget({ managementPolicies: observe, finalizers: [WIDGET_FINALIZER] });
    },
    result: "requeueAfter:30000",
    conditions: ["Ready=True Available", "Synced=True ObserveOnly"],
    calls: ["kube.updateStatus"],
    atProvider: { id: "i1", size: 9 },
    finalizer: true,
  },
  {
    reason:
      "observe only, switched from * with our record: the record now says Orphan, nothing outside written",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: ours });
      return aWidget({ managementPolicies: observe, finalizers: [WIDGET_FINALIZER] });
    },
    result: "requeueAfter:30000",
    conditions: ["Ready=True Available", "Synced=True ObserveOnly"],
    calls: [
      'kube.updateWidgetRefSpec default.foo {"widget":{"namespace":"default","name":"foo","uid":"uid-foo"},"itemName":"default.foo","deletionPolicy":"Orphan","owner":"k8s"}',
      "kube.updateStatus",
    ],
  },
  {
    reason: "observe only, deleted without our finalizer: nothing to do, nothing read or written",
    setup: (w) => {
      w.api.put({ id: "i7", name: "default.foo", size: 3, tags: foreign });
      return aWidget({ managementPolicies: observe, deleting: true });
    },
    result: "done",
    conditions: [],
    calls: [],
  },
  {
    reason:
      "observe only, deleted with our finalizer (switched from *) over a foreign item: finalizer removed, no write outside",
    setup: (w) => {
      w.api.put({ id: "i7", name: "default.foo", size: 3, tags: foreign });
      return aWidget({ managementPolicies: observe, deleting: true, finalizers: [WIDGET_FINALIZER] });
    },
    result: "done",
    conditions: [],
    calls: ["items.getByName default.foo", "kube.removeFinalizer"],
    finalizer: false,
  },
  {
    reason:
      "observe only, deleted with our finalizer over OUR item (switched from *): released, never deleted",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef("uid-foo", { deletionPolicy: "Orphan" }));
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: ours });
      return aWidget({ managementPolicies: observe, deleting: true, finalizers: [WIDGET_FINALIZER] });
    },
    result: "done",
    conditions: [],
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["OrphanedItem"],
  },
  {
    reason: "without Update, drift: left alone (no write), reported in Synced and atProvider",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef());
      w.api.put({ id: "i1", name: "default.foo", size: 7, tags: ours });
      return aWidget({ managementPolicies: noUpdate, finalizers: [WIDGET_FINALIZER] });
    },
    result: "done",
    conditions: ["Ready=True Available", "Synced=True DriftLeftAlone"],
    calls: ["kube.updateStatus"],
    atProvider: { id: "i1", size: 7 },
    says: { Synced: "size: 7 → 1" },
  },
  {
    reason: "without Update, absent: created as usual",
    setup: () => aWidget({ managementPolicies: noUpdate }),
    result: "done",
    conditions: ["Ready=True Available", "Synced=True ReconcileSuccess"],
    calls: [
      "kube.addFinalizer",
      "kube.createWidgetRef default.foo",
      "items.create default.foo",
      "kube.updateStatus",
    ],
    events: ["CreatedItem"],
    atProvider: { id: "i1", size: 1 },
  },
  {
    reason:
      "without Update, adopt on request: the update writes the owner tags only; the size is left as it was and reported",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: {} });
      return aWidget({
        managementPolicies: noUpdate,
        finalizers: [WIDGET_FINALIZER],
        annotations: { [ADOPT]: "adopt" },
      });
    },
    result: "done",
    conditions: ["Ready=True Available", "Synced=True DriftLeftAlone"],
    calls: [
      "kube.createWidgetRef default.foo",
      "items.getByName default.foo",
      'items.update f1 {"tags":{"owner":"k8s","uid":"uid-foo"}}',
      "kube.updateStatus",
    ],
    events: ["AdoptedItem"],
    atProvider: { id: "f1", size: 9 },
    says: { Synced: "size: 9 → 1" },
  },
  {
    reason:
      "without Update, adopt-or-create meets an item with no owner tag: the owner tags only, the size left alone",
    setup: (w) => {
      w.api.put({ id: "f1", name: "default.foo", size: 9, tags: { team: "blue" } });
      return aWidget({
        managementPolicies: noUpdate,
        finalizers: [WIDGET_FINALIZER],
        annotations: { [ADOPT]: "adopt-or-create" },
      });
    },
    result: "done",
    conditions: ["Ready=True Available", "Synced=True DriftLeftAlone"],
    calls: [
      "kube.createWidgetRef default.foo",
      "items.create default.foo",
      "items.getByName default.foo",
      'items.update f1 {"tags":{"owner":"k8s","uid":"uid-foo"}}',
      "kube.updateStatus",
    ],
    events: ["AdoptedItem"],
    atProvider: { id: "f1", size: 9 },
    says: { Synced: "has no Update" },
  },
  {
    reason: "without Delete: the intent record is written with Orphan",
    recordSays: "Orphan",
    events: ["CreatedItem"],
    setup: () => aWidget({ managementPolicies: noDelete, finalizers: [WIDGET_FINALIZER] }),
    result: "done",
    conditions: ["Ready=True Available", "Synced=True ReconcileSuccess"],
    calls: ["kube.createWidgetRef default.foo", "items.create default.foo", "kube.updateStatus"],
  },
  {
    reason: "without Delete, deleted: released like Orphan, never deleted",
    setup: (w) => {
      w.intentObjects.set("default.foo", aWidgetRef("uid-foo", { deletionPolicy: "Orphan" }));
      w.api.put({ id: "i1", name: "default.foo", size: 1, tags: ours });
      return aWidget({ managementPolicies: noDelete, deleting: true, finalizers: [WIDGET_FINALIZER] });
    },
    result: "done",
    conditions: [],
    calls: ["items.release i1", "kube.deleteWidgetRef default.foo", "kube.removeFinalizer"],
    events: ["OrphanedItem"],
  },
];

describe("ExternalResourceReconciler: management policies, every exit", () => {
  it.each(rows)("$reason", async (row) => {
    const world = new WidgetWorld();
    const widget = row.setup(world);
    world.resourceObjects.set("default/foo", widget);
    const reconciler = new ExternalResourceReconciler<Widget, Item>({
      ...world.deps(),
      resources: { get: (k) => (k === "default/foo" ? widget : undefined), list: () => [] },
    });

    const got = await reconciler.reconcile("default/foo", new AbortController().signal);

    expect(resultSummary(got)).toBe(row.result);
    const after = world.resourceObjects.get("default/foo");
    const conditions = after?.status?.conditions ?? [];
    expect(conditions.map((c) => `${c.type}=${c.status} ${c.reason}`)).toEqual(row.conditions);
    expect(world.calls).toEqual(row.calls);
    expect(world.events.map((e) => e.reason)).toEqual(row.events ?? []);
    if (row.atProvider) expect(after?.status?.atProvider).toEqual(row.atProvider);
    for (const [type, words] of Object.entries(row.says ?? {})) {
      expect(conditions.find((c) => c.type === type)?.message, `the ${type} message`).toContain(words);
    }
    if (row.recordSays) {
      expect(world.intentObjects.get("default.foo")?.spec.deletionPolicy).toBe(row.recordSays);
    }
    if (row.finalizer !== undefined) {
      expect(after?.metadata.finalizers?.includes(WIDGET_FINALIZER) ?? false).toBe(row.finalizer);
    }
  });
});

/** A resource with these management policies (and deletion policy), for the reading rows. */
function withPolicies(managementPolicies?: ManagementPolicy[], deletionPolicy?: "Orphan"): ManagedResource {
  return {
    metadata: { name: "foo", namespace: "default", uid: "u" },
    spec: {
      ...(managementPolicies ? { managementPolicies } : {}),
      ...(deletionPolicy ? { deletionPolicy } : {}),
    },
  };
}

describe("policiesOf / deletionPolicyOf", () => {
  it.each([
    { reason: "unset is everything", given: undefined, create: true, update: true, del: "Delete" },
    { reason: "* is everything", given: ["*"], create: true, update: true, del: "Delete" },
    {
      reason: "Observe alone writes nothing",
      given: ["Observe"],
      create: false,
      update: false,
      del: "Orphan",
    },
    {
      reason: "without Create nothing else counts (an object we did not create is never written)",
      given: ["Observe", "Update", "Delete"],
      create: false,
      update: false,
      del: "Orphan",
    },
    {
      reason: "without Update",
      given: ["Observe", "Create", "Delete"],
      create: true,
      update: false,
      del: "Delete",
    },
    {
      reason: "without Delete: Orphan",
      given: ["Observe", "Create", "Update"],
      create: true,
      update: true,
      del: "Orphan",
    },
    {
      reason: "LateInitialize does nothing",
      given: ["Observe", "Create", "Update", "Delete", "LateInitialize"],
      create: true,
      update: true,
      del: "Delete",
    },
    {
      reason: "an empty list allows nothing: observe only",
      given: [],
      create: false,
      update: false,
      del: "Orphan",
    },
  ] as const)("$reason", ({ given, create, update, del }) => {
    const resource = withPolicies(given === undefined ? undefined : [...given]);
    const p = policiesOf(resource);
    expect({ create: p.create, update: p.update }).toEqual({ create, update });
    expect(deletionPolicyOf(resource)).toBe(del);
  });

  it("deletionPolicy Orphan stays Orphan under *", () => {
    expect(deletionPolicyOf(withPolicies(["*"], "Orphan"))).toBe("Orphan");
  });
});

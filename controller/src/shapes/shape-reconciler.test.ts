import { describe, expect, it } from "vitest";
import { CloudError } from "./cloud/client.ts";
import { FINALIZER, PAUSED_ANNOTATION, type Shape } from "./api.ts";
import { ShapeReconciler } from "./shape-reconciler.ts";
import { FakeWorld, aCloudShape, aShape } from "./testing.ts";

const ours = { owner: "k8s", "k8s-uid": "uid-foo", "k8s-name": "default/foo" };
const converged = (
  world: FakeWorld,
  shape: Shape,
  cloud = aCloudShape({ name: "default.foo", id: "c1", tags: ours }),
) => {
  world.cloud.set(cloud.id, cloud);
  world.shapeRefs.set("default.foo", {
    metadata: { name: "default.foo" },
    spec: {
      shape: { namespace: "default", name: "foo", uid: "uid-foo" },
      cloudName: "default.foo",
      owner: "k8s",
    },
    status: { phase: "Created", cloudId: cloud.id },
  });
  return shape;
};
const readyStatus = {
  observedGeneration: 1,
  cloudId: "c1",
  cloudName: "default.foo",
  driftRepairs: 0,
  lastSyncTime: "2026-01-01T00:00:00Z",
  conditions: [
    {
      type: "Ready",
      status: "True" as const,
      observedGeneration: 1,
      reason: "Available",
      message: "Cloud shape default.foo matches the spec",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    },
    {
      type: "Synced",
      status: "True" as const,
      observedGeneration: 1,
      reason: "ReconcileSuccess",
      message: "The cloud matches the spec",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    },
  ],
};

interface Case {
  reason: string;
  setup: (world: FakeWorld) => Shape | undefined;
  result: string;
  calls: string[];
  check?: (world: FakeWorld) => void;
  /** The cache still shows the Shape `setup` returns, but the API server (the world) no longer has it. */
  staleCache?: true;
  /** The ShapeRef cache shows nothing (its informer is catching up), whatever the API server (world) holds. */
  refCacheEmpty?: true;
}

const cases: Case[] = [
  {
    reason: "a Shape not in the cache is gone: nothing to do",
    setup: () => undefined,
    result: "done",
    calls: [],
  },
  {
    reason:
      "a new Shape gets the finalizer, then the ShapeRef, then the cloud shape with owner tags, then status",
    setup: () => aShape(),
    result: "done",
    calls: [
      "kube.addFinalizer",
      "kube.createShapeRef default.foo",
      "cloud.create default.foo",
      "kube.setShapeRefPhase default.foo Created",
      "kube.updateStatus",
    ],
    check: (w) => {
      const [cloud] = [...w.cloud.values()];
      expect(cloud?.tags).toEqual(ours);
      expect(w.shapes.get("default/foo")?.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual([
        "Ready=True",
        "Synced=True",
      ]);
      expect(w.events.map((e) => e.reason)).toEqual(["CreatedCloudShape"]);
    },
  },
  {
    reason: "a converged Shape costs zero writes on either side (no churn)",
    setup: (w) => converged(w, aShape({ finalizers: [FINALIZER], status: readyStatus })),
    result: "done",
    calls: [],
  },
  {
    reason:
      "a deletionPolicy changed to Orphan is kept on the ShapeRef too (a missed deletion honours it), nothing else",
    setup: (w) =>
      converged(
        w,
        aShape({ finalizers: [FINALIZER], status: readyStatus, spec: { deletionPolicy: "Orphan" } }),
      ),
    result: "done",
    calls: ['kube.updateShapeRefSpec default.foo {"deletionPolicy":"Orphan","owner":"k8s"}'],
    check: (w) => expect(w.shapeRefs.get("default.foo")?.spec.deletionPolicy).toBe("Orphan"),
  },
  {
    reason: "a spec change is written to the cloud with If-Match and counted as an update, not drift",
    setup: (w) =>
      converged(
        w,
        aShape({ finalizers: [FINALIZER], generation: 2, spec: { color: "blue" }, status: readyStatus }),
      ),
    result: "done",
    calls: ['cloud.patch c1 {"color":"blue"}', "kube.updateStatus"],
    check: (w) => {
      expect(w.events.map((e) => e.reason)).toEqual(["UpdatedCloudShape"]);
      expect(w.counts.driftRepaired).toBe(0);
      expect(w.shapes.get("default/foo")?.status?.observedGeneration).toBe(2);
    },
  },
  {
    reason: "a cloud-side recolor with an unchanged spec is drift: repaired and counted",
    setup: (w) =>
      converged(
        w,
        aShape({ finalizers: [FINALIZER], status: readyStatus }),
        aCloudShape({ name: "default.foo", id: "c1", color: "purple", tags: ours }),
      ),
    result: "done",
    calls: ['cloud.patch c1 {"color":"red"}', "kube.updateStatus"],
    check: (w) => {
      expect(w.cloud.get("c1")?.color).toBe("red");
      expect(w.events.map((e) => e.reason)).toEqual(["RepairedCloudDrift"]);
      expect(w.counts.driftRepaired).toBe(1);
      expect(w.shapes.get("default/foo")?.status?.driftRepairs).toBe(1);
    },
  },
  {
    reason: "a tag someone else added to our shape is left alone; a removed owner-side tag is restored",
    setup: (w) =>
      converged(
        w,
        aShape({ finalizers: [FINALIZER], status: readyStatus }),
        aCloudShape({
          name: "default.foo",
          id: "c1",
          tags: { owner: "k8s", "k8s-uid": "uid-foo", team: "blue" },
        }),
      ),
    result: "done",
    calls: ['cloud.patch c1 {"tags":{"k8s-name":"default/foo"}}', "kube.updateStatus"],
    check: (w) => expect(w.cloud.get("c1")?.tags).toEqual({ ...ours, team: "blue" }),
  },
  {
    reason: "a cloud shape deleted by a human is created again",
    setup: (w) => {
      const shape = converged(w, aShape({ finalizers: [FINALIZER], status: readyStatus }));
      w.cloud.clear();
      return shape;
    },
    result: "done",
    calls: ["cloud.create default.foo", "kube.setShapeRefPhase default.foo Created", "kube.updateStatus"],
  },
  {
    reason:
      "after a crash right after the create, the 409 leads to our own shape (uid tag): adopted, no duplicate",
    setup: (w) => {
      const shape = aShape({ finalizers: [FINALIZER] });
      w.shapeRefs.set("default.foo", {
        metadata: { name: "default.foo" },
        spec: {
          shape: { namespace: "default", name: "foo", uid: "uid-foo" },
          cloudName: "default.foo",
          owner: "k8s",
        },
        status: { phase: "Pending" },
      });
      w.cloud.set("c9", aCloudShape({ name: "default.foo", id: "c9", tags: ours }));
      w.hiddenFromCache.add("c9");
      return shape;
    },
    result: "done",
    calls: [
      "cloud.create default.foo",
      "cloud.get c9",
      "kube.setShapeRefPhase default.foo Created",
      "kube.updateStatus",
    ],
    check: (w) => {
      expect(w.cloud.size).toBe(1);
      expect(w.events.map((e) => e.reason)).toEqual(["AdoptedCloudShape"]);
    },
  },
  {
    reason:
      "a foreign shape holding our name is never modified: NameConflict, and a look again in a few seconds (its deletion is not in our watch)",
    setup: (w) => {
      w.cloud.set(
        "f1",
        aCloudShape({ name: "default.foo", id: "f1", color: "green", tags: { owner: "someone-else" } }),
      );
      return aShape({ finalizers: [FINALIZER] });
    },
    result: "requeueAfter",
    calls: [
      "kube.createShapeRef default.foo",
      "cloud.create default.foo",
      "cloud.get f1",
      "kube.updateStatus",
    ],
    check: (w) => {
      expect(w.cloud.get("f1")).toMatchObject({ color: "green", tags: { owner: "someone-else" } });
      expect(w.events.map((e) => e.reason)).toEqual(["NameConflict"]);
      expect(w.counts.foreignSeen).toBe(1);
      expect(w.shapes.get("default/foo")?.status?.conditions?.find((c) => c.type === "Synced")?.reason).toBe(
        "NameConflict",
      );
    },
  },
  {
    reason:
      "a cache trailing our own create (the ShapeRef already records the id): the 409 leads to it, no write, and no 'Adopted' news",
    setup: (w) => {
      const shape = converged(w, aShape({ finalizers: [FINALIZER], status: readyStatus }));
      w.hiddenFromCache.add("c1");
      return shape;
    },
    result: "done",
    calls: ["cloud.create default.foo", "cloud.get c1"],
    check: (w) => {
      expect(w.cloud.size).toBe(1);
      expect(w.events).toEqual([]);
    },
  },
  {
    reason: "a throttled create is retried after the cloud's Retry-After",
    setup: (w) => {
      w.cloudFailures.set("create", new CloudError("cannot create: throttled", 429, undefined, 7000));
      return aShape({ finalizers: [FINALIZER] });
    },
    result: "error:7000",
    calls: ["kube.createShapeRef default.foo", "cloud.create default.foo", "kube.updateStatus"],
  },
  {
    reason:
      "a ShapeRef left by an earlier Shape of the same name: wait for its cleanup, touch nothing in the cloud",
    setup: (w) => {
      w.shapeRefs.set("default.foo", {
        metadata: { name: "default.foo" },
        spec: { shape: { namespace: "default", name: "foo", uid: "old-uid" }, cloudName: "default.foo" },
      });
      return aShape({ finalizers: [FINALIZER] });
    },
    result: "requeueAfter",
    calls: ["kube.updateStatus"],
  },
  {
    reason: "deleting with policy Delete: cloud shape, then ShapeRef, then finalizer",
    setup: (w) => converged(w, aShape({ finalizers: [FINALIZER], deleting: true, status: readyStatus })),
    result: "done",
    calls: ["cloud.delete c1", "kube.deleteShapeRef default.foo", "kube.removeFinalizer"],
    check: (w) => {
      expect(w.cloud.size).toBe(0);
      expect(w.shapes.size).toBe(0);
    },
  },
  {
    reason: "deleting when the cloud shape is already gone (404) still lets the Shape go",
    setup: (w) => {
      const shape = converged(w, aShape({ finalizers: [FINALIZER], deleting: true, status: readyStatus }));
      w.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: ours }));
      w.cloudFailures.set("delete", new CloudError("not found", 404));
      return shape;
    },
    result: "done",
    calls: ["cloud.delete c1", "kube.deleteShapeRef default.foo", "kube.removeFinalizer"],
  },
  {
    reason:
      "deleting while the cache trails the create: the shape is read live by name, proven ours, deleted",
    setup: (w) => {
      const shape = converged(w, aShape({ finalizers: [FINALIZER], deleting: true, status: readyStatus }));
      w.hiddenFromCache.add("c1");
      return shape;
    },
    result: "done",
    calls: [
      "cloud.getByName default.foo",
      "cloud.delete c1",
      "kube.deleteShapeRef default.foo",
      "kube.removeFinalizer",
    ],
    check: (w) => expect(w.cloud.size).toBe(0),
  },
  {
    reason:
      "regression: a foreign shape holding our name (after a ShapeRef recorded ours): read, found not ours, never deleted",
    setup: (w) => {
      const shape = converged(w, aShape({ finalizers: [FINALIZER], deleting: true, status: readyStatus }));
      w.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: { owner: "someone-else" } }));
      return shape;
    },
    result: "done",
    calls: ["cloud.getByName default.foo", "kube.deleteShapeRef default.foo", "kube.removeFinalizer"],
    check: (w) => expect(w.cloud.get("c1")?.tags).toEqual({ owner: "someone-else" }),
  },
  {
    reason:
      "regression: our former shape, disowned in the console (owner tag removed), is left when the Shape goes",
    setup: (w) => {
      const shape = converged(w, aShape({ finalizers: [FINALIZER], deleting: true, status: readyStatus }));
      w.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: { "k8s-uid": "uid-foo" } }));
      return shape;
    },
    result: "done",
    calls: ["cloud.getByName default.foo", "kube.deleteShapeRef default.foo", "kube.removeFinalizer"],
    check: (w) => expect(w.cloud.has("c1")).toBe(true),
  },
  {
    reason:
      "regression: orphaning while the cache trails the create still strips our tags (else the sweep would delete it)",
    setup: (w) => {
      const shape = converged(
        w,
        aShape({
          finalizers: [FINALIZER],
          deleting: true,
          spec: { deletionPolicy: "Orphan" },
          status: readyStatus,
        }),
      );
      w.hiddenFromCache.add("c1");
      return shape;
    },
    result: "done",
    calls: [
      "cloud.getByName default.foo",
      'cloud.patch c1 {"tags":{"owner":null,"k8s-uid":null,"k8s-name":null}}',
      "kube.deleteShapeRef default.foo",
      "kube.removeFinalizer",
    ],
    check: (w) => expect(w.cloud.get("c1")?.tags).toEqual({}),
  },
  {
    reason: "deleting with policy Orphan: the cloud shape stays, without our owner tags",
    setup: (w) =>
      converged(
        w,
        aShape({
          finalizers: [FINALIZER],
          deleting: true,
          spec: { deletionPolicy: "Orphan" },
          status: readyStatus,
        }),
      ),
    result: "done",
    calls: [
      'cloud.patch c1 {"tags":{"owner":null,"k8s-uid":null,"k8s-name":null}}',
      "kube.deleteShapeRef default.foo",
      "kube.removeFinalizer",
    ],
    check: (w) => expect(w.cloud.get("c1")?.tags).toEqual({}),
  },
  {
    reason:
      "regression: a cache that still shows the Shape after an earlier pass let it go (404 on the finalizer) is done, not a failure",
    setup: () =>
      aShape({
        finalizers: [FINALIZER],
        deleting: true,
        spec: { deletionPolicy: "Orphan" },
        status: readyStatus,
      }),
    staleCache: true,
    result: "done",
    calls: ["cloud.getByName default.foo", "kube.removeFinalizer"],
  },
  {
    reason:
      "regression: a ShapeRef the cache has not seen yet (409 on create) is read and used, not retried until the cache catches up",
    setup: (w) => {
      const shape = converged(w, aShape({ finalizers: [FINALIZER] }));
      w.cloud.clear();
      return shape;
    },
    refCacheEmpty: true,
    result: "done",
    calls: [
      "kube.createShapeRef default.foo",
      "cloud.create default.foo",
      "kube.setShapeRefPhase default.foo Created",
      "kube.updateStatus",
    ],
  },
  {
    reason:
      "a ShapeRef of an earlier Shape found only by the 409 on create: wait for its cleanup, create nothing",
    setup: (w) => {
      const shape = converged(w, aShape({ finalizers: [FINALIZER], uid: "uid-new" }));
      w.cloud.clear();
      return shape;
    },
    refCacheEmpty: true,
    result: "requeueAfter",
    calls: ["kube.createShapeRef default.foo", "kube.updateStatus"],
  },
  {
    reason: "a deleting Shape without our finalizer is not ours to hold",
    setup: () => aShape({ deleting: true, finalizers: ["someone/else"] }),
    result: "done",
    calls: [],
  },
  {
    reason: "a paused Shape gets no writes but its Synced condition, even with drift in the cloud",
    setup: (w) =>
      converged(
        w,
        aShape({
          finalizers: [FINALIZER],
          annotations: { [PAUSED_ANNOTATION]: "true" },
          status: readyStatus,
        }),
        aCloudShape({ name: "default.foo", id: "c1", color: "purple", tags: ours }),
      ),
    result: "done",
    calls: ["kube.updateStatus"],
    check: (w) => {
      expect(w.cloud.get("c1")?.color).toBe("purple");
      expect(w.shapes.get("default/foo")?.status?.conditions?.find((c) => c.type === "Synced")?.reason).toBe(
        "ReconcilePaused",
      );
    },
  },
  {
    reason:
      "a paused Shape being deleted keeps its finalizer and its cloud shape: deletion waits for unpause",
    setup: (w) =>
      converged(
        w,
        aShape({
          finalizers: [FINALIZER],
          deleting: true,
          annotations: { [PAUSED_ANNOTATION]: "true" },
          status: readyStatus,
        }),
        aCloudShape({ name: "default.foo", id: "c1", tags: ours }),
      ),
    result: "done",
    calls: ["kube.updateStatus"],
    check: (w) => {
      expect(w.cloud.has("c1")).toBe(true);
      expect(w.shapes.get("default/foo")?.metadata.finalizers).toEqual([FINALIZER]);
      expect(
        w.shapes.get("default/foo")?.status?.conditions?.find((c) => c.type === "Synced")?.message,
      ).toMatch(/deletion waits/);
    },
  },
];

describe("ShapeReconciler", () => {
  it.each(cases)("$reason", async ({ setup, result, calls, check, staleCache, refCacheEmpty }) => {
    const world = new FakeWorld();
    const shape = setup(world);
    if (shape && !staleCache) world.shapes.set(`${shape.metadata.namespace}/${shape.metadata.name}`, shape);
    const cached = (k: string) => (staleCache ? shape : world.shapes.get(k));
    const reconciler = new ShapeReconciler({
      ...world.deps(),
      shapes: { get: cached, list: () => [...world.shapes.values()] },
      ...(refCacheEmpty ? { shapeRefs: { get: () => undefined, list: () => [] } } : {}),
    });
    const got = await reconciler.reconcile("default/foo", new AbortController().signal);
    const summary =
      got.kind === "error" && got.retryAfterMs !== undefined ? `error:${got.retryAfterMs}` : got.kind;
    expect(summary).toBe(result);
    expect(world.calls).toEqual(calls);
    check?.(world);
  });

  it("never mutates the objects it reads from the cache", async () => {
    const world = new FakeWorld();
    const shape = deepFreeze(
      aShape({ finalizers: [FINALIZER], generation: 2, spec: { color: "blue" }, status: readyStatus }),
    );
    converged(world, shape);
    world.shapes.set("default/foo", shape);
    for (const ref of world.shapeRefs.values()) deepFreeze(ref);
    const reconciler = new ShapeReconciler(world.deps());
    await expect(reconciler.reconcile("default/foo", new AbortController().signal)).resolves.toEqual({
      kind: "done",
    });
  });
});

describe("ShapeReconciler after an upgrade from the constant owner id k8s (now k8s-cluster-a)", () => {
  const OLD = { owner: "k8s", "k8s-uid": "uid-foo", "k8s-name": "default/foo" };
  const cases: {
    reason: string;
    cloud: Record<string, string>;
    deleting?: true;
    calls: string[];
    check: (w: FakeWorld) => void;
  }[] = [
    {
      reason:
        "our shape under the old id (same name, our uid) is adopted: retagged, with its drift, in one PATCH",
      cloud: OLD,
      calls: [
        "kube.createShapeRef default.foo",
        "cloud.create default.foo",
        "cloud.get c9",
        'cloud.patch c9 {"color":"red","tags":{"owner":"k8s-cluster-a"}}',
        "kube.setShapeRefPhase default.foo Created",
        "kube.updateStatus",
      ],
      check: (w) => {
        expect(w.cloud.get("c9")).toMatchObject({ color: "red", tags: { ...OLD, owner: "k8s-cluster-a" } });
        expect(w.events.map((e) => e.reason)).toEqual(["AdoptedCloudShape"]);
        expect(w.counts).toMatchObject({ adopted: 1, driftRepaired: 0, foreignSeen: 0 });
      },
    },
    {
      reason:
        "another cluster's shape under the same old id (another uid) is not ours: NameConflict, never written",
      cloud: { ...OLD, "k8s-uid": "uid-of-cluster-b" },
      calls: [
        "kube.createShapeRef default.foo",
        "cloud.create default.foo",
        "cloud.get c9",
        "kube.updateStatus",
      ],
      check: (w) => {
        expect(w.cloud.get("c9")).toMatchObject({
          color: "green",
          tags: { ...OLD, "k8s-uid": "uid-of-cluster-b" },
        });
        expect(w.events.map((e) => e.reason)).toEqual(["NameConflict"]);
        expect(w.counts.adopted).toBe(0);
      },
    },
    {
      reason: "a shape with an owner id we never had, and our uid, is not ours either: NameConflict",
      cloud: { ...OLD, owner: "k8s-cluster-b" },
      calls: [
        "kube.createShapeRef default.foo",
        "cloud.create default.foo",
        "cloud.get c9",
        "kube.updateStatus",
      ],
      check: (w) => expect(w.events.map((e) => e.reason)).toEqual(["NameConflict"]),
    },
    {
      reason: "a Shape deleted during the upgrade: its shape under the old id is found by name and deleted",
      cloud: OLD,
      deleting: true,
      calls: ["cloud.getByName default.foo", "cloud.delete c9", "kube.removeFinalizer"],
      check: (w) => expect(w.cloud.size).toBe(0),
    },
  ];
  it.each(cases)("$reason", async ({ cloud, deleting, calls, check }) => {
    const world = new FakeWorld("k8s-cluster-a");
    world.cloud.set("c9", aCloudShape({ name: "default.foo", id: "c9", color: "green", tags: cloud }));
    world.shapes.set(
      "default/foo",
      aShape({ finalizers: [FINALIZER], ...(deleting ? { deleting, status: readyStatus } : {}) }),
    );
    const reconciler = new ShapeReconciler({ ...world.deps(), adoptOwnerIds: ["k8s"] });
    await reconciler.reconcile("default/foo", new AbortController().signal);
    expect(world.calls).toEqual(calls);
    check(world);
  });
});

describe("ShapeReconciler in NameConflict", () => {
  const setup = () => {
    const world = new FakeWorld();
    world.cloud.set("f1", aCloudShape({ name: "default.foo", id: "f1", tags: { owner: "someone-else" } }));
    world.shapes.set("default/foo", aShape({ finalizers: [FINALIZER] }));
    const reconciler = new ShapeReconciler({ ...world.deps(), conflictRecheckMs: 3_000 });
    const reconcile = () => reconciler.reconcile("default/foo", new AbortController().signal);
    return { world, reconcile };
  };

  it("looks again in a few seconds, with one read by name and no write while the name stays taken", async () => {
    const { world, reconcile } = setup();
    await expect(reconcile()).resolves.toEqual({ kind: "requeueAfter", afterMs: 3_000 });
    world.calls.length = 0;
    await expect(reconcile()).resolves.toEqual({ kind: "requeueAfter", afterMs: 3_000 });
    expect(world.calls).toEqual(["cloud.getByName default.foo"]);
    expect(world.events.map((e) => e.reason)).toEqual(["NameConflict"]); // told once, not every look
    expect(world.counts.foreignSeen).toBe(1);
  });

  it("takes the name as soon as the foreign shape is gone", async () => {
    const { world, reconcile } = setup();
    await reconcile();
    world.cloud.delete("f1");
    world.calls.length = 0;
    await expect(reconcile()).resolves.toEqual({ kind: "done" });
    expect(world.calls).toEqual([
      "cloud.getByName default.foo",
      "cloud.create default.foo",
      "kube.setShapeRefPhase default.foo Created",
      "kube.updateStatus",
    ]);
    expect(world.shapes.get("default/foo")?.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual([
      "Ready=True",
      "Synced=True",
    ]);
  });
});

function deepFreeze<T>(obj: T): T {
  if (typeof obj === "object" && obj !== null) {
    for (const v of Object.values(obj)) deepFreeze(v);
    Object.freeze(obj);
  }
  return obj;
}

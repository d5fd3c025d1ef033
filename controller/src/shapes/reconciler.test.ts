/**
 * The external-resource reconciler (library/src/reconcile/reconciler.ts) driving Shapes: the real Shape
 * plugin and cloud client adapter (plugin.ts) over the fake world (testing.ts).
 */
import { describe, expect, it } from "vitest";
import { ExternalResourceReconciler, type ReconcilerDeps, type ReconcileResult } from "reconcile-kit";
import { FINALIZER, PAUSED_ANNOTATION, type Shape } from "./api.ts";
import { CloudError, type CloudShape } from "./cloud/client.ts";
import { FakeWorld, aCloudShape, aShape, converged, kubeError, ours, readyStatus } from "./testing.ts";

/** The reconciler over `world`, with `overrides` of its dependencies. */
const reconcilerFor = (world: FakeWorld, overrides: Partial<ReconcilerDeps<Shape, CloudShape>> = {}) =>
  new ExternalResourceReconciler<Shape, CloudShape>({ ...world.deps(), ...overrides });

/** A result as the tables write it: its kind, and the Retry-After of a failure when the cloud gave one. */
const summary = (got: ReconcileResult) =>
  got.kind === "failed" && got.retryAfterMs !== undefined ? `failed:${got.retryAfterMs}` : got.kind;

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
  /** Dependencies other than the world's defaults (options of the reconciler). */
  deps?: () => Partial<ReconcilerDeps<Shape, CloudShape>>;
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
      // Four Kubernetes writes with the Event: the ShapeRef keeps its spec; the cloud id is on the Shape.
      expect(w.shapeRefs.get("default.foo")?.status).toBeUndefined();
      expect(w.shapes.get("default/foo")?.status).toMatchObject({ cloudId: cloud?.id });
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
      "a deletionPolicy changed to Orphan is kept on the ShapeRef too (a missed deletion honours it), nothing else (the library patches the whole spec it keeps, no longer only the two fields)",
    setup: (w) =>
      converged(
        w,
        aShape({ finalizers: [FINALIZER], status: readyStatus, spec: { deletionPolicy: "Orphan" } }),
        undefined,
        "Delete",
      ),
    result: "done",
    calls: [
      'kube.updateShapeRefSpec default.foo {"shape":{"namespace":"default","name":"foo","uid":"uid-foo"},"cloudName":"default.foo","deletionPolicy":"Orphan","owner":"k8s"}',
    ],
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
      expect(w.events.map((e) => e.reason)).toEqual(["RepairedCloudShapeDrift"]);
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
    calls: ["cloud.create default.foo", "kube.updateStatus"],
  },
  {
    reason:
      "after a crash right after the create, the 409 leads to our own shape (uid tag), read by name (design change 3): adopted, no duplicate",
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
    calls: ["cloud.create default.foo", "cloud.getByName default.foo", "kube.updateStatus"],
    check: (w) => {
      expect(w.cloud.size).toBe(1);
      expect(w.events.map((e) => e.reason)).toEqual(["AdoptedCloudShape"]);
    },
  },
  {
    reason:
      "a foreign shape holding our name (read by name after the 409: design change 3) is never modified: NameConflict, and a look again in a few seconds (its deletion is not in our watch)",
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
      "cloud.getByName default.foo",
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
      "a cache trailing our own create (the ShapeRef already records the id): the 409 leads to it (read by name: design change 3), no write, and no 'Adopted' news",
    setup: (w) => {
      const shape = converged(w, aShape({ finalizers: [FINALIZER], status: readyStatus }));
      w.hiddenFromCache.add("c1");
      return shape;
    },
    result: "done",
    calls: ["cloud.create default.foo", "cloud.getByName default.foo"],
    check: (w) => {
      expect(w.cloud.size).toBe(1);
      expect(w.events).toEqual([]);
    },
  },
  {
    reason:
      "a throttled create is retried after the cloud's Retry-After, and says so in Synced (result kind error → failed)",
    setup: (w) => {
      w.cloudFailures.set("create", new CloudError("cannot create: throttled", 429, undefined, 7000));
      return aShape({ finalizers: [FINALIZER] });
    },
    result: "failed:7000",
    calls: ["kube.createShapeRef default.foo", "cloud.create default.foo", "kube.updateStatus"],
    check: (w) =>
      expect(w.shapes.get("default/foo")?.status?.conditions?.find((c) => c.type === "Synced")).toMatchObject(
        {
          status: "False",
          reason: "CannotCreateCloudShape",
        },
      ),
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
    calls: ["kube.createShapeRef default.foo", "cloud.create default.foo", "kube.updateStatus"],
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

describe("ExternalResourceReconciler with the Shape plugin", () => {
  it.each(cases)("$reason", async ({ setup, result, calls, check, staleCache, refCacheEmpty, deps }) => {
    const world = new FakeWorld();
    const shape = setup(world);
    if (shape && !staleCache) world.shapes.set(`${shape.metadata.namespace}/${shape.metadata.name}`, shape);
    const cached = (k: string) => (staleCache ? shape : world.shapes.get(k));
    const reconciler = reconcilerFor(world, {
      resources: { get: cached, list: () => [...world.shapes.values()] },
      ...(refCacheEmpty ? { intents: { get: () => undefined, list: () => [] } } : {}),
      ...deps?.(),
    });
    const got = await reconciler.reconcile("default/foo", new AbortController().signal);
    expect(summary(got)).toBe(result);
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
    const reconciler = reconcilerFor(world);
    await expect(reconciler.reconcile("default/foo", new AbortController().signal)).resolves.toEqual({
      kind: "done",
    });
  });
});

describe("ExternalResourceReconciler with the Shape plugin after an upgrade from the constant owner id k8s (now k8s-cluster-a)", () => {
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
        "our shape under the old id (same name, our uid; read by name after the 409: design change 3) is adopted: retagged, with its drift, in one PATCH",
      cloud: OLD,
      calls: [
        "kube.createShapeRef default.foo",
        "cloud.create default.foo",
        "cloud.getByName default.foo",
        'cloud.patch c9 {"color":"red","tags":{"owner":"k8s-cluster-a"}}',
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
        "cloud.getByName default.foo",
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
        "cloud.getByName default.foo",
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
    const reconciler = reconcilerFor(world, { adoptOwnerIds: ["k8s"] });
    await reconciler.reconcile("default/foo", new AbortController().signal);
    expect(world.calls).toEqual(calls);
    check(world);
  });
});

describe("ExternalResourceReconciler with the Shape plugin in NameConflict", () => {
  const setup = () => {
    const world = new FakeWorld();
    world.cloud.set("f1", aCloudShape({ name: "default.foo", id: "f1", tags: { owner: "someone-else" } }));
    world.shapes.set("default/foo", aShape({ finalizers: [FINALIZER] }));
    const reconciler = reconcilerFor(world, { conflictRecheckMs: 3_000 });
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
      "kube.updateStatus",
    ]);
    expect(world.shapes.get("default/foo")?.status?.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual([
      "Ready=True",
      "Synced=True",
    ]);
  });
});

/**
 * Every step of a reconcile that can fail, failing (design change 1): the Shape ends on `Synced=False` with
 * the step's reason, `Ready` saying what the reconcile knew of the cloud shape when it stopped (never an
 * earlier True kept: status.ts), both for the Shape's generation, and a `failed` result (with the cloud's
 * Retry-After when it gave one) — unless the Shape itself is gone (a 404 on it), which is done, with no
 * status write. Nothing throws.
 */
describe("ExternalResourceReconciler with the Shape plugin when a step fails", () => {
  const throttled = (what: string, retryAfterMs: number) =>
    new CloudError(`${what}: too many requests`, 429, undefined, retryAfterMs);
  const unavailable = (retryAfterMs?: number) =>
    new CloudError("service unavailable", 503, undefined, retryAfterMs);
  const deleting = (extra: Partial<Shape["spec"]> = {}) =>
    aShape({ finalizers: [FINALIZER], deleting: true, spec: extra, status: readyStatus });

  const cases: {
    reason: string;
    setup: (w: FakeWorld) => Shape;
    /** The cache shows the Shape `setup` returns, but the API server (the world) no longer has it. */
    gone?: true;
    deps?: (w: FakeWorld) => Partial<ReconcilerDeps<Shape, CloudShape>>;
    owner?: string;
    result: string;
    calls: string[];
    /** The Synced reason and message expected; absent: no status write at all. */
    synced?: { reason: string; message: RegExp };
    /** Ready as `Status Reason` (status.ts): what the reconcile knew of the cloud shape when it stopped. */
    ready?: string;
  }[] = [
    {
      reason: "finalizer add refused (403, a webhook or RBAC): CannotAddFinalizer, nothing else written",
      setup: (w) => {
        w.kubeFailures.set("addFinalizer", kubeError(403, 'shapes "foo" is forbidden: denied by webhook'));
        return aShape();
      },
      result: "failed",
      calls: ["kube.addFinalizer", "kube.updateStatus"],
      ready: "Unknown Unobserved",
      synced: { reason: "CannotAddFinalizer", message: /^cannot add our finalizer: .*forbidden/ },
    },
    {
      reason: "finalizer add meets a 404: the Shape is gone, done, no status write",
      setup: () => aShape(),
      gone: true,
      result: "done",
      calls: ["kube.addFinalizer"],
    },
    {
      reason: "ShapeRef create fails (500): CannotRecordIntent, no cloud call",
      setup: (w) => {
        w.kubeFailures.set("createIntent", kubeError(500, "etcdserver: request timed out"));
        return aShape({ finalizers: [FINALIZER] });
      },
      result: "failed",
      calls: ["kube.createShapeRef default.foo", "kube.updateStatus"],
      ready: "Unknown Unobserved",
      synced: {
        reason: "CannotRecordIntent",
        message: /^cannot record the intent default\.foo: etcdserver: request timed out$/,
      },
    },
    {
      reason: "ShapeRef create meets a 409 and the live read of the existing one fails: CannotRecordIntent",
      setup: (w) => {
        converged(w, aShape());
        w.cloud.clear();
        w.kubeFailures.set("readIntent", kubeError(500, "etcdserver: leader changed"));
        return aShape({ finalizers: [FINALIZER] });
      },
      deps: () => ({ intents: { get: () => undefined, list: () => [] } }),
      result: "failed",
      calls: ["kube.createShapeRef default.foo", "kube.updateStatus"],
      ready: "Unknown Unobserved",
      synced: {
        reason: "CannotRecordIntent",
        message: /^cannot record the intent default\.foo: .*leader changed/,
      },
    },
    {
      reason: "ShapeRef create meets a 409, then the ShapeRef is gone: CannotRecordIntent",
      setup: (w) => {
        w.kubeFailures.set("createIntent", kubeError(409, 'shaperefs "default.foo" already exists'));
        return aShape({ finalizers: [FINALIZER] });
      },
      result: "failed",
      calls: ["kube.createShapeRef default.foo", "kube.updateStatus"],
      ready: "Unknown Unobserved",
      synced: { reason: "CannotRecordIntent", message: /it existed, then it did not/ },
    },
    {
      reason:
        "ShapeRef spec update fails (the deletionPolicy changed to Orphan): CannotRecordIntent, Ready Unknown (not looked at)",
      setup: (w) => {
        w.kubeFailures.set("updateIntentSpec", kubeError(409, "the object has been modified"));
        return converged(
          w,
          aShape({ finalizers: [FINALIZER], status: readyStatus, spec: { deletionPolicy: "Orphan" } }),
          undefined,
          "Delete",
        );
      },
      result: "failed",
      calls: [
        expect.stringMatching(/^kube\.updateShapeRefSpec default\.foo /) as string,
        "kube.updateStatus",
      ],
      ready: "Unknown Unobserved",
      synced: { reason: "CannotRecordIntent", message: /^cannot record the intent default\.foo: .*modified/ },
    },
    {
      reason: "create throttled (429 with Retry-After): CannotCreateCloudShape, retried after it",
      setup: (w) => {
        w.cloudFailures.set("create", throttled("cannot create", 7_000));
        return aShape({ finalizers: [FINALIZER] });
      },
      result: "failed:7000",
      calls: ["kube.createShapeRef default.foo", "cloud.create default.foo", "kube.updateStatus"],
      ready: "False Absent",
      synced: { reason: "CannotCreateCloudShape", message: /^cannot create: too many requests$/ },
    },
    {
      reason: "create fails (500, not a conflict): CannotCreateCloudShape, backoff",
      setup: (w) => {
        w.cloudFailures.set("create", new CloudError("internal error", 500));
        return aShape({ finalizers: [FINALIZER] });
      },
      result: "failed",
      calls: ["kube.createShapeRef default.foo", "cloud.create default.foo", "kube.updateStatus"],
      ready: "False Absent",
      synced: {
        reason: "CannotCreateCloudShape",
        message: /^cannot create cloud shape default\.foo: internal error$/,
      },
    },
    {
      reason: "the holder read after a 409 fails (503 with Retry-After): CannotObserveCloudShape",
      setup: (w) => {
        w.cloud.set("f1", aCloudShape({ name: "default.foo", id: "f1", tags: { owner: "someone-else" } }));
        w.cloudFailures.set("getByName", unavailable(1_000));
        return aShape({ finalizers: [FINALIZER] });
      },
      result: "failed:1000",
      calls: [
        "kube.createShapeRef default.foo",
        "cloud.create default.foo",
        "cloud.getByName default.foo",
        "kube.updateStatus",
      ],
      ready: "Unknown Unobserved",
      synced: { reason: "CannotObserveCloudShape", message: /^cannot read cloud shape default\.foo: / },
    },
    {
      reason:
        "a 409 whose holder is gone by the read (the name was taken, then freed): CannotCreateCloudShape, tried again",
      setup: (w) => {
        w.cloudFailures.set("create", new CloudError("cannot create: name taken", 409, { existingId: "x" }));
        return aShape({ finalizers: [FINALIZER] });
      },
      result: "failed",
      calls: [
        "kube.createShapeRef default.foo",
        "cloud.create default.foo",
        "cloud.getByName default.foo",
        "kube.updateStatus",
      ],
      ready: "False Absent",
      synced: { reason: "CannotCreateCloudShape", message: /the name was taken, then freed/ },
    },
    {
      reason:
        "update fails (412: the shape changed since the cache saw it): CannotUpdateCloudShape, Ready=False SpecMismatch",
      setup: (w) => {
        w.cloudFailures.set("patch", new CloudError("precondition failed", 412));
        return converged(
          w,
          aShape({ finalizers: [FINALIZER], generation: 2, spec: { color: "blue" }, status: readyStatus }),
        );
      },
      result: "failed",
      calls: ['cloud.patch c1 {"color":"blue"}', "kube.updateStatus"],
      ready: "False SpecMismatch",
      synced: { reason: "CannotUpdateCloudShape", message: /^cannot update cloud shape default\.foo: / },
    },
    {
      reason: "the adopting update of our shape under an earlier owner id fails: CannotUpdateCloudShape",
      owner: "k8s-cluster-a",
      setup: (w) => {
        w.cloud.set("c9", aCloudShape({ name: "default.foo", id: "c9", tags: ours }));
        w.cloudFailures.set("patch", new CloudError("internal error", 500));
        return aShape({ finalizers: [FINALIZER] });
      },
      deps: () => ({ adoptOwnerIds: ["k8s"] }),
      result: "failed",
      calls: [
        "kube.createShapeRef default.foo",
        "cloud.create default.foo",
        "cloud.getByName default.foo",
        'cloud.patch c9 {"tags":{"owner":"k8s-cluster-a"}}',
        "kube.updateStatus",
      ],
      ready: "False SpecMismatch",
      synced: {
        reason: "CannotUpdateCloudShape",
        message: /^cannot adopt cloud shape default\.foo from owner "k8s": internal error$/,
      },
    },
    {
      reason:
        "delete throttled (429 with Retry-After): CannotDeleteCloudShape, the finalizer and ShapeRef stay",
      setup: (w) => {
        w.cloudFailures.set("delete", throttled("cannot delete", 3_000));
        return converged(w, deleting());
      },
      result: "failed:3000",
      calls: ["cloud.delete c1", "kube.updateStatus"],
      ready: "False Deleting",
      synced: { reason: "CannotDeleteCloudShape", message: /^cannot delete: too many requests$/ },
    },
    {
      reason:
        "release (deletionPolicy Orphan) fails: CannotDeleteCloudShape, the finalizer and ShapeRef stay",
      setup: (w) => {
        w.cloudFailures.set("patch", new CloudError("internal error", 500));
        return converged(w, deleting({ deletionPolicy: "Orphan" }));
      },
      result: "failed",
      calls: ['cloud.patch c1 {"tags":{"owner":null,"k8s-uid":null,"k8s-name":null}}', "kube.updateStatus"],
      ready: "False Deleting",
      synced: { reason: "CannotDeleteCloudShape", message: /^cannot orphan cloud shape default\.foo: / },
    },
    {
      reason: "deleting while the cache trails, and the live read by name fails: CannotObserveCloudShape",
      setup: (w) => {
        const shape = converged(w, deleting());
        w.hiddenFromCache.add("c1");
        w.cloudFailures.set("getByName", unavailable());
        return shape;
      },
      result: "failed",
      calls: ["cloud.getByName default.foo", "kube.updateStatus"],
      ready: "False Deleting",
      synced: { reason: "CannotObserveCloudShape", message: /^cannot read cloud shape default\.foo: / },
    },
    {
      reason: "the ShapeRef delete during deletion fails: CannotRecordIntent, the finalizer stays",
      setup: (w) => {
        w.kubeFailures.set("deleteIntent", kubeError(500, "etcdserver: request timed out"));
        return converged(w, deleting());
      },
      result: "failed",
      calls: ["cloud.delete c1", "kube.deleteShapeRef default.foo", "kube.updateStatus"],
      ready: "False Deleting",
      synced: { reason: "CannotRecordIntent", message: /^cannot delete the intent default\.foo: etcdserver/ },
    },
    {
      reason:
        "the finalizer removal fails (409: the Shape changed): CannotRemoveFinalizer, the cloud shape and ShapeRef already gone",
      setup: (w) => {
        w.kubeFailures.set("removeFinalizer", kubeError(409, "the object has been modified"));
        return converged(w, deleting());
      },
      result: "failed",
      calls: [
        "cloud.delete c1",
        "kube.deleteShapeRef default.foo",
        "kube.removeFinalizer",
        "kube.updateStatus",
      ],
      ready: "False Deleting",
      synced: { reason: "CannotRemoveFinalizer", message: /^cannot remove our finalizer: .*modified/ },
    },
    {
      reason: "the finalizer removal meets a 404: the Shape is gone, done, no status write",
      setup: (w) => {
        w.kubeFailures.set("removeFinalizer", kubeError(404, 'shapes "foo" not found'));
        return converged(w, deleting());
      },
      result: "done",
      calls: ["cloud.delete c1", "kube.deleteShapeRef default.foo", "kube.removeFinalizer"],
    },
    {
      reason: "an unforeseen throw (the plugin's desired() throws): ReconcileError, never an exception",
      setup: (w) => converged(w, aShape({ finalizers: [FINALIZER], status: readyStatus })),
      deps: (w) => ({
        plugin: {
          ...w.plugin,
          resource: {
            ...w.plugin.resource,
            desired: () => {
              throw new TypeError("spec.type is not a string");
            },
          },
        },
      }),
      result: "failed",
      calls: ["kube.updateStatus"],
      ready: "Unknown Unobserved",
      synced: {
        reason: "ReconcileError",
        message: /^cannot reconcile default\/foo: spec\.type is not a string$/,
      },
    },
    {
      reason:
        "the status write of a success fails (409): unforeseen by any step, so ReconcileError, recorded by the next write",
      setup: (w) => {
        w.kubeFailures.set("updateStatus", kubeError(409, "the object has been modified"));
        return converged(
          w,
          aShape({ finalizers: [FINALIZER], generation: 2, spec: { color: "blue" }, status: readyStatus }),
        );
      },
      result: "failed",
      calls: ['cloud.patch c1 {"color":"blue"}', "kube.updateStatus", "kube.updateStatus"],
      ready: "True Available",
      synced: { reason: "ReconcileError", message: /^cannot reconcile default\/foo: .*modified/ },
    },
  ];

  it.each(cases)("$reason", async ({ setup, gone, deps, owner, result, calls, synced, ready }) => {
    const world = new FakeWorld(owner);
    const shape = setup(world);
    if (!gone) world.shapes.set("default/foo", shape);
    const reconciler = reconcilerFor(world, {
      resources: { get: (k) => (k === "default/foo" ? shape : undefined), list: () => [shape] },
      ...deps?.(world),
    });

    const got = await reconciler.reconcile("default/foo", new AbortController().signal);

    expect(summary(got)).toBe(result);
    expect(world.calls).toEqual(calls);
    const after = world.shapes.get("default/foo")?.status?.conditions ?? [];
    const before = shape.status?.conditions ?? [];
    if (!synced) {
      expect(after).toEqual(before);
      return;
    }
    expect(got.kind === "failed" && got.error.message).toMatch(synced.message);
    expect(after.find((c) => c.type === "Synced")).toMatchObject({
      status: "False",
      reason: synced.reason,
      message: expect.stringMatching(synced.message) as string,
      observedGeneration: shape.metadata.generation,
    });
    const [status, reason] = (ready ?? "").split(" ");
    expect(after.find((c) => c.type === "Ready")).toMatchObject({
      status,
      reason,
      observedGeneration: shape.metadata.generation,
    });
  });

  it("a failure whose own status write fails is still a failed result, never a throw", async () => {
    const world = new FakeWorld();
    const shape = aShape({ finalizers: [FINALIZER] });
    world.shapes.set("default/foo", shape);
    world.cloudFailures.set("create", new CloudError("internal error", 500));
    world.kubeFailures.set("updateStatus", kubeError(500, "etcdserver: request timed out"));
    const got = await reconcilerFor(world).reconcile("default/foo", new AbortController().signal);
    expect(got).toMatchObject({
      kind: "failed",
      error: { message: /^cannot create cloud shape default\.foo/ },
    });
    expect(world.shapes.get("default/foo")?.status).toBeUndefined();
  });

  it("a failure whose status write finds the Shape gone (404) is done", async () => {
    const world = new FakeWorld();
    const shape = aShape({ finalizers: [FINALIZER] });
    world.cloudFailures.set("create", new CloudError("internal error", 500));
    const reconciler = reconcilerFor(world, { resources: { get: () => shape, list: () => [shape] } });
    await expect(reconciler.reconcile("default/foo", new AbortController().signal)).resolves.toEqual({
      kind: "done",
    });
    expect(world.calls).toEqual([
      "kube.createShapeRef default.foo",
      "cloud.create default.foo",
      "kube.updateStatus",
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

/**
 * The library's leak catchers driving Shapes: the intent reconciler (a ShapeRef left by a missed deletion)
 * and the sweep (an owned cloud shape nothing claims), with the real Shape plugin over the fake world.
 */
import { describe, expect, it } from "vitest";
import {
  IntentReconciler,
  type IntentReconcilerDeps,
  type IntentRecord,
  Sweep,
  type SweepDeps,
} from "reconcile-kit";
import type { ShapeRef, Shape } from "./api.ts";
import { CloudError, type CloudShape } from "./cloud/client.ts";
import { FakeWorld, aCloudShape, aShape, kubeError } from "./testing.ts";

const intentReconciler = (
  world: FakeWorld,
  overrides: Partial<IntentReconcilerDeps<Shape, CloudShape>> = {},
) => new IntentReconciler<Shape, CloudShape>({ ...world.deps(), ...overrides });
const sweepOf = (world: FakeWorld, overrides: Partial<SweepDeps<Shape, CloudShape>> = {}) =>
  new Sweep<Shape, CloudShape>({ ...world.deps(), ...overrides });

const tags = (uid: string) => ({ owner: "k8s", "k8s-uid": uid, "k8s-name": "default/foo" });
const aRef = (
  uid: string,
  extra: Partial<ShapeRef["spec"]> = {},
  phase?: "Pending" | "Created",
  cloudId?: string,
): ShapeRef => ({
  metadata: { name: "default.foo" },
  spec: { shape: { namespace: "default", name: "foo", uid }, cloudName: "default.foo", ...extra },
  ...(phase ? { status: { phase, ...(cloudId ? { cloudId } : {}) } } : {}),
});
const signal = new AbortController().signal;

describe("IntentReconciler with the Shape plugin", () => {
  const cases: { reason: string; setup: (w: FakeWorld) => void; calls: string[]; leaks: number }[] = [
    {
      reason: "a ShapeRef whose Shape is alive belongs to the Shape reconciler: untouched",
      setup: (w) => {
        w.shapes.set("default/foo", aShape());
        w.shapeRefs.set("default.foo", aRef("uid-foo", {}, "Created"));
        w.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: tags("uid-foo") }));
      },
      calls: [],
      leaks: 0,
    },
    {
      reason: "a missed deletion: the dangling ShapeRef leads to the cloud shape, deleted, then the ShapeRef",
      setup: (w) => {
        w.shapeRefs.set("default.foo", aRef("uid-foo", {}, "Created"));
        w.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: tags("uid-foo") }));
      },
      calls: ["cloud.delete c1", "kube.deleteShapeRef default.foo"],
      leaks: 1,
    },
    {
      reason: "a Shape re-created with the same name (another uid) does not save the old one's cloud shape",
      setup: (w) => {
        w.shapes.set("default/foo", aShape({ uid: "new-uid" }));
        w.shapeRefs.set("default.foo", aRef("old-uid", {}, "Created"));
        w.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: tags("old-uid") }));
      },
      calls: ["cloud.delete c1", "kube.deleteShapeRef default.foo"],
      leaks: 1,
    },
    {
      reason: "a cloud shape with our name but another uid is not this ShapeRef's to delete",
      setup: (w) => {
        w.shapeRefs.set("default.foo", aRef("old-uid", {}, "Pending"));
        w.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: tags("other-uid") }));
      },
      calls: ["kube.deleteShapeRef default.foo"],
      leaks: 0,
    },
    {
      reason: "a cache that trails the create: the cloud shape is read live by name, checked, deleted",
      setup: (w) => {
        w.shapeRefs.set("default.foo", aRef("uid-foo", {}, "Created", "c1"));
        w.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: tags("uid-foo") }));
        w.hiddenFromCache.add("c1");
      },
      calls: ["cloud.getByName default.foo", "cloud.delete c1", "kube.deleteShapeRef default.foo"],
      leaks: 1,
    },
    {
      reason:
        "regression: a shape read live by name with this uid but not our owner tag is not ours: never deleted",
      setup: (w) => {
        w.shapeRefs.set("default.foo", aRef("uid-foo", {}, "Created", "f1"));
        w.cloud.set(
          "f1",
          aCloudShape({ name: "default.foo", id: "f1", tags: { ...tags("uid-foo"), owner: "K8S" } }),
        );
      },
      calls: ["cloud.getByName default.foo", "kube.deleteShapeRef default.foo"],
      leaks: 0,
    },
    {
      reason:
        "a missed deletion of an Orphan Shape (the ShapeRef keeps its policy): our tags are stripped, the shape stays",
      setup: (w) => {
        w.shapeRefs.set("default.foo", aRef("uid-foo", { deletionPolicy: "Orphan" }, "Created"));
        w.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: tags("uid-foo") }));
      },
      calls: [
        'cloud.patch c1 {"tags":{"owner":null,"k8s-uid":null,"k8s-name":null}}',
        "kube.deleteShapeRef default.foo",
      ],
      leaks: 1,
    },
    {
      reason: "a ShapeRef that says Delete (written before the field existed: none) deletes as before",
      setup: (w) => {
        w.shapeRefs.set("default.foo", aRef("uid-foo", { deletionPolicy: "Delete" }, "Created"));
        w.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: tags("uid-foo") }));
      },
      calls: ["cloud.delete c1", "kube.deleteShapeRef default.foo"],
      leaks: 1,
    },
    {
      reason:
        "a ShapeRef whose cloud shape its finalizer already let go (deletionPolicy Orphan, our tags stripped; the Orphaned phase is gone: design change 2) never deletes the cloud shape",
      setup: (w) => {
        w.shapeRefs.set("default.foo", aRef("uid-foo", { deletionPolicy: "Orphan" }, "Created", "c1"));
        w.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: { team: "x" } }));
      },
      calls: ["cloud.getByName default.foo", "kube.deleteShapeRef default.foo"],
      leaks: 0,
    },
  ];
  it.each(cases)("$reason", async ({ setup, calls, leaks }) => {
    const world = new FakeWorld();
    setup(world);
    await expect(intentReconciler(world).reconcile("default.foo", signal)).resolves.toEqual({
      kind: "done",
    });
    expect(world.calls).toEqual(calls);
    expect(world.counts.leaksRemoved).toEqual({ intent: leaks, sweep: 0 });
    // Whatever was patched was let go: none of our tags left on it.
    for (const shape of world.cloud.values()) {
      if (calls.some((c) => c.startsWith(`cloud.patch ${shape.id} `))) expect(shape.tags).toEqual({});
    }
  });

  // The ShapeRef cache trails the API server: it shows `cached`, the API server (the world) holds what `setup` made.
  const stale: {
    reason: string;
    cached: ShapeRef;
    setup: (w: FakeWorld) => void;
    check: (w: FakeWorld) => void;
  }[] = [
    {
      reason:
        "regression: a ShapeRef the finalizer already deleted (the cache has not seen it go) is no leak: no cloud call, nothing deleted, nothing counted",
      cached: { ...aRef("uid-foo", {}, "Created", "c1"), metadata: { name: "default.foo", uid: "ref-1" } },
      setup: () => {},
      check: (w) => expect(w.calls).toEqual([]),
    },
    {
      reason:
        "regression: a stale ShapeRef of an earlier Shape never deletes the newer ShapeRef that took its name",
      cached: { ...aRef("uid-old", {}, "Created", "c1"), metadata: { name: "default.foo", uid: "ref-1" } },
      setup: (w) => {
        w.shapes.set("default/foo", aShape({ uid: "uid-new" }));
        w.shapeRefs.set("default.foo", {
          ...aRef("uid-new", {}, "Created", "c2"),
          metadata: { name: "default.foo", uid: "ref-2" },
        });
        w.cloud.set("c2", aCloudShape({ name: "default.foo", id: "c2", tags: tags("uid-new") }));
      },
      check: (w) => {
        expect(w.calls).toEqual([]);
        expect(w.shapeRefs.get("default.foo")?.metadata.uid).toBe("ref-2");
      },
    },
  ];
  it.each(stale)("$reason", async ({ cached, setup, check }) => {
    const world = new FakeWorld();
    setup(world);
    const record: IntentRecord = world.plugin.resource.readIntent(cached);
    const reconciler = intentReconciler(world, { intents: { get: () => record, list: () => [record] } });
    await expect(reconciler.reconcile("default.foo", signal)).resolves.toEqual({ kind: "done" });
    check(world);
    expect(world.counts.leaksRemoved).toEqual({ intent: 0, sweep: 0 });
  });

  const upgraded: {
    reason: string;
    extra?: Partial<ShapeRef["spec"]>;
    cloudTags: Record<string, string>;
    calls: string[];
  }[] = [
    {
      reason:
        "a missed deletion across an upgrade: our shape under the old owner id is deleted as ours would be",
      cloudTags: tags("uid-foo"),
      calls: ["cloud.getByName default.foo", "cloud.delete c1", "kube.deleteShapeRef default.foo"],
    },
    {
      reason: "…or let go, with deletionPolicy Orphan",
      extra: { deletionPolicy: "Orphan" },
      cloudTags: tags("uid-foo"),
      calls: [
        "cloud.getByName default.foo",
        'cloud.patch c1 {"tags":{"owner":null,"k8s-uid":null,"k8s-name":null}}',
        "kube.deleteShapeRef default.foo",
      ],
    },
    {
      reason: "another cluster's shape under the same old owner id (another uid) is never touched",
      cloudTags: tags("uid-of-cluster-b"),
      calls: ["cloud.getByName default.foo", "kube.deleteShapeRef default.foo"],
    },
  ];
  it.each(upgraded)("after an upgrade from owner k8s: $reason", async ({ extra, cloudTags, calls }) => {
    const world = new FakeWorld("k8s-cluster-a");
    world.shapeRefs.set("default.foo", aRef("uid-foo", extra, "Created", "c1"));
    world.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: cloudTags }));
    await intentReconciler(world, { adoptOwnerIds: ["k8s"] }).reconcile("default.foo", signal);
    expect(world.calls).toEqual(calls);
  });

  it("trusts a live read over a stale cache: a Shape missing from the cache but alive is not a leak", async () => {
    const world = new FakeWorld();
    world.shapeRefs.set("default.foo", aRef("uid-foo", {}, "Created"));
    world.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: tags("uid-foo") }));
    world.shapes.set("default/foo", aShape());
    await intentReconciler(world, { resources: { get: () => undefined, list: () => [] } }).reconcile(
      "default.foo",
      signal,
    );
    expect(world.calls).toEqual([]);
  });
});

describe("Sweep with the Shape plugin", () => {
  it("deletes an owned shape nothing claims, only after the grace period and a live re-check", async () => {
    const world = new FakeWorld();
    world.cloud.set(
      "c1",
      aCloudShape({ name: "default.foo", id: "c1", revision: 4, tags: tags("uid-gone") }),
    );
    let now = 1_000;
    const sweep = sweepOf(world, { graceMs: 30_000, now: () => new Date(now) });
    await expect(sweep.reconcile("default.foo", signal)).resolves.toEqual({
      kind: "requeueAfter",
      afterMs: 30_000,
    });
    now += 10_000;
    await expect(sweep.reconcile("default.foo", signal)).resolves.toEqual({
      kind: "requeueAfter",
      afterMs: 20_000,
    });
    expect(world.calls).toEqual([]);
    now += 20_000;
    await expect(sweep.reconcile("default.foo", signal)).resolves.toEqual({ kind: "done" });
    expect(world.calls).toEqual(["cloud.delete c1"]);
    expect(world.counts.leaksRemoved).toEqual({ intent: 0, sweep: 1 });
  });

  const claimed: { reason: string; setup: (w: FakeWorld) => void; tags?: Record<string, string> }[] = [
    {
      reason: "claimed by a live Shape with the same uid",
      setup: (w) => w.shapes.set("default/foo", aShape({ uid: "u1" })),
    },
    {
      reason: "claimed by a ShapeRef with the same uid",
      setup: (w) => w.shapeRefs.set("default.foo", aRef("u1")),
    },
    {
      reason:
        "regression: claimed by its live Shape, found by the cloud name, although someone rewrote the k8s-name tag",
      setup: (w) => w.shapes.set("default/foo", aShape({ uid: "u1" })),
      tags: { ...tags("u1"), "k8s-name": "someone/else" },
    },
  ];
  it.each(claimed)("never deletes a shape $reason", async ({ setup, tags: cloudTags }) => {
    const world = new FakeWorld();
    world.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: cloudTags ?? tags("u1") }));
    setup(world);
    const sweep = sweepOf(world, { graceMs: 0 });
    await expect(sweep.reconcile("default.foo", signal)).resolves.toEqual({ kind: "done" });
    expect(world.calls).toEqual([]);
  });

  it("never looks at a shape without our owner tag, even one with our uid tags", async () => {
    const world = new FakeWorld();
    world.cloud.set(
      "f1",
      aCloudShape({ name: "default.foo", id: "f1", tags: { ...tags("u1"), owner: "someone-else" } }),
    );
    await sweepOf(world, { graceMs: 0 }).reconcile("default.foo", signal);
    expect(world.calls).toEqual([]);
    expect(world.cloud.has("f1")).toBe(true);
  });

  const notExactlyOurs: { reason: string; owner: string }[] = [
    { reason: "our old constant default (another cluster may still use it)", owner: "k8s" },
    { reason: "another cluster's id", owner: "k8s-cluster-b" },
    { reason: "a case-folded twin of ours", owner: "K8S-CLUSTER-A" },
    { reason: "ours with a trailing space", owner: "k8s-cluster-a " },
  ];
  it.each(notExactlyOurs)(
    "never deletes a shape whose owner id is not exactly ours, even with our name and an unclaimed uid, even if the cache shows it: $reason",
    async ({ owner }) => {
      const world = new FakeWorld("k8s-cluster-a");
      world.cloud.set(
        "c1",
        aCloudShape({ name: "default.foo", id: "c1", tags: { ...tags("u-gone"), owner } }),
      );
      // A cache that shows every shape: the sweep's own check must hold, not only the cache's filter.
      const everything = {
        get: (n: string) => [...world.cloud.values()].find((c) => c.name === n),
        list: () => [...world.cloud.values()],
        withUid: () => [],
      };
      const sweep = sweepOf(world, { cache: everything, graceMs: 0 });
      await expect(sweep.reconcile("default.foo", signal)).resolves.toEqual({ kind: "done" });
      expect(world.calls).toEqual([]);
      expect(world.cloud.has("c1")).toBe(true);
    },
  );

  it("a Shape that appears during the grace period saves its cloud shape", async () => {
    const world = new FakeWorld();
    world.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: tags("u1") }));
    let now = 0;
    const sweep = sweepOf(world, { graceMs: 1_000, now: () => new Date(now) });
    await sweep.reconcile("default.foo", signal);
    world.shapes.set("default/foo", aShape({ uid: "u1" }));
    now = 5_000;
    await expect(sweep.reconcile("default.foo", signal)).resolves.toEqual({ kind: "done" });
    expect(world.calls).toEqual([]);
  });
});

/** A result as the tables write it: its kind, and the Retry-After of a failure when the cloud gave one. */
const summary = (got: Awaited<ReturnType<IntentReconciler<Shape, CloudShape>["reconcile"]>>) =>
  got.kind === "failed" && got.retryAfterMs !== undefined ? `failed:${got.retryAfterMs}` : got.kind;

describe("IntentReconciler with the Shape plugin when a step fails", () => {
  const cases: {
    reason: string;
    setup: (w: FakeWorld) => void;
    result: string;
    message?: RegExp;
    calls: string[];
    leaks: number;
    refKept: boolean;
  }[] = [
    {
      reason: "the live read of the Shape fails: no decision on a stale cache, nothing written",
      setup: (w) => w.kubeFailures.set("readResource", kubeError(500, "etcdserver: leader changed")),
      result: "failed",
      message: /^cannot confirm that ShapeRef default\.foo dangles: etcdserver/,
      calls: [],
      leaks: 0,
      refKept: true,
    },
    {
      reason: "the live read of the ShapeRef fails: nothing written",
      setup: (w) => w.kubeFailures.set("readIntent", kubeError(500, "etcdserver: leader changed")),
      result: "failed",
      message: /^cannot confirm that ShapeRef default\.foo dangles: etcdserver/,
      calls: [],
      leaks: 0,
      refKept: true,
    },
    {
      reason: "the cloud delete is throttled: retried after the cloud's Retry-After, the ShapeRef kept",
      setup: (w) => w.cloudFailures.set("delete", new CloudError("slow down", 429, undefined, 4_000)),
      result: "failed:4000",
      message: /^cannot delete leaked cloud shape default\.foo: slow down$/,
      calls: ["cloud.delete c1"],
      leaks: 0,
      refKept: true,
    },
    {
      reason: "the release of an Orphan Shape's cloud shape fails: the ShapeRef (and its policy) kept",
      setup: (w) => {
        w.shapeRefs.set("default.foo", aRef("uid-foo", { deletionPolicy: "Orphan" }, "Created", "c1"));
        w.cloudFailures.set("patch", new CloudError("internal error", 500));
      },
      result: "failed",
      message: /^cannot orphan leaked cloud shape default\.foo: internal error$/,
      calls: ['cloud.patch c1 {"tags":{"owner":null,"k8s-uid":null,"k8s-name":null}}'],
      leaks: 0,
      refKept: true,
    },
    {
      reason: "the cloud shape deleted by someone first (404) is what we wanted: the ShapeRef goes",
      setup: (w) => w.cloudFailures.set("delete", new CloudError("not found", 404)),
      result: "done",
      calls: ["cloud.delete c1", "kube.deleteShapeRef default.foo"],
      leaks: 1,
      refKept: false,
    },
    {
      reason: "the ShapeRef delete fails: retried (the cloud shape is gone already), not counted yet",
      setup: (w) => w.kubeFailures.set("deleteIntent", kubeError(500, "etcdserver: request timed out")),
      result: "failed",
      message: /^cannot delete ShapeRef default\.foo: etcdserver/,
      calls: ["cloud.delete c1", "kube.deleteShapeRef default.foo"],
      leaks: 0,
      refKept: true,
    },
  ];
  it.each(cases)("$reason", async ({ setup, result, message, calls, leaks, refKept }) => {
    const world = new FakeWorld();
    world.shapeRefs.set("default.foo", aRef("uid-foo", {}, "Created", "c1"));
    world.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: tags("uid-foo") }));
    setup(world);
    const got = await intentReconciler(world).reconcile("default.foo", signal);
    expect(summary(got)).toBe(result);
    if (message) expect(got.kind === "failed" && got.error.message).toMatch(message);
    expect(world.calls).toEqual(calls);
    expect(world.counts.leaksRemoved).toEqual({ intent: leaks, sweep: 0 });
    expect(world.shapeRefs.has("default.foo")).toBe(refKept);
  });
});

describe("Sweep with the Shape plugin when a step fails", () => {
  const cases: {
    reason: string;
    setup: (w: FakeWorld) => void;
    result: string;
    message?: RegExp;
    calls: string[];
    leaks: number;
  }[] = [
    {
      reason: "the live re-check fails: nothing deleted on a stale cache",
      setup: (w) => w.kubeFailures.set("readResource", kubeError(500, "etcdserver: leader changed")),
      result: "failed",
      message: /^cannot confirm that cloud shape default\.foo is unclaimed: etcdserver/,
      calls: [],
      leaks: 0,
    },
    {
      reason: "the delete is refused by an unavailable cloud: retried after its Retry-After",
      setup: (w) => w.cloudFailures.set("delete", new CloudError("unavailable", 503, undefined, 5_000)),
      result: "failed:5000",
      message: /^cannot delete leaked cloud shape default\.foo: unavailable$/,
      calls: ["cloud.delete c1"],
      leaks: 0,
    },
    {
      reason: "the shape changed since the cache saw it (412): no failure, the change feed brings it back",
      setup: (w) => w.cloudFailures.set("delete", new CloudError("precondition failed", 412)),
      result: "done",
      calls: ["cloud.delete c1"],
      leaks: 0,
    },
  ];
  it.each(cases)("$reason", async ({ setup, result, message, calls, leaks }) => {
    const world = new FakeWorld();
    world.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags: tags("uid-gone") }));
    setup(world);
    const got = await sweepOf(world, { graceMs: 0 }).reconcile("default.foo", signal);
    expect(summary(got)).toBe(result);
    if (message) expect(got.kind === "failed" && got.error.message).toMatch(message);
    expect(world.calls).toEqual(calls);
    expect(world.counts.leaksRemoved).toEqual({ intent: 0, sweep: leaks });
    expect(world.cloud.has("c1")).toBe(true);
  });
});

/**
 * Scenario: two clusters, one cloud. Two real control planes (two envtest instances), ONE mock cloud, one
 * controller per cluster, each with its DEFAULT ownership settings (no --owner-id): each stamps the owner id
 * of its own cluster, `k8s-<uid of its kube-system namespace>`. With the old constant default (`owner=k8s`
 * on both) each cluster's sweep took the other's shapes for its own leaks and deleted them, forever.
 *
 * The sweep (--leak-grace 3s) and the resync (--resync-period 6s) run often here, so "over several periods"
 * fits in a test; the tests wait for the periodic resyncs in the controllers' logs, never for the clock.
 *
 * In the order of a real rollout: both clusters ran the old version (owner `k8s`); cluster A is upgraded and
 * adopts its shapes (one PATCH each) without touching cluster B's `k8s` shape; then both run the new default
 * side by side. Every write of the file is checked at the end against the owner of the shape it wrote.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { shapeRefNameOf } from "@shapes/controller";
import {
  type CloudShape,
  conditionOf,
  type ControllerProcess,
  METRIC,
  type RequestLogEntry,
  type Stack,
  type TestCloud,
  waitConverged,
  waitFor,
  waitNameConflict,
  writesTo,
} from "@shapes/stack";
import { skipOnExistingCluster, startStack } from "./support/stack.ts";

/** Short periods (the issue's reproduction used the same), so several fit in a test. */
const PERIODS = { resyncPeriod: "6s", leakGrace: "3s" } as const;
/** The old constant default owner id, before the per-cluster one. */
const OLD_OWNER_ID = "k8s";
/** Both clusters have it: the same Shape namespace/name in both is a real conflict over one cloud name. */
const NS = "default";

/** The last sequence number of the cloud's request log (0 when empty): "the writes after this point". */
function lastSeq(log: readonly RequestLogEntry[]): number {
  return log.at(-1)?.seq ?? 0;
}

/** `[method, status, clientId]` of each entry: what the request log says, compactly. */
function summary(entries: readonly RequestLogEntry[]): [string, number, string | undefined][] {
  return entries.map((e) => [e.method, e.status, e.clientId]);
}

describe.skipIf(
  skipOnExistingCluster("needs two clusters of different owner ids, and the existing cluster is one"),
)("two clusters, one cloud", () => {
  let a: Stack;
  let b: Stack;
  let cloud: TestCloud;
  let controllerA: ControllerProcess;
  let controllerB: ControllerProcess;
  /** Every controller run of the file, for the log check at the end. */
  const runs: ControllerProcess[] = [];
  /**
   * The cluster owner id of every cloud shape the file saw: a per-cluster id once seen (adoption turns
   * `k8s` into one; an orphaned shape keeps the owner it had), else the tag it carried (`k8s`, none).
   */
  const owners = new Map<string, string>();

  /** Records who owns each shape (see `owners`). */
  function note(...shapes: readonly CloudShape[]): void {
    for (const shape of shapes) {
      const known = owners.get(shape.id);
      if (known === a.ownerId || known === b.ownerId) continue; // a cluster's shape stays its (orphaned too)
      owners.set(shape.id, shape.tags.owner ?? "");
    }
  }

  /** A controller of cluster `stack` with the short periods; the cloud sees it as `identity`. */
  async function start(
    stack: Stack,
    options: NonNullable<Parameters<Stack["startController"]>[0]> & { name: string; identity: string },
  ): Promise<ControllerProcess> {
    const controller = await stack.startController({ ...PERIODS, ...options });
    runs.push(controller);
    return controller;
  }

  /**
   * Waits until `controller` has logged `periods` periodic resyncs since `since` (three lines a period: the
   * Shapes, the ShapeRefs and the cloud sweep each enqueue every key).
   */
  async function waitForResyncs(controller: ControllerProcess, since: number, periods: number) {
    await waitFor(
      `${controller.options.name} to run ${periods} periodic resyncs`,
      async () => {
        const lines = (await controller.logs()).filter((l) => l.msg === "periodic resync" && l.time >= since);
        expect(lines.length, "periodic resync lines").toBeGreaterThanOrEqual(3 * periods);
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
  }

  /** Deletes a Shape and waits until Kubernetes no longer has it (its finalizer ran). */
  async function deleteShape(stack: Stack, name: string): Promise<void> {
    await stack.kube.deleteShape(NS, name);
    await waitFor(`Shape ${NS}/${name} to be gone`, async () => {
      expect(await stack.kube.getShape(NS, name)).toBeUndefined();
    });
  }

  /** Creates a shape no Shape or ShapeRef claims, tagged with `ownerId`: a leak its cluster's sweep must delete. */
  async function leakOf(ownerId: string, name: string): Promise<CloudShape> {
    const leak = await cloud.create({
      name: `${NS}.${name}`,
      type: "square",
      color: "white",
      tags: { owner: ownerId, "k8s-uid": "no-such-uid", "k8s-name": `${NS}/${name}` },
    });
    note(leak);
    return leak;
  }

  beforeAll(async () => {
    a = await startStack("two-clusters-one-cloud/cluster-a");
    b = await startStack("two-clusters-one-cloud/cluster-b", { cloud: a.cloud });
    cloud = a.cloud;
  });
  afterAll(async () => {
    await b?.stop(); // first: a's stop() stops the shared cloud
    await a?.stop();
  });

  test("upgrading is safe: shapes made under the old owner id k8s are adopted, another cluster's k8s shape is never written", async () => {
    // Cluster A on the old version: the constant owner id `k8s`.
    const oldA = await start(a, { name: "cluster-a-v0", identity: "cluster-a", ownerId: OLD_OWNER_ID });
    await a.kube.applyShape(NS, "up-square", { type: "square", color: "red" });
    await a.kube.applyShape(NS, "up-circle", { type: "circle", color: "blue" });
    const made = new Map<string, CloudShape>();
    for (const name of ["up-square", "up-circle"]) {
      const { cloud: shape } = await waitConverged(a, NS, name, { ownerId: OLD_OWNER_ID });
      made.set(name, shape);
      note(shape);
    }
    await oldA.stop();

    // Cluster B on the old version too (one at a time: together, their sweeps would delete each other's
    // shapes, the very bug). Its shape holds a name that cluster A will also want.
    const oldB = await start(b, { name: "cluster-b-v0", identity: "cluster-b", ownerId: OLD_OWNER_ID });
    await b.kube.applyShape(NS, "k8s-twin", { type: "hexagon", color: "green" });
    const { cloud: theirs } = await waitConverged(b, NS, "k8s-twin", { ownerId: OLD_OWNER_ID });
    note(theirs);
    await oldB.stop();
    // ...and a `k8s` shape nobody's Shape claims (made by hand, or by a cluster long gone).
    const stray = await cloud.create({
      name: `${NS}.k8s-stray`,
      type: "triangle",
      color: "gray",
      tags: { owner: OLD_OWNER_ID, "k8s-uid": "uid-of-no-shape-here", "k8s-name": `${NS}/k8s-stray` },
    });
    note(stray);
    // Meanwhile someone applies, in cluster A, a Shape whose cloud name B's `k8s` shape holds.
    await a.kube.applyShape(NS, "k8s-twin", { type: "square", color: "pink" });
    const seq = lastSeq(await cloud.requests());

    // The upgrade: cluster A's controller with its default settings.
    controllerA = await start(a, { name: "cluster-a", identity: "cluster-a" });
    expect(a.ownerId).toMatch(/^k8s-[0-9a-f-]{36}$/);

    for (const [name, before] of made) {
      const after = await waitConverged(a, NS, name); // tagged with a.ownerId now
      expect(after.cloud.id, `${name}: the same cloud shape`).toBe(before.id);
      expect(after.ref.spec.owner, `${name}: ShapeRef owner`).toBe(a.ownerId);
      note(after.cloud);
      const writes = writesTo(await cloud.requests(), before.id).filter((e) => e.seq > seq);
      expect(summary(writes), `${name}: retagged in one PATCH`).toEqual([["PATCH", 200, "cluster-a"]]);
      // One retag, and one Event that says so. (A reconcile that runs before the cache shows the retagged
      // shape meets it again through a 409: no write, and no second "Adopted" Event, since the ShapeRef
      // already records that id.)
      const adopted = (await a.kube.eventsFor(NS, name))
        .filter((e) => e.reason === "AdoptedCloudShape")
        .map((e) => e.message ?? "");
      expect(adopted, `${name}: Events`).toEqual([
        expect.stringContaining(`retagged from owner "${OLD_OWNER_ID}" to ours`),
      ]);
      expect(adopted[0], `${name}: the Event names this shape`).toContain(before.id);
    }
    expect((await controllerA.metrics()).sum(METRIC.adoptions, { from: OLD_OWNER_ID })).toBe(2);

    // B's `k8s` shape carries a uid that is no Shape of cluster A: A's Shape of that name is in conflict,
    // and the shape is never written; nor is the stray one.
    const conflicted = await waitNameConflict(a, NS, "k8s-twin");
    expect(conditionOf(conflicted, "Synced")?.message).toContain(theirs.id);
    expect(await cloud.get(theirs.id)).toEqual(theirs);
    expect(await cloud.get(stray.id)).toEqual(stray);

    // No duplicate, no deletion: since the upgrade, no create succeeded and nothing was deleted.
    const since = (await cloud.requests()).filter((e) => e.seq > seq);
    expect(summary(since.filter((e) => e.method === "DELETE")), "deletions").toEqual([]);
    expect(summary(since.filter((e) => e.method === "POST" && e.status === 201)), "creates").toEqual([]);
    expect(writesTo(since, theirs.id), "writes to B's k8s shape").toEqual([]);
    expect(writesTo(since, stray.id), "writes to the stray k8s shape").toEqual([]);
    const names = (await cloud.list()).map((s) => s.name);
    for (const name of ["up-square", "up-circle", "k8s-twin"]) {
      expect(
        names.filter((n) => n === `${NS}.${name}`),
        `shapes named ${NS}.${name}`,
      ).toHaveLength(1);
    }
  });

  test("each cluster keeps its shapes, with the same cloud ids, over several sweep and resync periods", async () => {
    controllerB = await start(b, { name: "cluster-b", identity: "cluster-b" });

    // Two clusters, two owner ids: each its kube-system namespace's uid, as the controllers say.
    expect(a.ownerId).not.toBe(b.ownerId);
    for (const [controller, stack] of [
      [controllerA, a],
      [controllerB, b],
    ] as const) {
      const metrics = await controller.metrics();
      expect(metrics.sum(METRIC.ownerInfo, { owner_id: stack.ownerId }), "owner_info").toBe(1);
      expect(metrics.sum(METRIC.ownerInfo), "one owner id").toBe(1);
      const said = (await controller.logs()).find((l) => l.msg.startsWith("our owner id"));
      expect(said?.owner, `${controller.options.name} logs its owner id`).toBe(stack.ownerId);
    }

    for (const [stack, prefix] of [
      [a, "a"],
      [b, "b"],
    ] as const) {
      await stack.kube.applyShape(NS, `${prefix}-square`, { type: "square", color: "red" });
      await stack.kube.applyShape(NS, `${prefix}-circle`, { type: "circle", color: "blue" });
      await stack.kube.applyShape(NS, `${prefix}-triangle`, { type: "triangle", color: "green" });
    }
    const kept: { stack: Stack; name: string }[] = [
      ...["up-square", "up-circle", "a-square", "a-circle", "a-triangle"].map((name) => ({ stack: a, name })),
      // B's own `k8s` shape from the old version: adopted by B's upgrade, as A adopted its own.
      ...["k8s-twin", "b-square", "b-circle", "b-triangle"].map((name) => ({ stack: b, name })),
    ];
    const snapshot = new Map<string, CloudShape>();
    for (const { stack, name } of kept) {
      const { cloud: shape } = await waitConverged(stack, NS, name);
      snapshot.set(`${stack === a ? "a" : "b"}/${name}`, shape);
      note(shape);
    }

    // Proof that both sweeps are looking: a real leak under each owner id, deleted by its own cluster.
    const seq = lastSeq(await cloud.requests());
    const since = Date.now();
    const leaks = [
      { leak: await leakOf(a.ownerId, "leak-a"), by: "cluster-a" },
      { leak: await leakOf(b.ownerId, "leak-b"), by: "cluster-b" },
    ];
    for (const { leak } of leaks) {
      await waitFor(`the sweep to delete the leak ${leak.name}`, async () => {
        expect(await cloud.get(leak.id)).toBeUndefined();
      });
    }
    await Promise.all([waitForResyncs(controllerA, since, 3), waitForResyncs(controllerB, since, 3)]);

    // Every shape of both clusters: same id, same revision (not even a write), and its Shape says so.
    for (const { stack, name } of kept) {
      const before = snapshot.get(`${stack === a ? "a" : "b"}/${name}`) as CloudShape;
      expect(await cloud.get(before.id), `${name} of cluster ${stack === a ? "A" : "B"}`).toEqual(before);
      expect((await stack.kube.shape(NS, name)).status?.cloudId).toBe(before.id);
    }
    // Since then, the only cloud writes of either controller are the two leaks' deletions.
    const log = (await cloud.requests()).filter((e) => e.seq > seq);
    const byControllers = log.filter((e) => e.clientId !== "e2e-test");
    expect(
      byControllers.map((e) => [e.method, e.path, e.status, e.clientId]),
      "controller writes since the snapshot",
    ).toEqual(
      expect.arrayContaining(
        leaks.map(({ leak, by }) => ["DELETE", `/v1/shapes/${leak.id}`, 204, by] as const),
      ),
    );
    expect(byControllers).toHaveLength(leaks.length);
  });

  test("the same Shape namespace/name in both clusters: the first to apply wins; the second reports NameConflict and takes the name once it is freed", async () => {
    await a.kube.applyShape(NS, "first-wins", { type: "circle", color: "red" });
    const first = (await waitConverged(a, NS, "first-wins")).cloud;
    note(first);

    const since = Date.now();
    await b.kube.applyShape(NS, "first-wins", { type: "square", color: "blue" });
    const second = await waitNameConflict(b, NS, "first-wins");
    expect(conditionOf(second, "Synced")?.message).toContain(first.id);
    expect(second.status?.cloudId).toBeUndefined();

    // Cluster B keeps looking (one read by name every 5 s, no write): the conflict, then two more looks.
    await waitFor("cluster B to look at the conflicted name again, twice", async () => {
      const looks = (await controllerB.logs()).filter(
        (l) =>
          l.controller === "shape" &&
          l.key === `${NS}/first-wins` &&
          l.msg === "reconciled, requeued" &&
          l.time >= since,
      );
      expect(looks.length).toBeGreaterThanOrEqual(3);
    });
    const warnings = (await b.kube.eventsFor(NS, "first-wins")).filter((e) => e.reason === "NameConflict");
    expect(
      warnings.map((e) => [e.type, e.count ?? 1]),
      "one Warning Event per holder, however often it looks",
    ).toEqual([["Warning", 1]]);
    expect(await cloud.get(first.id), "A's shape, as A made it").toEqual(first);
    expect(writesTo(await cloud.requests(), first.id), "writes to A's shape").toEqual([]);

    // A deletes its Shape (and so its cloud shape): the name is free, and B takes it by itself: no refresh
    // annotation, no spec change.
    await deleteShape(a, "first-wins");
    expect(summary(writesTo(await cloud.requests(), first.id))).toEqual([["DELETE", 204, "cluster-a"]]);
    const taken = await waitConverged(b, NS, "first-wins");
    note(taken.cloud);
    expect(taken.cloud.id).not.toBe(first.id);
    expect(taken.cloud).toMatchObject({ type: "square", color: "blue", tags: { owner: b.ownerId } });
    expect(taken.shape.metadata.annotations ?? {}).not.toHaveProperty("shapes.example.com/refresh");
    const created = (await b.kube.eventsFor(NS, "first-wins")).filter(
      (e) => e.reason === "CreatedCloudShape",
    );
    expect(created.map((e) => e.message)).toEqual([expect.stringContaining(taken.cloud.id)]);
  });

  test("deleting a Shape in one cluster never touches the other's shapes", async () => {
    // A conflict first: B's Shape wants the name of A's shape, then B's Shape is deleted. Its finalizer
    // must find nothing of B's to delete under that name.
    await a.kube.applyShape(NS, "twin", { type: "hexagon", color: "purple" });
    const twinA = (await waitConverged(a, NS, "twin")).cloud;
    note(twinA);
    await b.kube.applyShape(NS, "twin", { type: "circle", color: "orange" });
    await waitNameConflict(b, NS, "twin");

    const before = await cloud.list();
    note(...before);
    const seq = lastSeq(await cloud.requests());
    const since = Date.now();
    await deleteShape(b, "twin");
    await waitFor("B's ShapeRef of twin to be gone", async () => {
      expect(await b.kube.getShapeRef(shapeRefNameOf(NS, "twin"))).toBeUndefined();
    });
    await deleteShape(a, "a-square");
    await deleteShape(b, "b-square");
    const gone = new Set(
      ["a-square", "b-square"].map((name) => before.find((s) => s.name === `${NS}.${name}`)?.id),
    );
    for (const id of gone) expect(id, "a deleted Shape's cloud shape existed").toBeDefined();
    await waitFor("the deleted Shapes' cloud shapes to be gone", async () => {
      const ids = new Set((await cloud.list()).map((s) => s.id));
      expect([...gone].filter((id) => ids.has(id ?? ""))).toEqual([]);
    });
    // Both sweeps and resyncs run again after the deletions: still nothing else moves.
    await Promise.all([waitForResyncs(controllerA, since, 2), waitForResyncs(controllerB, since, 2)]);

    const after = await cloud.list();
    expect(after, "every other shape, as it was").toEqual(before.filter((s) => !gone.has(s.id)));
    expect(
      after.find((s) => s.id === twinA.id),
      "A's twin",
    ).toEqual(twinA);
    const writes = (await cloud.requests()).filter((e) => e.seq > seq);
    expect(
      writes.map((e) => [e.method, e.path, e.status, e.clientId]),
      "the only writes: each cluster deleting its own shape",
    ).toEqual(
      expect.arrayContaining([
        ["DELETE", `/v1/shapes/${before.find((s) => s.name === `${NS}.a-square`)?.id}`, 204, "cluster-a"],
        ["DELETE", `/v1/shapes/${before.find((s) => s.name === `${NS}.b-square`)?.id}`, 204, "cluster-b"],
      ]),
    );
    expect(writes).toHaveLength(2);
  });

  test("an Orphan Shape with a Pending ShapeRef, deleted while the controller is down, a lagging cloud list at restart: the shape stays, without our tags", async () => {
    // The cloud-wide list lag would also lag cluster B's view; this scenario is cluster A's alone.
    await controllerB.stop();
    await controllerA.stop();
    // A crash right after the create: the cloud holds the shape, no id anywhere in Kubernetes (the Shape's
    // status has none yet; the ShapeRef, Pending, never holds one by default).
    const gate = await a.openAnswerGate();
    const crashing = await start(a, { name: "cluster-a-gated", identity: "cluster-a", cloudUrl: gate.url });
    const held = gate.hold({ method: "POST", path: "/v1/shapes" });
    await a.kube.applyShape(NS, "kept", { type: "triangle", color: "yellow", deletionPolicy: "Orphan" });
    const answer = await held;
    expect(answer.status, `the cloud's answer to the create: ${answer.body}`).toBe(201);
    expect(answer.clientWaiting, "the controller still waits for the 201").toBe(true);
    await crashing.kill();
    const created = JSON.parse(answer.body) as CloudShape;
    note(created);
    const shape = await a.kube.shape(NS, "kept");
    expect(created.tags).toMatchObject({ owner: a.ownerId, "k8s-uid": shape.metadata.uid });
    const ref = await a.kube.getShapeRef(shapeRefNameOf(NS, "kept"));
    expect(ref?.spec.deletionPolicy).toBe("Orphan");
    expect(ref?.status?.phase ?? "Pending", "ShapeRef phase").toBe("Pending");
    expect(ref?.status?.cloudId, "cloud id in the ShapeRef").toBeUndefined();

    // Deleted while the controller is down, the finalizer stripped by hand.
    await a.kube.stripFinalizer(NS, "kept");
    await deleteShape(a, "kept");

    // The controller comes back to a cloud whose listing trails by 10 minutes: its cache lacks the shape.
    await cloud.setFaults([{ listLagMs: 600_000 }]);
    try {
      await controllerA.start();
      await waitFor("the dangling ShapeRef to be deleted", async () => {
        expect(await a.kube.getShapeRef(shapeRefNameOf(NS, "kept"))).toBeUndefined();
      });
    } finally {
      await cloud.clearFaults();
    }
    const released = await cloud.get(created.id);
    expect(released, "the Orphan shape, still there").toMatchObject({ id: created.id, name: `${NS}.kept` });
    expect(released?.tags, "our tags stripped").toEqual({});
    const lines = (await controllerA.logs()).filter(
      (l) => l.msg === "let go of a cloud shape left by a missed deletion (deletionPolicy Orphan)",
    );
    expect(lines.map((l) => l.shapeRef)).toEqual([shapeRefNameOf(NS, "kept")]);

    // The listing has caught up; the sweep is looking (it deletes a real leak) and leaves the shape alone.
    const leak = await leakOf(a.ownerId, "leak-late");
    await waitFor("the sweep to delete the late leak", async () => {
      expect(await cloud.get(leak.id)).toBeUndefined();
    });
    expect(await cloud.get(created.id), "the Orphan shape, after the sweep").toEqual(released);
    expect(summary(writesTo(await cloud.requests(), created.id))).toEqual([["PATCH", 200, "cluster-a"]]);

    await controllerB.start();
  });

  test("the cloud's request log: no write by either controller to a shape owned by the other", async () => {
    note(...(await cloud.list()));
    const ownerOfClient = new Map([
      ["cluster-a", a.ownerId],
      ["cluster-b", b.ownerId],
    ]);
    const log = await cloud.requests();
    expect(log[0]?.seq, "the log holds every write of the file").toBe(1);
    expect(new Set(log.map((e) => e.clientId))).toEqual(new Set(["e2e-test", "cluster-a", "cluster-b"]));

    const writes = log.flatMap((e) => {
      const id = /^\/v1\/shapes\/([^/]+)$/.exec(e.path)?.[1];
      const writer = ownerOfClient.get(e.clientId ?? "");
      return id && writer ? [{ ...e, id: decodeURIComponent(id), writer }] : [];
    });
    const count = (clientId: string) => writes.filter((w) => w.clientId === clientId).length;
    expect(count("cluster-a"), "writes by cluster A to existing shapes").toBeGreaterThan(0);
    expect(count("cluster-b"), "writes by cluster B to existing shapes").toBeGreaterThan(0);
    expect(
      writes
        .filter((w) => owners.get(w.id) !== w.writer)
        .map((w) => `${w.method} ${w.id} by ${w.clientId}: owner ${owners.get(w.id) ?? "(never seen)"}`),
      "writes to a shape the writer does not own",
    ).toEqual([]);
  });

  test("no controller logged anything unexpected (a name conflict is the one error)", async () => {
    for (const run of runs) {
      expect(await run.problems({ allow: [/the name is held by/] }), run.options.name).toEqual([]);
    }
  });
});

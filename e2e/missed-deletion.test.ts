/**
 * Scenario: a deletion the controller never saw. The controller is down; a person "unsticks" the Shape by
 * stripping our finalizer and deletes it, so Kubernetes forgets it at once. When the controller comes back
 * there is no Shape left to reconcile — but the ShapeRef it wrote BEFORE the cloud create still says a
 * cloud shape of ours may exist. That dangling ShapeRef leads the controller to the cloud shape, which is
 * deleted, and then the ShapeRef itself. The ShapeRef holds no cloud id (the controller writes none by
 * default): the shape is found by its name and its owner tags (owner, and the Shape's uid in k8s-uid). A
 * ShapeRef from an older controller, whose status still names an id, is read the same way: the id decides
 * nothing.
 *
 * And a deletion missed with the controller running: a Shape switched to `deletionPolicy: Orphan`, deleted
 * and its finalizer removed at once, faster than the reconcile that would write the switch into its
 * ShapeRef. The ShapeRef still says Delete; the informer's last sight of the Shape says Orphan, and that
 * wins: the cloud shape stays, released.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ControllerProcess, METRIC, type Stack, waitConverged, waitFor, writesTo } from "@shapes/stack";
import { startStack } from "./support/stack.ts";
import { ShapesClient } from "./support/shapes.ts";

describe("missed deletion", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("missed-deletion");
    controller = await stack.startController();
    ns = await stack.kube.createNamespace("missed");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** While the controller is down: strip the finalizer by hand and delete the Shape, which is then gone. */
  async function deleteBehindTheControllersBack(name: string): Promise<void> {
    await stack.kube.stripFinalizer(ns, name);
    await stack.kube.deleteShape(ns, name);
    await waitFor(`Shape ${ns}/${name} to be gone`, async () => {
      expect(await stack.kube.getShape(ns, name)).toBeUndefined();
    });
  }

  test("the dangling ShapeRef leads to the cloud shape, which is deleted, then the ShapeRef", async () => {
    await stack.kube.applyShape(ns, "forgotten", { type: "square", color: "red" });
    const { cloud, shape } = await waitConverged(stack, ns, "forgotten");

    await controller.stop();
    await deleteBehindTheControllersBack("forgotten");
    // What the controller will find: no Shape, a ShapeRef that still speaks for it (its uid) and holds no
    // cloud id, and the shape, named like the ShapeRef and tagged with that uid.
    const ref = await stack.kube.getShapeRef(`${ns}.forgotten`);
    expect(ref?.spec.shape.uid).toBe(shape.metadata.uid);
    expect(ref?.status, "ShapeRef status: no cloud id recorded").toBeUndefined();
    expect(await stack.cloud.get(cloud.id)).toMatchObject({
      name: `${ns}.forgotten`,
      tags: { owner: stack.ownerId, "k8s-uid": shape.metadata.uid },
    });

    await controller.start();
    await waitFor("the leaked cloud shape and the ShapeRef to be deleted", async () => {
      expect(await stack.cloud.get(cloud.id), "cloud shape").toBeUndefined();
      expect(await stack.kube.getShapeRef(`${ns}.forgotten`), "ShapeRef").toBeUndefined();
    });

    const writes = writesTo(await stack.cloud.requests(), cloud.id);
    expect(writes.map((r) => [r.method, r.status, r.clientId])).toEqual([["DELETE", 204, "controller"]]);
    expect((await controller.metrics()).sum(METRIC.leaksRemoved)).toBe(1);
    const leakLines = (await controller.logs()).filter(
      (l) => l.msg === "removed a leak left by a missed deletion",
    );
    expect(leakLines.map((l) => l.shapeRef)).toEqual([`${ns}.forgotten`]);
  });

  test("a Shape re-created under the same name meanwhile gets a new cloud shape; the old one is removed", async () => {
    await stack.kube.applyShape(ns, "reborn", { type: "circle", color: "blue" });
    const old = await waitConverged(stack, ns, "reborn");

    await controller.stop();
    await deleteBehindTheControllersBack("reborn");
    // Same name, new uid: the old ShapeRef and cloud shape belong to a Shape that no longer exists.
    await stack.kube.applyShape(ns, "reborn", { type: "triangle", color: "green" });

    await controller.start();
    const fresh = await waitConverged(stack, ns, "reborn");
    expect(fresh.shape.metadata.uid).not.toBe(old.shape.metadata.uid);
    expect(fresh.cloud.id).not.toBe(old.cloud.id);
    expect(fresh.cloud.tags["k8s-uid"]).toBe(fresh.shape.metadata.uid);
    expect(fresh.ref.spec.shape.uid).toBe(fresh.shape.metadata.uid);
    expect(await stack.cloud.get(old.cloud.id)).toBeUndefined();
    expect(writesTo(await stack.cloud.requests(), old.cloud.id).map((r) => [r.method, r.status])).toEqual([
      ["DELETE", 204],
    ]);
    // Exactly one cloud shape carries the name: the new one.
    expect((await stack.cloud.list()).filter((s) => s.name === `${ns}.reborn`).map((s) => s.id)).toEqual([
      fresh.cloud.id,
    ]);
  });

  test("an Orphan Shape's missed deletion still orphans: the cloud shape stays, without our tags", async () => {
    // Created as Delete, then switched to Orphan: the ShapeRef keeps the policy current, because after a
    // missed deletion it is the only record of what the person wanted.
    await stack.kube.applyShape(ns, "kept", { type: "hexagon", color: "purple" });
    const { cloud } = await waitConverged(stack, ns, "kept");
    await stack.kube.patchShape(ns, "kept", { spec: { deletionPolicy: "Orphan" } });
    await waitFor("the ShapeRef to keep deletionPolicy Orphan", async () => {
      expect((await stack.kube.getShapeRef(`${ns}.kept`))?.spec.deletionPolicy).toBe("Orphan");
    });

    await controller.stop();
    await deleteBehindTheControllersBack("kept");
    await controller.start();
    await waitFor("the ShapeRef to be deleted", async () => {
      expect(await stack.kube.getShapeRef(`${ns}.kept`)).toBeUndefined();
    });

    // The cloud shape is still there, as it was, minus our three tags: handed over, never to be touched again.
    const left = await stack.cloud.get(cloud.id);
    expect(left).toMatchObject({ id: cloud.id, name: `${ns}.kept`, type: "hexagon", color: "purple" });
    expect(left?.tags).toEqual({});
    expect(
      writesTo(await stack.cloud.requests(), cloud.id).map((r) => [r.method, r.status, r.clientId]),
    ).toEqual([["PATCH", 200, "controller"]]);
    const lines = (await controller.logs()).filter(
      (l) => l.msg === "let go of a cloud shape left by a missed deletion (deletionPolicy Orphan)",
    );
    expect(lines.map((l) => l.shapeRef)).toEqual([`${ns}.kept`]);
  });

  test("a ShapeRef from an older controller, its status naming an id that is not the shape's: the shape is still found and deleted", async () => {
    await stack.kube.applyShape(ns, "veteran", { type: "square", color: "green" });
    const { cloud } = await waitConverged(stack, ns, "veteran");

    await controller.stop();
    // As an older controller left it, after the shape was re-created under another id and before it could
    // record the new one: phase Created, a stale id.
    await new ShapesClient(stack.kubeConfig).patchShapeRefStatus(`${ns}.veteran`, {
      status: { phase: "Created", cloudId: "shp_stale" },
    });
    await deleteBehindTheControllersBack("veteran");

    await controller.start();
    await waitFor("the leaked cloud shape and the ShapeRef to be deleted", async () => {
      expect(await stack.cloud.get(cloud.id), "cloud shape").toBeUndefined();
      expect(await stack.kube.getShapeRef(`${ns}.veteran`), "ShapeRef").toBeUndefined();
    });
    expect(
      writesTo(await stack.cloud.requests(), cloud.id).map((r) => [r.method, r.status, r.clientId]),
    ).toEqual([["DELETE", 204, "controller"]]);
  });

  /** Waits until the controller settled `name` (its ShapeRef is gone), then: its cloud shape stays, released. */
  async function expectReleased(name: string, cloudId: string): Promise<void> {
    await waitFor(`the ShapeRef of ${name} to be deleted`, async () => {
      expect(await stack.kube.getShapeRef(`${ns}.${name}`)).toBeUndefined();
    });
    const left = await stack.cloud.get(cloudId);
    expect(left, `the cloud shape of ${name}`).toMatchObject({ id: cloudId, name: `${ns}.${name}` });
    expect(left?.tags, `the cloud shape of ${name}: our tags stripped`).toEqual({});
    const writes = writesTo(await stack.cloud.requests(), cloudId);
    expect(
      writes.filter((r) => r.method === "DELETE"),
      `deletes of ${name}'s cloud shape`,
    ).toEqual([]);
  }

  test("an Orphan switch followed at once by a deletion with the finalizer removed leaves the cloud shape in place: the informer's last sight of the Shape says Orphan, though the ShapeRef never did", async () => {
    await stack.kube.applyShape(ns, "edited", { type: "circle", color: "yellow" });
    await stack.kube.applyShape(ns, "stepwise", { type: "circle", color: "green" });
    const edited = await waitConverged(stack, ns, "edited");
    const stepwise = await waitConverged(stack, ns, "stepwise");

    // The controller runs, but is held still (a long GC pause, a busy event loop) while a person acts: its
    // watch receives every event, and it reads them only once both Shapes are gone.
    controller.pause();
    try {
      // One edit switches to Orphan and empties the finalizers, then the delete. A reconcile that sees the
      // edit alone adds the finalizer back and finds the Shape gone: none can write the switch into the
      // ShapeRef first, so the old controller deleted this shape every time.
      await stack.kube.patchShape(ns, "edited", {
        spec: { deletionPolicy: "Orphan" },
        metadata: { finalizers: null },
      });
      await stack.kube.deleteShape(ns, "edited");
      // Three calls back to back: the switch, the delete, the finalizer removed (`kubectl patch ...
      // finalizers: null`). A reconcile reading the events one at a time may get in between them.
      await stack.kube.patchShape(ns, "stepwise", { spec: { deletionPolicy: "Orphan" } });
      await stack.kube.deleteShape(ns, "stepwise");
      await stack.kube.patchShape(ns, "stepwise", { metadata: { finalizers: null } });

      for (const name of ["edited", "stepwise"]) {
        expect(
          await stack.kube.getShape(ns, name),
          `Shape ${name}, while the controller is held`,
        ).toBeUndefined();
        const ref = await stack.kube.getShapeRef(`${ns}.${name}`);
        expect(ref?.spec.deletionPolicy ?? "Delete", `the policy in ${name}'s ShapeRef`).toBe("Delete");
      }
    } finally {
      controller.resume();
    }

    await expectReleased("edited", edited.cloud.id);
    await expectReleased("stepwise", stepwise.cloud.id);
    expect(
      writesTo(await stack.cloud.requests(), edited.cloud.id).map((r) => [r.method, r.status, r.clientId]),
    ).toEqual([["PATCH", 200, "controller"]]);
    const lines = (await controller.logs()).filter(
      (l) => l.msg === "let go of a cloud shape left by a missed deletion (deletionPolicy Orphan)",
    );
    expect(lines.map((l) => l.shapeRef)).toContain(`${ns}.edited`);
  });

  test("the controller logged nothing unexpected", async () => {
    expect(await controller.problems()).toEqual([]);
  });
});

/**
 * Scenario: the controller dies at the worst moment — the cloud has created the shape, the controller has
 * not heard back, so nothing in Kubernetes records the create: the Shape has no cloud id, and the ShapeRef
 * written before the create says only that a cloud shape may exist. After a restart there must be no
 * duplicate and no leak: that ShapeRef, and the shape's name and owner tags, lead to the shape.
 *
 * The moment is made deterministic, not lucky: the controller talks to the cloud through a gate
 * (reconcile-kit/harness's AnswerGate) that holds the answer to its POST. When the hold resolves, the cloud has committed the
 * create and the controller is still waiting; it is SIGKILLed right there. Each test then PROVES the window was
 * hit (cloud shape present, no cloud id in the Shape's status, the ShapeRef there for the Shape's uid, with no
 * status) before it restarts the controller.
 *
 * The ShapeRef gets no status, and its spec is written again only when the Shape's deletionPolicy or the owner
 * id changes (the cloud id goes to the Shape's status only): after the restart it is the same record, still
 * without a status.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { FINALIZER, shapeRefNameOf } from "@shapes/controller";
import {
  type CloudShape,
  conditionOf,
  type ControllerProcess,
  type ShapeRef,
  type Stack,
  waitConverged,
  waitFor,
  writesTo,
} from "@shapes/stack";
import { type AnswerGate } from "reconcile-kit/harness";
import { startStack } from "./support/stack.ts";

describe("crash after create", () => {
  let stack: Stack;
  let gate: AnswerGate;
  let controller: ControllerProcess;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("crash-after-create");
    gate = await stack.openAnswerGate();
    controller = await stack.startController({ cloudUrl: gate.url });
    ns = await stack.kube.createNamespace("crash");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /**
   * Applies a Shape and SIGKILLs the controller the moment the cloud has created its shape, before the
   * controller hears the 201. Returns the cloud shape the dead controller never learned about and the
   * ShapeRef it wrote before the create, after checking that the crash window was really hit.
   */
  async function crashRightAfterCreate(name: string): Promise<{ created: CloudShape; ref: ShapeRef }> {
    const held = gate.hold({ method: "POST", path: "/v1/shapes" });
    await stack.kube.applyShape(ns, name, { type: "square", color: "red", size: 5 });
    const answer = await held;
    expect(answer.status, `the cloud's answer to the create: ${answer.body}`).toBe(201);
    expect(answer.clientWaiting, "the controller still waits for the 201").toBe(true);
    await controller.kill();

    // Proof that the window was hit: the cloud has the shape, Kubernetes records nothing about it.
    const created = JSON.parse(answer.body) as CloudShape;
    const shape = await stack.kube.shape(ns, name);
    expect(await stack.cloud.get(created.id), "the created cloud shape").toMatchObject({
      name: `${ns}.${name}`,
      tags: { owner: stack.ownerId, "k8s-uid": shape.metadata.uid },
    });
    expect(shape.metadata.finalizers).toContain(FINALIZER);
    expect(shape.status?.cloudId, "cloud id in the Shape's status").toBeUndefined();
    const ref = await stack.kube.getShapeRef(shapeRefNameOf(ns, name));
    expect(ref?.spec.shape.uid, "the intent record, written before the create").toBe(shape.metadata.uid);
    expect(ref?.status, "ShapeRef status (none: its phase reads as Pending)").toBeUndefined();
    return { created, ref: ref as ShapeRef };
  }

  /**
   * The ShapeRef after the restart is the one written before the create (same uid, never re-made), and
   * nothing was written to it since: still no status. The cloud id is in the Shape's status.
   */
  function expectSameRecordUnwritten(before: ShapeRef, after: ShapeRef | undefined): void {
    expect(after?.metadata.uid, "the ShapeRef written before the create").toBe(before.metadata.uid);
    expect(after?.metadata.resourceVersion, "writes to the ShapeRef since the crash").toBe(
      before.metadata.resourceVersion,
    );
    expect(after?.status, "ShapeRef status").toBeUndefined();
  }

  /** No duplicate and no leak: every owned cloud shape belongs to a live Shape, one per Shape. */
  async function expectNoDuplicateNoLeak(): Promise<void> {
    const owned = (await stack.cloud.list()).filter((s) => s.tags.owner === stack.ownerId);
    const shapes = await stack.kube.listShapes(ns);
    const uids = new Set(shapes.map((s) => s.metadata.uid));
    expect(
      owned.filter((s) => !uids.has(s.tags["k8s-uid"] ?? "")).map((s) => s.name),
      "owned shapes no Shape claims",
    ).toEqual([]);
    expect(owned.map((s) => s.name).sort(), "one cloud shape per Shape").toEqual(
      shapes.map((s) => `${ns}.${s.metadata.name}`).sort(),
    );
  }

  test("restarted, the controller finds the shape it created (uid tag) and adopts it: one shape, no leak", async () => {
    const { created, ref } = await crashRightAfterCreate("phoenix");
    await stack.cloud.clearRequests();

    await controller.start();
    const after = await waitConverged(stack, ns, "phoenix");

    expect(after.cloud.id).toBe(created.id);
    expect(after.shape.status?.cloudId, "the Shape's status names the adopted shape").toBe(created.id);
    expectSameRecordUnwritten(ref, after.ref);
    const creates = (await stack.cloud.requests()).filter((r) => r.method === "POST");
    expect(creates, "creates after the restart").toEqual([]);
    await expectNoDuplicateNoLeak();
  });

  test("restarted with a lagging view of the cloud, its create meets 409; the uid tag proves the holder ours: adopted", async () => {
    const { created, ref } = await crashRightAfterCreate("lazarus");
    await stack.cloud.clearRequests();
    // Lists and the change feed now show the cloud as it was 10 minutes ago (before this stack existed):
    // the restarted controller's cache does not know the shape, so it tries to create it.
    await stack.cloud.setFaults([{ listLagMs: 600_000 }]);

    await controller.start();
    // Reads by id stay strongly consistent, so the Shape's status is checked against the shape itself.
    await waitFor("the Shape to report the adopted cloud shape", async () => {
      const shape = await stack.kube.shape(ns, "lazarus");
      expect(shape.status?.cloudId).toBe(created.id);
      expect(conditionOf(shape, "Ready")?.status).toBe("True");
    });
    expectSameRecordUnwritten(ref, await stack.kube.getShapeRef(shapeRefNameOf(ns, "lazarus")));
    const events = await stack.kube.eventsFor(ns, "lazarus");
    expect(events.filter((e) => e.reason === "AdoptedCloudShape").map((e) => e.message)).toEqual([
      expect.stringContaining(created.id),
    ]);
    const creates = (await stack.cloud.requests()).filter((r) => r.method === "POST");
    expect(creates.length, "creates after the restart").toBeGreaterThan(0);
    expect(new Set(creates.map((r) => r.status)), "every create after the restart was refused").toEqual(
      new Set([409]),
    );

    await stack.cloud.clearFaults();
    const after = await waitConverged(stack, ns, "lazarus");
    expect(after.cloud.id).toBe(created.id);
    await expectNoDuplicateNoLeak();
  });

  test("crashed after the create, then the Shape deleted by hand while down: the ShapeRef without an id still leads to the shape", async () => {
    const { created } = await crashRightAfterCreate("icarus");
    // The person who finds the Shape stuck strips the finalizer; the Shape is gone at once.
    await stack.kube.stripFinalizer(ns, "icarus");
    await stack.kube.deleteShape(ns, "icarus");
    await waitFor("the Shape to be gone", async () => {
      expect(await stack.kube.getShape(ns, "icarus")).toBeUndefined();
    });

    await controller.start();
    await waitFor("the crash-left cloud shape and its ShapeRef to be deleted", async () => {
      expect(await stack.cloud.get(created.id), "cloud shape").toBeUndefined();
      expect(await stack.kube.getShapeRef(shapeRefNameOf(ns, "icarus")), "ShapeRef").toBeUndefined();
    });
    expect(
      writesTo(await stack.cloud.requests(), created.id).map((r) => [r.method, r.status, r.clientId]),
    ).toEqual([["DELETE", 204, "controller"]]);
    await expectNoDuplicateNoLeak();
  });

  test("the controller logged nothing unexpected in any run", async () => {
    expect(await controller.problems()).toEqual([]);
  });
});

/**
 * Scenario: `shapes.example.com/paused: "true"` — a person asks the controller to keep its hands off one
 * Shape. It still reconciles the Shape (and says so in its conditions) but reads nothing of its cloud shape
 * and writes nothing for it but those conditions (and its ShapeRef's copy of the deletionPolicy): cloud drift
 * stays, a spec change is not carried, even a deletion waits. Removing the annotation resumes everything. The
 * `shapes.example.com/refresh` annotation (any new value) makes the controller look again at once.
 *
 * "Writes nothing" is only meaningful if the controller LOOKED: each test waits for the controller's own log
 * line saying it reconciled the Shape after the change, and for an unpaused control Shape to be repaired.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { FINALIZER, PAUSED_ANNOTATION, REFRESH_ANNOTATION } from "@shapes/controller";
import {
  conditionOf,
  type ControllerProcess,
  type Converged,
  type Shape,
  type Stack,
  waitConverged,
  waitFor,
  writesTo,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

describe("paused", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;
  let held: Converged;

  beforeAll(async () => {
    stack = await startStack("paused");
    controller = await stack.startController();
    ns = await stack.kube.createNamespace("paused");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** The controller's cloud writes to the held shape since `since` (epoch ms). */
  const writesSince = async (since: number) =>
    writesTo(await stack.cloud.requests(), held.cloud.id).filter(
      (r) => r.clientId === "controller" && r.startedAtMs >= since,
    );

  /** Sets or removes the paused annotation and waits until the Synced condition agrees. */
  async function setPaused(paused: boolean): Promise<Shape> {
    await stack.kube.annotateShape(ns, "held", { [PAUSED_ANNOTATION]: paused ? "true" : null });
    return waitFor(`the Shape to report ${paused ? "paused" : "unpaused"}`, async () => {
      const shape = await stack.kube.shape(ns, "held");
      const synced = conditionOf(shape, "Synced");
      if (paused) expect(synced).toMatchObject({ status: "False", reason: "ReconcilePaused" });
      else expect(synced?.reason).not.toBe("ReconcilePaused");
      return shape;
    });
  }

  test("a paused Shape gets no writes: cloud drift is not repaired, a spec change is not carried", async () => {
    await stack.kube.applyShape(ns, "held", { type: "square", color: "red" });
    await stack.kube.applyShape(ns, "control", { type: "circle", color: "blue" });
    held = await waitConverged(stack, ns, "held");
    const control = await waitConverged(stack, ns, "control");

    const paused = await setPaused(true);
    expect(conditionOf(paused, "Synced")?.message).toContain(PAUSED_ANNOTATION);

    const since = Date.now();
    await stack.cloud.patch(held.cloud.id, { color: "yellow" }); // drift on the paused Shape
    await stack.kube.patchShape(ns, "held", { spec: { size: 20 } }); // and a spec change
    await stack.cloud.patch(control.cloud.id, { color: "yellow" }); // the same drift on the control

    // The controller is at work: the control is repaired...
    await waitFor("the unpaused control to be repaired", async () => {
      const c = await waitConverged(stack, ns, "control", { timeoutMs: 1_000 });
      expect(c.shape.status?.driftRepairs).toBe(1);
    });
    // ...and it looked at the paused Shape after both changes, and did nothing.
    await controller.waitReconciled("shape", `${ns}/held`, since);
    expect(await stack.cloud.get(held.cloud.id)).toMatchObject({ color: "yellow" });
    expect(await stack.cloud.get(held.cloud.id)).not.toHaveProperty("size");
    expect(await writesSince(since)).toEqual([]);
    const shape = await stack.kube.shape(ns, "held");
    expect(shape.status?.observedGeneration).toBeLessThan(shape.metadata.generation ?? 0);
    expect(shape.status?.driftRepairs ?? 0).toBe(0);
    expect(conditionOf(shape, "Synced")?.reason).toBe("ReconcilePaused");
  });

  test("unpausing repairs everything at once: the drift, and the spec change made while paused", async () => {
    await setPaused(false);
    const after = await waitConverged(stack, ns, "held");
    expect(after.cloud).toMatchObject({ id: held.cloud.id, color: "red", size: 20 });
  });

  test("the refresh annotation makes the controller look again at once; a converged Shape then costs no write", async () => {
    const before = await waitConverged(stack, ns, "held");
    const since = Date.now();
    await stack.kube.annotateShape(ns, "held", { [REFRESH_ANNOTATION]: String(since) });
    // The resync period is 5 min and nothing else changed: only the refresh explains this reconcile.
    await controller.waitReconciled("shape", `${ns}/held`, since);
    expect(await writesSince(since)).toEqual([]);
    expect((await stack.kube.shape(ns, "held")).status).toEqual(before.shape.status);
  });

  test("a paused Shape's deletion waits: finalizer and cloud shape stay until it is unpaused", async () => {
    await setPaused(true);
    const since = Date.now();
    await stack.kube.deleteShape(ns, "held");

    const waiting = await waitFor("the condition to say the deletion waits", async () => {
      const shape = await stack.kube.shape(ns, "held");
      expect(conditionOf(shape, "Synced")?.message).toMatch(/deletion waits/);
      return shape;
    });
    await controller.waitReconciled("shape", `${ns}/held`, since);
    expect(waiting.metadata.deletionTimestamp).toBeDefined();
    expect(waiting.metadata.finalizers).toContain(FINALIZER);
    expect(await stack.cloud.get(held.cloud.id)).toBeDefined();
    expect(await stack.kube.getShapeRef(`${ns}.held`)).toBeDefined();
    expect(await writesSince(since)).toEqual([]);

    // Unpausing a Shape that is being deleted lets the deletion through the finalizer.
    await stack.kube.annotateShape(ns, "held", { [PAUSED_ANNOTATION]: null });
    await waitFor("the Shape, its ShapeRef and its cloud shape to be gone", async () => {
      expect(await stack.kube.getShape(ns, "held"), "Shape").toBeUndefined();
      expect(await stack.kube.getShapeRef(`${ns}.held`), "ShapeRef").toBeUndefined();
      expect(await stack.cloud.get(held.cloud.id), "cloud shape").toBeUndefined();
    });
    expect((await writesSince(since)).map((r) => `${r.method} ${r.status}`)).toEqual(["DELETE 204"]);
  });

  test("the controller logged nothing unexpected", async () => {
    expect(await controller.problems()).toEqual([]);
  });
});

/**
 * Scenario: the world moved while the controller was down. Shapes were created, changed and deleted in
 * Kubernetes; our cloud shapes were recolored and deleted in the cloud. None of it arrives as an event
 * after the restart (the caches simply list the new state), so it is the startup resync — every Shape
 * reconciled once BEFORE /readyz says ready — that must catch all of it.
 *
 * That is what the test holds the controller to: the moment it reports ready, everything is converged
 * already (one look, no waiting).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ControllerProcess, type Converged, METRIC, type Stack, waitConverged } from "@shapes/stack";
import { startStack } from "./support/stack.ts";

describe("startup resync", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("startup-resync");
    controller = await stack.startController();
    ns = await stack.kube.createNamespace("resync");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** Converged right now: a single look, no retries. */
  const convergedNow = (name: string): Promise<Converged> => waitConverged(stack, ns, name, { timeoutMs: 0 });

  test("everything that happened while the controller was down is converged by the time it is ready", async () => {
    // Before: four converged Shapes.
    await stack.kube.applyShape(ns, "recolored", { type: "square", color: "red" });
    await stack.kube.applyShape(ns, "deleted-in-cloud", { type: "circle", color: "blue", size: 3 });
    await stack.kube.applyShape(ns, "respecced", { type: "triangle", color: "green" });
    await stack.kube.applyShape(ns, "deleted-in-k8s", { type: "hexagon", color: "pink" });
    const recolored = await waitConverged(stack, ns, "recolored");
    const deletedInCloud = await waitConverged(stack, ns, "deleted-in-cloud");
    const respecced = await waitConverged(stack, ns, "respecced");
    const deletedInK8s = await waitConverged(stack, ns, "deleted-in-k8s");

    await controller.stop();

    // While it is down, on both sides:
    const newNames = ["new-a", "new-b", "new-c"];
    for (const name of newNames) await stack.kube.applyShape(ns, name, { type: "square", color: "white" });
    await stack.cloud.patch(recolored.cloud.id, { color: "yellow" });
    await stack.cloud.delete(deletedInCloud.cloud.id);
    await stack.kube.patchShape(ns, "respecced", { spec: { color: "black", size: 9 } });
    await stack.kube.deleteShape(ns, "deleted-in-k8s"); // held by our finalizer until the controller is back
    expect((await stack.kube.shape(ns, "deleted-in-k8s")).metadata.deletionTimestamp).toBeDefined();

    await controller.start(); // returns once /readyz answers 200

    // New Shapes: created.
    for (const name of newNames) {
      const c = await convergedNow(name);
      expect(c.cloud).toMatchObject({ type: "square", color: "white" });
    }
    // Recolored in the cloud: repaired in place, counted as drift.
    const repaired = await convergedNow("recolored");
    expect(repaired.cloud).toMatchObject({ id: recolored.cloud.id, color: "red" });
    expect(repaired.shape.status?.driftRepairs).toBe(1);
    expect((await controller.metrics()).sum(METRIC.driftRepairs)).toBe(1);
    // Deleted in the cloud: created again.
    const recreated = await convergedNow("deleted-in-cloud");
    expect(recreated.cloud.id).not.toBe(deletedInCloud.cloud.id);
    expect(recreated.cloud).toMatchObject({ type: "circle", color: "blue", size: 3 });
    // Spec changed: carried to the same cloud shape, as an update (not drift).
    const updated = await convergedNow("respecced");
    expect(updated.cloud).toMatchObject({ id: respecced.cloud.id, color: "black", size: 9 });
    expect(updated.shape.status?.driftRepairs ?? 0).toBe(0);
    // Deleted in Kubernetes: the finalizer ran — cloud shape, ShapeRef and Shape gone.
    expect(await stack.kube.getShape(ns, "deleted-in-k8s")).toBeUndefined();
    expect(await stack.kube.getShapeRef(`${ns}.deleted-in-k8s`)).toBeUndefined();
    expect(await stack.cloud.get(deletedInK8s.cloud.id)).toBeUndefined();

    const logs = await controller.logs();
    expect(logs.some((l) => l.msg.startsWith("startup resync done"))).toBe(true);
  });

  test("the controller logged nothing unexpected in any run", async () => {
    expect(await controller.problems()).toEqual([]);
  });
});

/**
 * Scenario: bidirectional reconciliation. Someone changes or deletes our cloud shape behind the
 * controller's back; the controller notices (change feed) and puts the cloud back to the spec.
 *
 * The resync period is long (5 min, the stack's default), so only the cloud's change feed can explain a
 * repair within the test's deadline.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ControllerProcess, METRIC, type Stack, waitConverged, waitFor } from "@shapes/stack";
import { startStack } from "./support/stack.ts";

describe("drift repair", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("drift-repair");
    controller = await stack.startController();
    ns = await stack.kube.createNamespace("drift");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  test("a cloud-side recolor is repaired back to the spec, and counted as drift", async () => {
    await stack.kube.applyShape(ns, "recolor", { type: "square", color: "purple" });
    const before = await waitConverged(stack, ns, "recolor");
    const repairsBefore = (await controller.metrics()).sum(METRIC.driftRepairs);

    // A human recolors it in the cloud console.
    const changed = await stack.cloud.patch(before.cloud.id, { color: "yellow" });
    expect(changed.color).toBe("yellow");

    const after = await waitFor("the cloud shape to be purple again", async () => {
      const c = await waitConverged(stack, ns, "recolor", { timeoutMs: 1_000 });
      expect(c.shape.status?.driftRepairs).toBe(1);
      return c;
    });
    expect(after.cloud.id).toBe(before.cloud.id);
    expect(after.cloud.revision).toBeGreaterThan(changed.revision);
    expect((await controller.metrics()).sum(METRIC.driftRepairs)).toBe(repairsBefore + 1);
    const repairs = (await stack.kube.eventsFor(ns, "recolor")).filter(
      (e) => e.reason === "RepairedCloudShapeDrift",
    );
    expect(repairs.map((e) => e.message)).toEqual([expect.stringContaining('color: "yellow" → "purple"')]);
  });

  test("every managed field is repaired (a size added in the cloud is removed), foreign tags are kept", async () => {
    await stack.kube.applyShape(ns, "sized", { type: "hexagon", color: "green" });
    const before = await waitConverged(stack, ns, "sized");

    // Someone sets a size (the spec has none) and adds a tag of their own.
    await stack.cloud.patch(before.cloud.id, { size: 999, tags: { team: "billing" } });

    // The repair is two writes: the cloud patch, THEN the status with the counter. Both are waited for
    // together (waitConverged reads the Shape before the cloud, so the cloud alone could be seen first).
    const after = await waitFor("the size to be removed again, and the repair counted", async () => {
      const c = await waitConverged(stack, ns, "sized", { timeoutMs: 1_000 });
      expect(c.cloud.size).toBeUndefined();
      expect(c.shape.status?.driftRepairs).toBe(1);
      return c;
    });
    expect(after.cloud.id).toBe(before.cloud.id);
    expect(after.cloud.tags).toEqual({
      owner: stack.ownerId,
      "k8s-uid": after.shape.metadata.uid,
      "k8s-name": `${ns}/sized`,
      team: "billing", // not ours to manage: left alone
    });
    const repairs = (await stack.kube.eventsFor(ns, "sized")).filter(
      (e) => e.reason === "RepairedCloudShapeDrift",
    );
    expect(repairs.map((e) => e.message)).toEqual([expect.stringContaining("size: 999 → null")]);
  });

  test("one of our own tags rewritten in the cloud is restored at once", async () => {
    await stack.kube.applyShape(ns, "retagged", { type: "circle", color: "white" });
    const before = await waitConverged(stack, ns, "retagged");

    // Someone points our k8s-name tag elsewhere. The shape is still ours (owner and k8s-uid), and the
    // change feed must still lead the controller to the Shape that owns the name.
    await stack.cloud.patch(before.cloud.id, { tags: { "k8s-name": "someone/else" } });

    const after = await waitFor("the k8s-name tag to be restored", async () => {
      const c = await waitConverged(stack, ns, "retagged", { timeoutMs: 1_000 });
      expect(c.shape.status?.driftRepairs).toBe(1);
      return c;
    });
    expect(after.cloud.id).toBe(before.cloud.id);
    const repairs = (await stack.kube.eventsFor(ns, "retagged")).filter(
      (e) => e.reason === "RepairedCloudShapeDrift",
    );
    expect(repairs.map((e) => e.message)).toEqual([
      expect.stringContaining(`tags.k8s-name: "someone/else" → "${ns}/retagged"`),
    ]);
  });

  test("a cloud shape deleted behind our back is created again", async () => {
    await stack.kube.applyShape(ns, "deleted", { type: "triangle", color: "orange", size: 7 });
    const before = await waitConverged(stack, ns, "deleted");

    await stack.cloud.delete(before.cloud.id);

    const after = await waitFor("a new cloud shape for the Shape", async () => {
      const c = await waitConverged(stack, ns, "deleted", { timeoutMs: 1_000 });
      expect(c.cloud.id).not.toBe(before.cloud.id);
      return c;
    });
    expect(after.cloud).toMatchObject({ type: "triangle", color: "orange", size: 7 });
    expect(await stack.cloud.get(before.cloud.id)).toBeUndefined();
    // Exactly one shape carries this Shape's uid: the replacement, not a pile of them.
    const mine = (await stack.cloud.list()).filter((s) => s.tags["k8s-uid"] === before.shape.metadata.uid);
    expect(mine.map((s) => s.id)).toEqual([after.cloud.id]);
  });

  test("the controller logged nothing unexpected (no warning, no error, no 403)", async () => {
    expect(await controller.problems()).toEqual([]);
  });
});

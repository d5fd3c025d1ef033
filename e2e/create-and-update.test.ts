/**
 * Scenario: the happy path of the story. A Shape is created → the cloud shape appears with our owner tags,
 * the finalizer and the ShapeRef are in place, status says Ready; the spec changes → the cloud follows.
 * All under the least-privilege RBAC of deploy/rbac.yaml (a 403 anywhere would show in the log).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { FINALIZER } from "@shapes/controller";
import { type ControllerProcess, forbiddenLines, type Stack, waitConverged } from "@shapes/stack";
import { startStack } from "./support/stack.ts";

describe("create and update", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("create-and-update");
    controller = await stack.startController();
    ns = await stack.kube.createNamespace("create");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  test("a new Shape gets a cloud shape with our owner tags, a finalizer, a ShapeRef and Ready status", async () => {
    await stack.kube.applyShape(ns, "foo", { type: "square", color: "red" });

    const { shape, cloud, ref } = await waitConverged(stack, ns, "foo");

    expect(cloud.name).toBe(`${ns}.foo`);
    expect(shape.metadata.finalizers).toContain(FINALIZER);
    expect(shape.status?.cloudName).toBe(`${ns}.foo`);
    expect(ref.spec).toEqual({
      shape: { namespace: ns, name: "foo", uid: shape.metadata.uid },
      cloudName: `${ns}.foo`,
      deletionPolicy: "Delete",
      owner: stack.ownerId,
    });
    const reasons = (await stack.kube.eventsFor(ns, "foo")).map((e) => e.reason);
    expect(reasons).toContain("CreatedCloudShape");
    // Exactly one create reached the cloud for it.
    const creates = (await stack.cloud.requests()).filter(
      (r) => r.method === "POST" && r.path === "/v1/shapes" && r.status === 201,
    );
    expect(creates).toHaveLength(1);
  });

  test("a spec change (color, then size) is carried to the cloud shape, in place", async () => {
    const before = await waitConverged(stack, ns, "foo");

    await stack.kube.patchShape(ns, "foo", { spec: { color: "blue", size: 40 } });
    const after = await waitConverged(stack, ns, "foo");

    expect(after.cloud).toMatchObject({ id: before.cloud.id, color: "blue", size: 40, type: "square" });
    expect(after.shape.metadata.generation).toBeGreaterThan(before.shape.metadata.generation ?? 0);
    // A spec change is an update, not a drift repair.
    expect(after.shape.status?.driftRepairs ?? 0).toBe(0);
    const reasons = (await stack.kube.eventsFor(ns, "foo")).map((e) => e.reason);
    expect(reasons).toContain("UpdatedCloudShape");
    expect(reasons).not.toContain("RepairedCloudShapeDrift");

    // Removing the size removes it in the cloud too (the whole managed state is compared, not some fields).
    await stack.kube.patchShape(ns, "foo", { spec: { size: null } });
    const unsized = await waitConverged(stack, ns, "foo");
    expect(unsized.cloud.size).toBeUndefined();
    expect(unsized.cloud.id).toBe(before.cloud.id);
  });

  test("several Shapes converge independently", async () => {
    const names = ["a", "b", "c", "d", "e"];
    const colors = ["red", "green", "blue", "pink", "black"];
    await Promise.all(
      names.map((n, i) => stack.kube.applyShape(ns, n, { type: "circle", color: colors[i] ?? "red" })),
    );
    for (const n of names) await waitConverged(stack, ns, n);
  });

  test("the controller never met a 403 (deploy/rbac.yaml grants everything it uses)", async () => {
    expect(forbiddenLines(await controller.logs())).toEqual([]);
  });
});

/**
 * Scenario: observe without managing (Crossplane's `managementPolicies: ["Observe"]`). A cloud shape someone
 * else made — another owner's, or one with no tags at all — is brought into Kubernetes by a Shape of the same
 * name that only observes: its status shows the cloud shape's type and color (`status.atProvider`), Ready
 * when it exists, and the controller never writes to it, not when its owner changes it, not when the Shape
 * is deleted.
 *
 * "Never writes" needs proof that the controller was there to write: after the observed Shapes are deleted,
 * a control Shape is created and converges, and only then is the cloud's request log (every write, with the
 * client that sent it) read: the controller's only write is the control's create.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { REFRESH_ANNOTATION } from "@shapes/controller";
import { type CloudShape, conditionOf, type Stack, waitConverged, waitFor } from "@shapes/stack";
import { startStack } from "./support/stack.ts";

describe("observe only", () => {
  let stack: Stack;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("observe-only");
    ns = await stack.kube.createNamespace("observe");
    await stack.startController();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** Waits until `ns/name` shows `shape` in status.atProvider, Ready=True, Synced=True ObserveOnly. */
  async function waitObserved(name: string, shape: CloudShape, owner?: string): Promise<void> {
    await waitFor(`${ns}/${name} to show ${shape.name} in status`, async () => {
      const observer = await stack.kube.getShape(ns, name);
      expect(observer?.status?.atProvider, "status.atProvider").toEqual({
        id: shape.id,
        type: shape.type,
        color: shape.color,
        ...(shape.size === undefined ? {} : { size: shape.size }),
        ...(owner === undefined ? {} : { owner }),
      });
      expect(conditionOf(observer, "Ready"), "Ready").toMatchObject({ status: "True", reason: "Available" });
      expect(conditionOf(observer, "Synced"), "Synced").toMatchObject({
        status: "True",
        reason: "ObserveOnly",
      });
      expect(observer?.metadata.finalizers ?? [], "finalizers").toEqual([]);
    });
  }

  test("a foreign cloud shape is seen in status, never written, also when its Shape is deleted", async () => {
    const others = await stack.cloud.create({
      name: `${ns}.theirs`,
      type: "hexagon",
      color: "purple",
      size: 40,
      tags: { owner: "someone-else", team: "billing" },
    });
    const untagged = await stack.cloud.create({ name: `${ns}.untagged`, type: "triangle", color: "yellow" });

    // Only managementPolicies: the desired fields may be left out.
    await stack.kube.applyShape(ns, "theirs", { managementPolicies: ["Observe"] });
    await stack.kube.applyShape(ns, "untagged", { managementPolicies: ["Observe"] });
    await waitObserved("theirs", others, "someone-else");
    await waitObserved("untagged", untagged);
    expect(await stack.kube.getShapeRef(`${ns}.theirs`), "no ShapeRef: nothing is created").toBeUndefined();

    // Their owner recolors it; a look again (the refresh) shows the new color, and nothing is repaired.
    const recolored = await stack.cloud.patch(others.id, { color: "green" });
    await stack.kube.annotateShape(ns, "theirs", { [REFRESH_ANNOTATION]: "look-again" });
    await waitObserved("theirs", recolored, "someone-else");

    await stack.kube.deleteShape(ns, "theirs");
    await stack.kube.deleteShape(ns, "untagged");
    await waitFor("both observing Shapes to be gone", async () => {
      expect(await stack.kube.getShape(ns, "theirs")).toBeUndefined();
      expect(await stack.kube.getShape(ns, "untagged")).toBeUndefined();
    });

    // The control: the controller is alive and writes when asked to.
    await stack.kube.applyShape(ns, "control", { type: "square", color: "red" });
    await waitConverged(stack, ns, "control");

    expect(await stack.cloud.get(others.id), "their shape, as they left it").toEqual(recolored);
    expect(await stack.cloud.get(untagged.id), "the untagged shape, as made").toEqual(untagged);
    const controllerWrites = (await stack.cloud.requests()).filter((r) => r.clientId === "controller");
    expect(
      controllerWrites.map((r) => [r.method, r.path, r.status]),
      "the controller's writes: the control's create only",
    ).toEqual([["POST", "/v1/shapes", 201]]);
  });
});

/**
 * Scenario: a Shape is deleted. Our finalizer holds it while the controller runs the story backwards —
 * the cloud shape first, then the ShapeRef (the intent record has nothing left to guard), then the
 * finalizer — and only then does Kubernetes let the Shape go. A cloud shape that is already gone (404)
 * counts as deleted. A foreign shape holding the Shape's name is never deleted with it.
 *
 * The order is shown, not assumed: the controller talks to the cloud through a gate that holds the answer
 * to its DELETE, so the test looks at all three sides at the moment the cloud shape is gone and the
 * controller has not heard back yet.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { FINALIZER } from "@shapes/controller";
import {
  conditionOf,
  type ControllerProcess,
  METRIC,
  type Stack,
  waitConverged,
  waitFor,
  writesTo,
} from "@shapes/stack";
import { type AnswerGate } from "reconcile-kit/harness";
import { startStack } from "./support/stack.ts";

describe("delete through the finalizer", () => {
  let stack: Stack;
  let gate: AnswerGate;
  let controller: ControllerProcess;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("delete-through-finalizer");
    gate = await stack.openAnswerGate();
    controller = await stack.startController({ cloudUrl: gate.url });
    ns = await stack.kube.createNamespace("delete");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** Waits until the Shape and its ShapeRef are both gone from the API server. */
  async function waitGone(name: string): Promise<void> {
    await waitFor(`Shape ${ns}/${name} and its ShapeRef to be gone`, async () => {
      expect(await stack.kube.getShape(ns, name), "Shape").toBeUndefined();
      expect(await stack.kube.getShapeRef(`${ns}.${name}`), "ShapeRef").toBeUndefined();
    });
  }

  test("the cloud shape is deleted first, then the ShapeRef, then the finalizer lets the Shape go", async () => {
    await stack.kube.applyShape(ns, "doomed", { type: "square", color: "red" });
    const { cloud } = await waitConverged(stack, ns, "doomed");

    const held = gate.hold({ method: "DELETE", path: `/v1/shapes/${cloud.id}` });
    await stack.kube.deleteShape(ns, "doomed");
    const answer = await held;

    // The cloud has deleted the shape; the controller has not heard back. Nothing else has moved yet.
    expect(answer.status).toBe(204);
    expect(await stack.cloud.get(cloud.id)).toBeUndefined();
    const terminating = await stack.kube.shape(ns, "doomed");
    expect(terminating.metadata.deletionTimestamp).toBeDefined();
    expect(terminating.metadata.finalizers).toContain(FINALIZER);
    expect(await stack.kube.getShapeRef(`${ns}.doomed`)).toBeDefined();

    answer.release();
    await waitGone("doomed");

    const log = await stack.cloud.requests();
    expect(writesTo(log, cloud.id).map((r) => [r.method, r.status, r.clientId])).toEqual([
      ["DELETE", 204, "controller"],
    ]);
    const reasons = (await stack.kube.eventsFor(ns, "doomed")).map((e) => e.reason);
    expect(reasons).toContain("DeletedCloudShape");
    // Deleted means deleted: nothing carries the Shape's name in the cloud any more.
    expect(await stack.cloud.byName(`${ns}.doomed`)).toBeUndefined();
  });

  test("a cloud shape that is already gone (404) counts as deleted", async () => {
    await stack.kube.applyShape(ns, "vanished", { type: "circle", color: "blue" });
    const { cloud } = await waitConverged(stack, ns, "vanished");

    // While the controller is down, someone deletes the cloud shape, then the Shape is deleted: the
    // controller comes back to a Terminating Shape whose cloud shape it can only find by the recorded id.
    await controller.stop();
    await stack.cloud.delete(cloud.id);
    await stack.kube.deleteShape(ns, "vanished");
    await controller.start();

    await waitGone("vanished");
    // The recorded id was read (a shape the owner-filtered cache does not show must be proven ours before a
    // delete): 404, nothing left to delete — so not one write, and the Shape went.
    expect(
      (await controller.metrics()).sum(METRIC.externalRequests, { verb: "get", status: "404" }),
    ).toBeGreaterThan(0);
    const controllerWrites = writesTo(await stack.cloud.requests(), cloud.id).filter(
      (r) => r.clientId === "controller",
    );
    expect(controllerWrites).toEqual([]);
    // Not re-created on its way out.
    expect(await stack.cloud.byName(`${ns}.vanished`)).toBeUndefined();
  });

  test("deleting a Shape whose name a foreign shape holds deletes nothing in the cloud", async () => {
    const squatter = await stack.cloud.create({
      name: `${ns}.squatted`,
      type: "triangle",
      color: "green",
      tags: { owner: "someone-else" },
    });
    await stack.kube.applyShape(ns, "squatted", { type: "square", color: "red" });
    await waitFor("the Shape to report the name conflict", async () => {
      const s = await stack.kube.shape(ns, "squatted");
      expect(conditionOf(s, "Synced")).toMatchObject({ status: "False", reason: "NameConflict" });
    });

    await stack.kube.deleteShape(ns, "squatted");
    await waitGone("squatted");

    expect(await stack.cloud.get(squatter.id)).toEqual(squatter);
    expect(writesTo(await stack.cloud.requests(), squatter.id)).toEqual([]);
  });

  test("the controller logged nothing unexpected (the name conflict is its one error)", async () => {
    expect(await controller.problems({ allow: [/the name is held by/] })).toEqual([]);
  });
});

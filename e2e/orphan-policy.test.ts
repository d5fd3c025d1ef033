/**
 * Scenario: `deletionPolicy: Orphan`. Deleting the Shape leaves its cloud shape in place and hands it over:
 * our owner tags are stripped — and nothing else changes (type, color, size, other people's tags). The
 * ShapeRef goes, the finalizer goes, the Shape goes. From then on the shape is foreign: the controller
 * never touches it again, not even for a new Shape of the same name.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  type CloudShape,
  conditionOf,
  type ControllerProcess,
  type Stack,
  waitConverged,
  waitFor,
  writesTo,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

describe("orphan policy", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;
  let orphan: CloudShape;

  beforeAll(async () => {
    stack = await startStack("orphan-policy");
    controller = await stack.startController();
    ns = await stack.kube.createNamespace("orphan");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  test("deleting an Orphan Shape leaves the cloud shape, strips our owner tags, and changes nothing else", async () => {
    await stack.kube.applyShape(ns, "keeper", {
      type: "hexagon",
      color: "purple",
      size: 33,
      deletionPolicy: "Orphan",
    });
    const before = await waitConverged(stack, ns, "keeper");
    // Someone else's tag on our shape: theirs to keep after we let go.
    const tagged = await stack.cloud.patch(before.cloud.id, { tags: { "cost-center": "42" } });
    await waitConverged(stack, ns, "keeper");

    await stack.kube.deleteShape(ns, "keeper");
    await waitFor("the Shape and its ShapeRef to be gone", async () => {
      expect(await stack.kube.getShape(ns, "keeper"), "Shape").toBeUndefined();
      expect(await stack.kube.getShapeRef(`${ns}.keeper`), "ShapeRef").toBeUndefined();
    });

    const after = await stack.cloud.get(before.cloud.id);
    expect(after, "the orphaned cloud shape").toBeDefined();
    orphan = after as CloudShape;
    const { tags: _tags, revision: _revision, updatedAt: _updatedAt, ...fieldsBefore } = tagged;
    expect(orphan).toMatchObject(fieldsBefore);
    expect(orphan.tags).toEqual({ "cost-center": "42" });

    // One write, the tag strip: no delete, no other change.
    const writes = writesTo(await stack.cloud.requests(), before.cloud.id).filter(
      (r) => r.clientId === "controller",
    );
    expect(writes.map((r) => [r.method, r.status])).toEqual([["PATCH", 200]]);
    const reasons = (await stack.kube.eventsFor(ns, "keeper")).map((e) => e.reason);
    expect(reasons).toContain("OrphanedCloudShape");
    expect(reasons).not.toContain("DeletedCloudShape");
  });

  test("the orphan is foreign now: a new Shape of the same name reports NameConflict and does not take it back", async () => {
    await stack.kube.applyShape(ns, "keeper", { type: "square", color: "red" });
    await waitFor("the new Shape to report the name conflict", async () => {
      const s = await stack.kube.shape(ns, "keeper");
      expect(conditionOf(s, "Synced")).toMatchObject({ status: "False", reason: "NameConflict" });
    });
    // The new Shape leaves without deleting what is not its own.
    await stack.kube.deleteShape(ns, "keeper");
    await waitFor("the new Shape to be gone", async () => {
      expect(await stack.kube.getShape(ns, "keeper")).toBeUndefined();
    });

    expect(await stack.cloud.get(orphan.id)).toEqual(orphan);
    const writesSinceOrphaned = writesTo(await stack.cloud.requests(), orphan.id).filter(
      (r) => r.clientId === "controller",
    );
    expect(writesSinceOrphaned).toHaveLength(1); // the tag strip of the first test, nothing after
  });

  test("the controller logged nothing unexpected (the name conflict is its one error)", async () => {
    expect(await controller.problems({ allow: [/the name is held by/] })).toEqual([]);
  });
});

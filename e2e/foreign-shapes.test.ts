/**
 * Scenario: the cloud is shared. Shapes that are not ours — no owner tag, another owner id, tags that only
 * look like ours — are never modified or deleted, not even one holding the very name a Shape needs. That
 * Shape reports Synced=False, reason NameConflict, with a Warning Event, and the foreign shape stays as it was.
 *
 * "Never touched" needs proof that the controller had every chance to touch them: an owned shape that no
 * Shape claims (a real leak) is created next to them, and the test waits until the sweep has deleted it.
 * Only then are the foreign shapes compared (same revision) and the cloud's request log searched (no write
 * to any of them).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  type CloudShape,
  conditionOf,
  type ControllerProcess,
  METRIC,
  type Stack,
  waitConverged,
  waitFor,
  waitNameConflict,
  writesTo,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

describe("foreign shapes", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;
  /** Every foreign shape, as created (so: its revision before the controller could act). */
  const foreign: CloudShape[] = [];

  beforeAll(async () => {
    stack = await startStack("foreign-shapes");
    ns = await stack.kube.createNamespace("foreign");
    controller = await stack.startController();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  test("shapes without our owner tag are never modified or deleted, while a real leak next to them is", async () => {
    const made = await Promise.all([
      // No tags at all, under a name a Shape in `ns` could have (but none has).
      stack.cloud.create({ name: `${ns}.untagged`, type: "square", color: "red" }),
      // Another controller's shape, with that controller's own bookkeeping tags.
      stack.cloud.create({
        name: `${ns}.other-owner`,
        type: "circle",
        color: "blue",
        tags: { owner: "team-b", "k8s-uid": "4b8e-not-ours", "k8s-name": `${ns}/other-owner` },
      }),
      // Tags that only LOOK like ours: a differently cased owner, padding, an empty owner, hostile values.
      stack.cloud.create({
        name: `${ns}.cased`,
        type: "triangle",
        color: "green",
        tags: { owner: "K8s", "k8s-name": "kube-system/secret" },
      }),
      stack.cloud.create({ name: `${ns}.padded`, type: "hexagon", color: "pink", tags: { owner: "k8s " } }),
      stack.cloud.create({
        name: `${ns}.hostile`,
        type: "square",
        color: "black",
        tags: { owner: "", "k8s-uid": `'; DROP TABLE shapes; --`, "k8s-name": `<script>${ns}/x</script>` },
      }),
      // No owner tag, but our uid and name tags copied: ownership is the owner tag, nothing else.
      stack.cloud.create({
        name: "elsewhere.copied-tags",
        type: "circle",
        color: "gray",
        tags: { "k8s-uid": "copied", "k8s-name": `${ns}/copied-tags` },
      }),
    ]);
    foreign.push(...made);

    // The control: tagged with OUR owner id, claimed by no Shape and no ShapeRef. The sweep must delete
    // it after the grace period (2 s in e2e): that is the controller looking hard at the cloud.
    const leak = await stack.cloud.create({
      name: `${ns}.leak`,
      type: "square",
      color: "white",
      tags: { owner: stack.ownerId, "k8s-uid": "no-such-uid", "k8s-name": `${ns}/leak` },
    });
    await waitFor("the sweep to delete the owned, unclaimed leak", async () => {
      expect(await stack.cloud.get(leak.id)).toBeUndefined();
    });
    const leakWrites = writesTo(await stack.cloud.requests(), leak.id);
    expect(leakWrites.map((r) => [r.method, r.status, r.clientId])).toEqual([["DELETE", 204, "controller"]]);

    // Every foreign shape is exactly as it was made, and the controller never wrote to any of them.
    const log = await stack.cloud.requests();
    for (const shape of foreign) {
      expect(await stack.cloud.get(shape.id), shape.name).toEqual(shape);
      expect(writesTo(log, shape.id), `writes to ${shape.name}`).toEqual([]);
    }
  });

  test("a foreign shape holding our deterministic name: the Shape reports NameConflict, the shape is untouched", async () => {
    const squatter = await stack.cloud.create({
      name: `${ns}.contested`,
      type: "circle",
      color: "orange",
      size: 12,
      tags: { owner: "someone-else", team: "billing" },
    });
    foreign.push(squatter);
    const seenBefore = (await controller.metrics()).sum(METRIC.foreignObjectsSeen);

    await stack.kube.applyShape(ns, "contested", { type: "square", color: "red" });

    const shape = await waitNameConflict(stack, ns, "contested");
    expect(conditionOf(shape, "Synced")?.message).toContain(squatter.id);
    expect(shape.status?.cloudId).toBeUndefined();

    const warnings = await waitFor("a Warning Event about the conflict", async () => {
      const events = (await stack.kube.eventsFor(ns, "contested")).filter((e) => e.reason === "NameConflict");
      expect(events).not.toEqual([]);
      return events;
    });
    expect(warnings.map((e) => e.type)).toEqual(["Warning"]);
    expect(warnings[0]?.message).toContain(`${ns}.contested`);
    expect((await controller.metrics()).sum(METRIC.foreignObjectsSeen)).toBeGreaterThan(seenBefore);

    // The squatter is exactly as it was; the only write the controller tried was its own create (409).
    expect(await stack.cloud.get(squatter.id)).toEqual(squatter);
    const log = await stack.cloud.requests();
    expect(writesTo(log, squatter.id)).toEqual([]);
    const refused = log.filter((r) => r.method === "POST" && r.clientId === "controller" && r.status !== 201);
    expect(refused).not.toEqual([]);
    expect(new Set(refused.map((r) => r.status))).toEqual(new Set([409]));
  });

  test("once the owner frees the name, a refresh lets the Shape create its own shape", async () => {
    const squatter = foreign.find((s) => s.name === `${ns}.contested`) as CloudShape;
    await stack.cloud.delete(squatter.id);
    foreign.splice(foreign.indexOf(squatter), 1);

    // The squatter's deletion is not in our change feed (not ours). The reconciler reads the name again
    // every 5 s and would take it on its own; the refresh annotation makes it look now.
    await stack.kube.annotateShape(ns, "contested", { "shapes.example.com/refresh": "1" });

    const { cloud } = await waitConverged(stack, ns, "contested");
    expect(cloud.id).not.toBe(squatter.id);
    expect(cloud).toMatchObject({ type: "square", color: "red" });
  });

  test("after all that, every foreign shape is still exactly as it was made", async () => {
    const log = await stack.cloud.requests();
    for (const shape of foreign) {
      expect(await stack.cloud.get(shape.id), shape.name).toEqual(shape);
      expect(writesTo(log, shape.id), `writes to ${shape.name}`).toEqual([]);
    }
  });

  test("the controller logged nothing unexpected (the conflict is its one error)", async () => {
    expect(await controller.problems({ allow: [/the name is held by/] })).toEqual([]);
  });
});

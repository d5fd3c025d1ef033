/**
 * Scenario: adoption on request (issue 30, ACK's convention). A cloud shape made by hand, with no owner tag,
 * holds the name a Shape maps to. The Shape carries `shapes.example.com/adoption-policy: adopt`: the shape
 * becomes ours in ONE write (a conditional PATCH that sets our owner tags and the spec's color together), and
 * follows the spec from then on — the same shape, never a second one. A shape another controller owns (owner
 * tag `cluster-b`) is never adopted: the Shape reports Synced=False `OwnedByAnother`, its message naming
 * `cluster-b`, and the shape stays exactly as it was. The cloud's request log shows exactly those writes:
 * one PATCH for the adoption, one for the spec change, none to the other owner's shape, and no create at all
 * (`adopt` never creates). The sweep, which deletes a shape of ours nothing claims, leaves the adopted one
 * alone: it carries a live Shape's uid.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ADOPTION_POLICY_ANNOTATION, fetchHistory, parseHistory, renderStory } from "@shapes/controller";
import {
  type CloudShape,
  conditionOf,
  type ControllerProcess,
  METRIC,
  type Stack,
  waitConverged,
  waitFor,
  writesTo,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

describe("adoption on request", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;
  const adopt = { [ADOPTION_POLICY_ANNOTATION]: "adopt" };

  beforeAll(async () => {
    stack = await startStack("adopt-on-request");
    ns = await stack.kube.createNamespace("adopt");
    controller = await stack.startController();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** The controller's writes in the cloud's request log: method and status, by path. */
  const controllerWrites = async () =>
    (await stack.cloud.requests())
      .filter((r) => r.clientId === "controller" && r.method !== "GET")
      .map((r) => `${r.method} ${r.path} ${r.status}`);

  test("an untagged shape of the Shape's name becomes ours in one write, and its color follows the spec", async () => {
    const handMade = await stack.cloud.create({ name: `${ns}.taken`, type: "square", color: "red" });
    expect(handMade.tags.owner, "no owner tag").toBeUndefined();

    await stack.kube.applyShape(ns, "taken", { type: "square", color: "blue" }, adopt);
    const { shape, cloud } = await waitConverged(stack, ns, "taken");
    expect(cloud.id, "the hand-made shape itself, adopted").toBe(handMade.id);
    expect(cloud.tags, "our owner tags").toMatchObject({
      owner: stack.ownerId,
      "k8s-uid": shape.metadata.uid,
    });
    expect(cloud.color, "the spec's color").toBe("blue");
    expect(await controllerWrites(), "exactly one write: the adopting PATCH").toEqual([
      `PATCH /v1/shapes/${encodeURIComponent(handMade.id)} 200`,
    ]);
    const adopted = await waitFor("a Normal AdoptedCloudShape event", async () => {
      const events = (await stack.kube.eventsFor(ns, "taken")).filter(
        (e) => e.reason === "AdoptedCloudShape",
      );
      expect(events).not.toEqual([]);
      return events;
    });
    expect(adopted.map((e) => e.type)).toEqual(["Normal"]);
    expect(adopted[0]?.message).toContain(ADOPTION_POLICY_ANNOTATION);
    // `npm run why` tells the decision.
    const story = renderStory(
      parseHistory(await fetchHistory(controller.url, { namespace: ns, name: "taken" })),
    );
    expect(story).toContain("adopt-on-request");
    expect(story).toContain("carries no owner tag");

    // Ours from then on: a spec change is one more PATCH of the same shape.
    await stack.kube.applyShape(ns, "taken", { type: "square", color: "green" }, adopt);
    const after = await waitConverged(stack, ns, "taken");
    expect(after.cloud.id).toBe(handMade.id);
    expect(
      writesTo(await stack.cloud.requests(), handMade.id).map((r) => [r.method, r.status, r.clientId]),
    ).toEqual([
      ["PATCH", 200, "controller"],
      ["PATCH", 200, "controller"],
    ]);
  });

  test("a shape another owner id holds is refused, the reason naming that owner; the shape is untouched", async () => {
    const held: CloudShape = await stack.cloud.create({
      name: `${ns}.held`,
      type: "circle",
      color: "orange",
      tags: { owner: "cluster-b", "k8s-uid": "theirs" },
    });

    await stack.kube.applyShape(ns, "held", { type: "circle", color: "blue" }, adopt);
    const shape = await waitFor("Shape held to report Synced=False OwnedByAnother", async () => {
      const s = await stack.kube.shape(ns, "held");
      expect(conditionOf(s, "Synced")).toMatchObject({ status: "False", reason: "OwnedByAnother" });
      return s;
    });
    expect(conditionOf(shape, "Synced")?.message).toContain('owner id "cluster-b"');
    expect(conditionOf(shape, "Ready")).toMatchObject({ status: "False", reason: "OwnedByAnother" });
    expect(shape.status?.cloudId).toBeUndefined();
    const warnings = await waitFor("a Warning OwnedByAnother event", async () => {
      const events = (await stack.kube.eventsFor(ns, "held")).filter((e) => e.reason === "OwnedByAnother");
      expect(events).not.toEqual([]);
      return events;
    });
    expect(warnings.map((e) => e.type)).toEqual(["Warning"]);

    // It looks again (the refresh: proof it looked is the reconcile counter) and still leaves it alone.
    const before = (await controller.metrics()).sum(METRIC.reconciles);
    await stack.kube.annotateShape(ns, "held", { "shapes.example.com/refresh": "1" });
    await waitFor("the controller to reconcile after the refresh", async () => {
      expect((await controller.metrics()).sum(METRIC.reconciles)).toBeGreaterThan(before);
    });
    expect(await stack.cloud.get(held.id), "the other owner's shape, as it was").toEqual(held);
    expect(writesTo(await stack.cloud.requests(), held.id), "writes to it").toEqual([]);
    // And no create at all: `adopt` never creates (the only writes are the first test's two PATCHes).
    expect((await controllerWrites()).filter((w) => w.startsWith("POST"))).toEqual([]);
  });

  test("the sweep leaves the adopted shape alone: it carries our owner tag and a live Shape's uid", async () => {
    // The control: a shape of ours that nothing claims. Once the sweep has deleted it, it has looked at
    // every shape of ours — the adopted one included.
    const leak = await stack.cloud.create({
      name: `${ns}.leak`,
      type: "square",
      color: "white",
      tags: { owner: stack.ownerId, "k8s-uid": "no-such-uid", "k8s-name": `${ns}/leak` },
    });
    await waitFor("the sweep to delete the unclaimed leak", async () => {
      expect(await stack.cloud.get(leak.id)).toBeUndefined();
    });
    const { cloud } = await waitConverged(stack, ns, "taken");
    expect(cloud.color, "the adopted shape, still there and ours").toBe("green");
  });

  test("the controller logged nothing unexpected (the refusal is its one warning)", async () => {
    expect(await controller.problems({ allow: [/another's object is never adopted/] })).toEqual([]);
  });
});

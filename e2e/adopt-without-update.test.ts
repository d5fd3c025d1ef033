/**
 * Scenario: adoption under management policies without `Update` (`["Observe", "Create", "Delete"]`). A
 * cloud shape of size 9 and color red holds the name of a Shape whose spec says size 1 and color blue. The
 * adoption is still the one PATCH that makes the shape ours, but it writes our owner tags ONLY: afterwards
 * the cloud shape carries our tags (and keeps its own) and every other field is as it was, size 9 and red;
 * the Shape reports Ready=True and Synced=True `DriftLeftAlone`, naming the difference, as for any shape of
 * ours without Update. Both adoptions: on request (an untagged shape, `adoption-policy: adopt`), and from an
 * earlier owner id of ours (`--adopt-owner-ids`, default `k8s`: a shape tagged `k8s` and the Shape's uid,
 * as the version before the per-cluster owner id left it).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ADOPTION_POLICY_ANNOTATION } from "@shapes/controller";
import {
  type CloudShape,
  conditionOf,
  type ControllerProcess,
  type Shape,
  type Stack,
  waitFor,
  writesTo,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

/** Every policy but Update. */
const NO_UPDATE = ["Observe", "Create", "Delete"] as const;
/** The controller's default `--adopt-owner-ids`: the owner id before the per-cluster one. */
const EARLIER_OWNER_ID = "k8s";

describe("adoption without Update writes the owner tags only", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("adopt-without-update");
    ns = await stack.kube.createNamespace("adopt-as-is");
    controller = await stack.startController();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /**
   * Waits until the Shape `name` has taken in its generation with Ready=True and Synced=True DriftLeftAlone,
   * and its cloud shape `id` carries our owner tags.
   */
  async function waitAdoptedAsIs(name: string, id: string): Promise<{ shape: Shape; cloud: CloudShape }> {
    return waitFor(`${ns}/${name} adopted, its difference from the spec left alone`, async () => {
      const shape = await stack.kube.shape(ns, name);
      expect(shape.status?.observedGeneration, "observedGeneration").toBe(shape.metadata.generation);
      expect(conditionOf(shape, "Ready"), "Ready").toMatchObject({ status: "True", reason: "Available" });
      expect(conditionOf(shape, "Synced"), "Synced").toMatchObject({
        status: "True",
        reason: "DriftLeftAlone",
      });
      const cloud = await stack.cloud.get(id);
      expect(cloud?.tags.owner, "our owner tag").toBe(stack.ownerId);
      return { shape, cloud: cloud as CloudShape };
    });
  }

  /** `before` with our three owner tags added and a later revision: nothing else moved. */
  function retagged(before: CloudShape, shape: Shape, name: string): unknown {
    return {
      ...before,
      tags: {
        ...before.tags,
        owner: stack.ownerId,
        "k8s-uid": shape.metadata.uid,
        "k8s-name": `${ns}/${name}`,
      },
      revision: expect.any(Number) as unknown,
      updatedAt: expect.any(String) as unknown,
    };
  }

  /** The reasons and messages of the Shape's AdoptedCloudShape events, once there is one. */
  async function adoptedEvents(name: string): Promise<string[]> {
    return waitFor(`a Normal AdoptedCloudShape event for ${ns}/${name}`, async () => {
      const events = (await stack.kube.eventsFor(ns, name)).filter((e) => e.reason === "AdoptedCloudShape");
      expect(events.map((e) => e.type)).toEqual(["Normal"]);
      return events.map((e) => e.message ?? "");
    });
  }

  test("on request: an untagged shape gets our tags in one PATCH, and keeps its size, color and own tags", async () => {
    const handMade = await stack.cloud.create({
      name: `${ns}.as-is`,
      type: "square",
      color: "red",
      size: 9,
      tags: { team: "blue" },
    });

    await stack.kube.applyShape(
      ns,
      "as-is",
      { type: "square", color: "blue", size: 1, managementPolicies: [...NO_UPDATE] },
      { [ADOPTION_POLICY_ANNOTATION]: "adopt" },
    );
    const { shape, cloud } = await waitAdoptedAsIs("as-is", handMade.id);
    expect(cloud, "the hand-made shape: our tags added, nothing else changed").toEqual(
      retagged(handMade, shape, "as-is"),
    );
    expect(cloud.size).toBe(9);
    const synced = conditionOf(shape, "Synced")?.message;
    expect(synced, "Synced names the difference").toContain('color: "red" → "blue"');
    expect(synced).toContain("size: 9 → 1");
    expect(synced).toContain("has no Update");
    expect(
      writesTo(await stack.cloud.requests(), handMade.id).map((r) => [r.method, r.status, r.clientId]),
      "one write: the adopting PATCH",
    ).toEqual([["PATCH", 200, "controller"]]);
    expect(await adoptedEvents("as-is")).toEqual([expect.stringContaining("nothing else written")]);
  });

  test("from the earlier owner id k8s: retagged to ours in one PATCH, its size and color as they were", async () => {
    // The version before: its Shape, and the cloud shape it made under the owner id `k8s`, while no
    // controller runs.
    await controller.stop();
    await stack.kube.applyShape(ns, "upgraded", {
      type: "circle",
      color: "blue",
      size: 1,
      managementPolicies: [...NO_UPDATE],
    });
    const { uid } = (await stack.kube.shape(ns, "upgraded")).metadata;
    const old = await stack.cloud.create({
      name: `${ns}.upgraded`,
      type: "circle",
      color: "red",
      size: 9,
      tags: { owner: EARLIER_OWNER_ID, "k8s-uid": uid, "k8s-name": `${ns}/upgraded` },
    });

    // The upgrade: a controller with the default --adopt-owner-ids.
    await controller.start();
    const { shape, cloud } = await waitAdoptedAsIs("upgraded", old.id);
    expect(cloud, "the old shape: our owner tag, nothing else changed").toEqual(
      retagged(old, shape, "upgraded"),
    );
    expect(conditionOf(shape, "Synced")?.message).toContain("size: 9 → 1");
    expect(
      writesTo(await stack.cloud.requests(), old.id).map((r) => [r.method, r.status, r.clientId]),
      "one write: the adopting PATCH",
    ).toEqual([["PATCH", 200, "controller"]]);
    expect(await adoptedEvents("upgraded")).toEqual([
      expect.stringMatching(/retagged from owner "k8s" to ours, nothing else written/),
    ]);
  });

  test("the controller logged nothing unexpected", async () => {
    expect(await controller.problems(), "both runs' logs").toEqual([]);
  });
});

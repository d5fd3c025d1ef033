import { describe, expect, it } from "vitest";
import type { Shape, ShapeRef } from "../controller/src/shapes/api.ts";
import { cloudName, conditions, describeCloud, describeRef, STEPS } from "./tour-steps.ts";

describe("the tour's steps", () => {
  it("follow the story, one scenario each", () => {
    expect(STEPS.map((s) => s.title)).toEqual([
      "Create a Shape",
      "Drift is repaired",
      "Deleted in the cloud, created again",
      "A foreign shape is left alone, even under our name",
      "Delete through the finalizer",
      "A missed deletion is caught by the ShapeRef",
      "Two clusters, one cloud",
    ]);
    for (const step of STEPS) expect(step.story.length).toBeGreaterThan(100);
  });

  it("name cloud shapes the way the controller does: <namespace>.<name>", () => {
    expect(cloudName({ namespace: "tour-1a2b3c" }, "red-square")).toBe("tour-1a2b3c.red-square");
  });

  it("describe the evidence in one line each", () => {
    expect(
      describeCloud({
        id: "shp_1",
        name: "ns.sq",
        type: "square",
        color: "red",
        tags: { owner: "k8s", "k8s-uid": "u" },
        revision: 7,
        createdAt: "2026-01-01T00:00:00Z",
        updatedAt: "2026-01-01T00:00:00Z",
      }),
    ).toBe("ns.sq: square red, id shp_1, revision 7, tags owner=k8s k8s-uid=u");

    const ref = {
      metadata: { name: "ns.sq" },
      spec: { shape: { namespace: "ns", name: "sq", uid: "u" }, cloudName: "ns.sq" },
      status: { phase: "Created", cloudId: "shp_1" },
    } as ShapeRef;
    expect(describeRef(ref)).toBe("ns.sq: phase Created, cloudId shp_1, for Shape ns/sq (uid u)");

    const condition = (type: string, status: "True" | "False", reason: string, message = "") => ({
      type,
      status,
      reason,
      message,
      lastTransitionTime: "2026-01-01T00:00:00Z",
    });
    const ok = {
      status: {
        conditions: [
          condition("Ready", "True", "Available"),
          condition("Synced", "True", "ReconcileSuccess"),
        ],
      },
    } as Shape;
    expect(conditions(ok)).toBe("Ready=True (Available), Synced=True (ReconcileSuccess)");
    const conflict = {
      status: {
        conditions: [condition("Synced", "False", "NameConflict", "cannot create: the name is held")],
      },
    } as Shape;
    expect(conditions(conflict)).toBe(
      "Ready=?, Synced=False (NameConflict): cannot create: the name is held",
    );
  });
});

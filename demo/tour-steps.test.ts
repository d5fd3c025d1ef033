import { describe, expect, it } from "vitest";
import type { Shape, ShapeRef } from "@shapes/controller";
import type { TourMoment } from "./control.ts";
import { Narrator } from "./narrator.ts";
import { runSteps, type StepsContext } from "./tour.ts";
import {
  cloudName,
  conditions,
  describeCloud,
  describeRef,
  STEPS,
  type TourContext,
  type TourStep,
} from "./tour-steps.ts";

describe("the tour's steps", () => {
  it("follow the story, one scenario each", () => {
    expect(STEPS.map((s) => s.title)).toEqual([
      "Create a Shape",
      "Drift is repaired",
      "Deleted in the cloud, created again",
      "A foreign shape is left alone, even under our name",
      "Delete through the finalizer",
      "A missed deletion is caught by the ShapeRef",
      "A crash right after the create",
      "Down for a while: the startup resync catches up",
      "Two clusters, one cloud",
      "Bring an existing shape in: observe it, or adopt it",
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

    // As the controller leaves a ShapeRef: created before the create, never given a status.
    const ref = {
      metadata: { name: "ns.sq" },
      spec: { shape: { namespace: "ns", name: "sq", uid: "u" }, cloudName: "ns.sq" },
    } as ShapeRef;
    expect(describeRef(ref)).toBe("ns.sq: for Shape ns/sq (uid u); no status: a cloud shape may exist");
    // From an older controller, which wrote a status: its phase and the cloud id.
    const recorded = { ...ref, status: { phase: "Created", cloudId: "shp_1" } } as ShapeRef;
    expect(describeRef(recorded)).toBe("ns.sq: for Shape ns/sq (uid u); phase Created, cloudId shp_1");

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

describe("running the steps", () => {
  /** Three steps: the first shows a moment, the second shows one and fails, the third would show one. */
  function scenario(events: string[]): TourStep[] {
    return [
      {
        title: "One",
        story: "the first",
        async run(ctx) {
          await ctx.show("first", { shapes: ["a"] });
          events.push("the step goes on");
        },
      },
      {
        title: "Two",
        story: "the second",
        async run(ctx) {
          await ctx.show("second", { cloudNames: ["tour-1.b"] });
          throw new Error("cannot go on");
        },
      },
      {
        title: "Three",
        story: "the third",
        async run(ctx) {
          await ctx.show("third");
        },
      },
    ];
  }
  const base = (): StepsContext => ({ namespace: "tour-1", n: new Narrator(() => {}) }) as StepsContext;

  it("makes each moment of the step under way, awaits the hook, and stops at the first failure", async () => {
    const events: string[] = [];
    const moments: TourMoment[] = [];
    const ctx = base();
    const result = await runSteps(ctx, scenario(events), {
      onMoment: async (moment) => {
        await new Promise((resolve) => setImmediate(resolve)); // a screenshot takes a while
        moments.push(moment);
        events.push(`moment ${moment.step}: ${moment.caption}`);
      },
      beforeStep: async (index) => {
        await Promise.resolve();
        events.push(`before step ${index + 1}`);
      },
      write: () => {},
    });

    expect(result.passed).toBe(1);
    expect(result.failure?.message).toBe("cannot go on");
    expect(events).toEqual(["moment 1: first", "the step goes on", "before step 2", "moment 2: second"]);
    expect(moments).toEqual([
      {
        step: 1,
        steps: 3,
        title: "One",
        caption: "first",
        namespace: "tour-1",
        shapes: ["a"],
        cloudNames: [],
      },
      {
        step: 2,
        steps: 3,
        title: "Two",
        caption: "second",
        namespace: "tour-1",
        shapes: [],
        cloudNames: ["tour-1.b"],
      },
    ]);
    // The context the steps had is the caller's; outside a step it shows nothing.
    await (ctx as TourContext).show("after the tour");
    expect(moments).toHaveLength(2);
  });

  it("numbers a chosen step as in the whole tour", async () => {
    const moments: TourMoment[] = [];
    const result = await runSteps(base(), scenario([]), {
      chosen: [2],
      onMoment: (moment) => {
        moments.push(moment);
        return Promise.resolve();
      },
      write: () => {},
    });
    expect(result).toEqual({ passed: 1, failure: undefined });
    expect(moments.map((m) => [m.step, m.steps, m.title])).toEqual([[3, 3, "Three"]]);
  });
});

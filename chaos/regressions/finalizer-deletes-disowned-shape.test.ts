/**
 * Regression test, found by e2e/fuzz-controller-inputs.test.ts ("a ShapeRef edited by hand to point at
 * the foreign shape that holds its Shape's name: deleting the Shape leaves it"), and again by `npm run
 * chaos -- --seed 23 --trials 2 --topology single --faults cloud-list-lag --duration 60s` (trial 1: a shape
 * a person disowned was deleted with its Shape). It failed against the controller as of commit 160fbee;
 * fixed by 94ac140.
 *
 * The bug: deleting a Shape (deletionPolicy Delete) deletes whatever cloud shape its ShapeRef's
 * `status.cloudId` names, even when that shape does not carry our owner tag. Two ways to get there:
 * - a ShapeRef whose status was edited by hand (or by another tool) to the id of a foreign shape, e.g. the
 *   one holding the Shape's name in a NameConflict;
 * - a cloud shape we created, then "disowned" by a person who removed our owner tag in the console (the
 *   controller itself then treats it as foreign: NameConflict), and later the Shape is deleted.
 *
 * Root cause: `ShapeReconciler.#finalize` (controller/src/shapes/shape-reconciler.ts at 160fbee) took the id from
 * the owner-filtered cache, else from `ref.status.cloudId` ("the cache may trail a create we just made"),
 * and deleted it unconditionally (no If-Match, no look at the tags). A shape the owner-filtered cache does
 * not show is either not created yet, or not ours. The fix (94ac140): the recorded id is read live and used
 * only when it carries our owner tag and the Shape's uid; the delete is guarded by the revision read.
 * Today the finalizer is the external-resource library's (`finalize` of `ExternalResourceReconciler`,
 * library/src/reconcile/finalize.ts), and the lookup is `findOwned` (ownership.ts): by
 * name, live, taken only with our owner mark and the uid.
 */
import { describe, expect, it } from "vitest";
import { ExternalResourceReconciler } from "reconcile-kit";
import { FINALIZER, type ShapeRef } from "@shapes/controller";
import { aCloudShape, aShape, FakeWorld } from "@shapes/controller/testing";

const refPointingAt = (cloudId: string): ShapeRef => ({
  metadata: { name: "default.foo" },
  spec: { shape: { namespace: "default", name: "foo", uid: "uid-foo" }, cloudName: "default.foo" },
  status: { phase: "Created", cloudId },
});

describe("regression: finalizing a Shape never deletes a cloud shape that is not ours", () => {
  it.each<{ reason: string; tags: Record<string, string> }>([
    {
      reason: "the foreign shape holding the Shape's name, recorded in the ShapeRef by hand",
      tags: { owner: "someone-else" },
    },
    {
      reason: "our former cloud shape, disowned in the console (owner tag removed)",
      tags: { "k8s-uid": "uid-foo", "k8s-name": "default/foo" },
    },
  ])("$reason", async ({ tags }) => {
    const world = new FakeWorld();
    world.shapes.set("default/foo", aShape({ finalizers: [FINALIZER], deleting: true }));
    world.shapeRefs.set("default.foo", refPointingAt("c1"));
    world.cloud.set("c1", aCloudShape({ name: "default.foo", id: "c1", tags }));

    await new ExternalResourceReconciler(world.deps()).reconcile("default/foo", new AbortController().signal);

    expect(world.calls).not.toContain("cloud.delete c1");
    expect(world.cloud.get("c1")?.tags, "the shape is still there, as it was").toEqual(tags);
  });
});

/**
 * Regression test, found by `npm run chaos -- --seed 23 --trials 2 --topology single --faults
 * cloud-list-lag --duration 60s` (trial 2: `orphan-kept` violated twice). It failed against the controller
 * as of commit 160fbee; fixed by 94ac140.
 *
 * The bug: a Shape with `deletionPolicy: Orphan`, deleted while the controller's cloud cache does not show
 * its cloud shape yet (it was created a moment ago; the list-watch trails), is let go without the cloud
 * shape being orphaned: our owner tags stay on it, the ShapeRef is deleted, the finalizer removed. A few
 * seconds later the cloud sweep finds an owned shape nothing claims and deletes it — the very shape the
 * user asked to keep. In the chaos run: created, deleted 252 ms later with a 672 ms list lag, swept 5.6 s
 * after ("removed a leaked cloud shape nothing claims").
 *
 * Root cause: `ShapeReconciler.#finalize` (controller/src/shapes/shape-reconciler.ts at 160fbee) orphans only the
 * `observed` shape (from the cache); with policy Delete it falls back to the id the ShapeRef recorded
 * ("the cache may trail a create we just made"), with policy Orphan it does not, and proceeds as if there
 * were nothing to orphan. The fix (94ac140): when the cache does not show the shape but the ShapeRef
 * recorded an id, read it live and, if it carries our owner tag and the Shape's uid, strip the tags.
 * Today the finalizer is the external-resource library's (`finalize` of `ExternalResourceReconciler`,
 * library/src/reconcile/finalize.ts): a cache miss is followed by a live read by name
 * (`findOwned`, ownership.ts), whatever the policy.
 */
import { describe, expect, it } from "vitest";
import { ExternalResourceReconciler } from "reconcile-kit";
import { FINALIZER } from "@shapes/controller";
import { aCloudShape, aShape, FakeWorld } from "@shapes/controller/testing";

describe("regression: an Orphan Shape deleted while the cache trails its cloud shape", () => {
  it("never lets go of the Shape while the cloud shape still carries our owner tags", async () => {
    const world = new FakeWorld();
    world.shapes.set(
      "default/foo",
      aShape({ finalizers: [FINALIZER], deleting: true, spec: { deletionPolicy: "Orphan" } }),
    );
    world.shapeRefs.set("default.foo", {
      metadata: { name: "default.foo" },
      spec: { shape: { namespace: "default", name: "foo", uid: "uid-foo" }, cloudName: "default.foo" },
      status: { phase: "Created", cloudId: "c1" },
    });
    world.cloud.set(
      "c1",
      aCloudShape({
        name: "default.foo",
        id: "c1",
        tags: { owner: "k8s", "k8s-uid": "uid-foo", "k8s-name": "default/foo", team: "x" },
      }),
    );
    world.hiddenFromCache.add("c1"); // created a moment ago: the list-watch has not shown it yet

    await new ExternalResourceReconciler(world.deps()).reconcile("default/foo", new AbortController().signal);

    expect(world.cloud.has("c1"), "the cloud shape is kept").toBe(true);
    const letGo = !world.shapes.get("default/foo")?.metadata.finalizers?.includes(FINALIZER);
    if (letGo) {
      // Let go: then it must be orphaned already (or the cloud sweep will delete it as a leak).
      expect(world.cloud.get("c1")?.tags, "our owner tags are gone, foreign ones kept").toEqual({
        team: "x",
      });
    }
  });
});

/**
 * Regression test, found by reading the code (issue 11, "the sweep's other hole"). It fails against the
 * controller as of commit ab4137e; fixed by reading the cloud shape by name, live, when the cache misses it.
 *
 * The bug: the controller created a cloud shape for a Shape with `deletionPolicy: Orphan`, then crashed before
 * recording the create (its ShapeRef still `Pending`, no cloud id). While it was down, the Shape was deleted
 * and its finalizer stripped by hand. At restart the cloud's list lags (the `listLagMs` fault; any eventually
 * consistent listing): the cache does not show the shape yet. The ShapeRef reconciler looked in the cache,
 * had no id to read, concluded "nothing to orphan" and deleted the ShapeRef — the only record of the policy.
 * When the list caught up, the sweep saw an owned shape that nothing claims and deleted it: the very shape
 * the user asked to keep.
 *
 * Root cause: `ShapeRefReconciler.#findCloudShape` (controller/src/shapes/shaperef-reconciler.ts at
 * ab4137e) trusted a cache miss as absence when the ShapeRef recorded no id. The fix: a cache miss is
 * followed by a live read BY NAME (`GET /v1/shapes/by-name/{name}`, a consistent point read that no list
 * lag delays), so a Pending record finds its shape. One lookup, `findOwnedCloudShape` (then in
 * controller/src/shapes/shape-reconciler.ts), served the ShapeRef reconciler and the finalizer alike.
 * Today both are the external-resource library's (`IntentReconciler`, `Sweep`, the finalizer `finalize` of
 * `ExternalResourceReconciler`: library/src/reconcile/), and the lookup is `findOwned` (ownership.ts).
 */
import { describe, expect, it } from "vitest";
import { IntentReconciler, Sweep } from "reconcile-kit";
import type { ShapeRef } from "@shapes/controller";
import { aCloudShape, FakeWorld } from "@shapes/controller/testing";

describe("regression: an Orphan Shape with a Pending ShapeRef, deleted while the controller was down, and a lagging list", () => {
  it("keeps the cloud shape (let go, our tags stripped): the sweep finds nothing of ours to delete", async () => {
    const signal = new AbortController().signal;
    const world = new FakeWorld();
    const pending: ShapeRef = {
      metadata: { name: "default.foo" },
      spec: {
        shape: { namespace: "default", name: "foo", uid: "uid-foo" },
        cloudName: "default.foo",
        deletionPolicy: "Orphan",
      },
      // no status: Pending, no cloud id (the crash came before an older version's phase write; today
      // every ShapeRef stays so, which makes this path the common one)
    };
    world.shapeRefs.set("default.foo", pending);
    world.cloud.set(
      "c1",
      aCloudShape({
        name: "default.foo",
        id: "c1",
        tags: { owner: "k8s", "k8s-uid": "uid-foo", "k8s-name": "default/foo", team: "x" },
      }),
    );
    world.hiddenFromCache.add("c1"); // the list lags: the cache does not show it yet

    await new IntentReconciler(world.deps()).reconcile("default.foo", signal);

    // The list catches up; then the sweep looks at every owned shape it shows.
    world.hiddenFromCache.delete("c1");
    await new Sweep({ ...world.deps(), graceMs: 0 }).reconcile("default.foo", signal);

    expect(world.cloud.has("c1"), "the cloud shape the Orphan policy keeps").toBe(true);
    expect(world.cloud.get("c1")?.tags, "let go: our owner tags gone, foreign ones kept").toEqual({
      team: "x",
    });
    expect(world.shapeRefs.has("default.foo"), "the record is done with").toBe(false);
    expect(
      world.calls.filter((c) => c.startsWith("cloud.delete")),
      "no cloud DELETE",
    ).toEqual([]);
  });
});

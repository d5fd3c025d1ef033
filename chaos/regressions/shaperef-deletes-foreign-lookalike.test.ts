/**
 * Regression test, found by e2e/fuzz-controller-inputs.test.ts ("a hand-made ShapeRef pointing at a
 * foreign shape never gets it deleted"). It failed against the controller as of commit 160fbee; fixed by
 * 94ac140.
 *
 * The bug: a dangling ShapeRef whose recorded cloud id points at a shape that is NOT ours (another `owner`
 * tag) gets that shape deleted, as long as the shape carries the ShapeRef's uid in a `k8s-uid` tag.
 *
 * Root cause: `ShapeRefReconciler.#findCloudShape` (controller/src/shapes/shaperef-reconciler.ts at
 * 160fbee) reads the shape by `status.cloudId` when the owner-filtered cache does not have it, and accepts it when
 * `tags["k8s-uid"]` matches, without checking `tags.owner` is our owner id. A `k8s-uid` tag alone proves
 * nothing: anyone can copy it (a clone made in the console keeps the tags, another tool may use the same
 * tag name). Ownership is only the owner tag AND the uid (`isOwnedBy`, today in
 * library/src/reconcile/ownership.ts).
 *
 * The fix (94ac140): take the shape read by id only when both our owner tag and the uid are on it.
 * Today the ShapeRef reconciler is the external-resource library's `IntentReconciler`
 * (library/src/reconcile/intent-reconciler.ts), and the lookup `findOwned` (ownership.ts).
 */
import { describe, expect, it } from "vitest";
import { IntentReconciler } from "reconcile-kit";
import type { ShapeRef } from "@shapes/controller";
import { aCloudShape, FakeWorld } from "@shapes/controller/testing";

const danglingRef = (uid: string, cloudId: string): ShapeRef => ({
  metadata: { name: "default.foo" },
  spec: { shape: { namespace: "default", name: "foo", uid }, cloudName: "default.foo" },
  status: { phase: "Created", cloudId },
});

describe("regression: a dangling ShapeRef never deletes a foreign shape", () => {
  it.each<{ reason: string; tags: Record<string, string> }>([
    {
      reason: "another owner, with a copied k8s-uid tag",
      tags: { owner: "someone-else", "k8s-uid": "uid-foo", "k8s-name": "default/foo" },
    },
    { reason: "no owner tag at all, with a copied k8s-uid tag", tags: { "k8s-uid": "uid-foo" } },
    { reason: "an owner that only looks like ours", tags: { owner: "K8S", "k8s-uid": "uid-foo" } },
  ])("$reason", async ({ tags }) => {
    const world = new FakeWorld();
    world.shapeRefs.set("default.foo", danglingRef("uid-foo", "f1"));
    world.cloud.set("f1", aCloudShape({ name: "default.foo", id: "f1", tags }));

    await new IntentReconciler(world.deps()).reconcile("default.foo", new AbortController().signal);

    // Reads are fine (by id then, by name since issue 11); no write of any kind.
    const reads = ["cloud.get f1", "cloud.getByName default.foo"];
    expect(world.calls.filter((c) => c.startsWith("cloud.") && !reads.includes(c))).toEqual([]);
    expect(world.cloud.has("f1"), "the foreign shape is still there").toBe(true);
  });
});

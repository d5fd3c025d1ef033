import { describe, expect, it } from "vitest";
import type { Shape } from "./api.ts";
import { onCloudEvent, onShapeEvent, onShapeUpdate, type ShapeQueues } from "./handlers.ts";
import { aCloudShape, aShape } from "./testing.ts";

function recorder(): ShapeQueues & { keys: string[] } {
  const keys: string[] = [];
  const q = (name: string) => ({ enqueue: (key: string) => keys.push(`${name}:${key}`) });
  return { keys, shapes: q("shapes"), shapeRefs: q("shapeRefs"), sweep: q("sweep") };
}

describe("handlers", () => {
  it.each<{ reason: string; name: string; tags: Record<string, string>; keys: string[] }>([
    {
      reason: "our cloud shape enqueues its Shape (by the deterministic name) and the sweep",
      name: "default.foo",
      tags: { "k8s-name": "default/foo" },
      keys: ["shapes:default/foo", "sweep:default.foo"],
    },
    {
      reason: "no k8s-name tag: the name alone leads to the Shape",
      name: "default.foo",
      tags: {},
      keys: ["shapes:default/foo", "sweep:default.foo"],
    },
    {
      reason:
        "regression: a k8s-name tag rewritten in the cloud (drift to repair) still enqueues the Shape the name belongs to",
      name: "default.foo",
      tags: { "k8s-name": "someone/else" },
      keys: ["shapes:default/foo", "sweep:default.foo"],
    },
    {
      reason: "a hostile tag cannot point the controller at another namespace's Shape",
      name: "default.foo",
      tags: { "k8s-name": "kube-system/secret" },
      keys: ["shapes:default/foo", "sweep:default.foo"],
    },
    {
      reason: "a Shape name with dots: namespaces hold none, so the first dot splits",
      name: "team-a.web.v2",
      tags: {},
      keys: ["shapes:team-a/web.v2", "sweep:team-a.web.v2"],
    },
    {
      reason: "a name with no dot cannot be a Shape's: only the sweep looks",
      name: "nodot",
      tags: { "k8s-name": "default/nodot" },
      keys: ["sweep:nodot"],
    },
    { reason: "an empty namespace part is no Shape's", name: ".foo", tags: {}, keys: ["sweep:.foo"] },
    { reason: "an empty name part is no Shape's", name: "default.", tags: {}, keys: ["sweep:default."] },
  ])("cloud event: $reason", ({ name, tags, keys }) => {
    const q = recorder();
    onCloudEvent(q, aCloudShape({ name, tags }));
    expect(q.keys).toEqual(keys);
  });

  const base = aShape({ finalizers: ["shapes.example.com/cloud-shape"], annotations: { team: "a" } });
  const changed = (meta: Partial<Shape["metadata"]>, rest: Partial<Shape> = {}): Shape => ({
    ...base,
    ...rest,
    metadata: { ...base.metadata, resourceVersion: "101", ...meta },
  });
  it.each<{ reason: string; next: Shape; keys: string[] }>([
    {
      reason:
        "regression: a status-only update (our own write echoing back) is no reason to reconcile, or a failing Shape would be retried at once, ignoring its backoff and the cloud's Retry-After",
      next: changed({}, { status: { conditions: [], observedGeneration: 1 } }),
      keys: [],
    },
    {
      reason: "a spec change (new generation) is reconciled",
      next: changed({ generation: 2 }),
      keys: ["shapes:default/foo"],
    },
    {
      reason: "a new refresh annotation forces a reconcile",
      next: changed({ annotations: { team: "a", "shapes.example.com/refresh": "1" } }),
      keys: ["shapes:default/foo"],
    },
    {
      reason: "pausing or unpausing is reconciled (the condition must say so)",
      next: changed({ annotations: { team: "a", "shapes.example.com/paused": "true" } }),
      keys: ["shapes:default/foo"],
    },
    {
      reason: "a finalizer stripped by hand is reconciled (put back, or the deletion handled)",
      next: changed({ finalizers: [] }),
      keys: ["shapes:default/foo"],
    },
    {
      reason: "a deletion (deletionTimestamp set) is reconciled",
      next: changed({ deletionTimestamp: new Date("2026-01-01T00:00:00Z") }),
      keys: ["shapes:default/foo"],
    },
  ])("Shape update: $reason", ({ next, keys }) => {
    const q = recorder();
    onShapeUpdate(q, base, next);
    expect(q.keys).toEqual(keys);
  });

  it("a deleted Shape also asks the ShapeRef reconciler to look for a leak", () => {
    const q = recorder();
    onShapeEvent(q, aShape(), true);
    expect(q.keys).toEqual(["shapes:default/foo", "shapeRefs:default.foo"]);
  });
});

import { describe, expect, it } from "vitest";
import { onCloudEvent, onShapeEvent, type ShapeQueues } from "./handlers.ts";
import { aCloudShape, aShape } from "./testing.ts";

function recorder(): ShapeQueues & { keys: string[] } {
  const keys: string[] = [];
  const q = (name: string) => ({ enqueue: (key: string) => keys.push(`${name}:${key}`) });
  return { keys, shapes: q("shapes"), shapeRefs: q("shapeRefs"), sweep: q("sweep") };
}

describe("handlers", () => {
  it.each<{ reason: string; tags: Record<string, string>; keys: string[] }>([
    {
      reason: "a well-formed owner tag enqueues its Shape and the sweep",
      tags: { "k8s-name": "default/foo" },
      keys: ["shapes:default/foo", "sweep:default.foo"],
    },
    { reason: "no owner name tag: only the sweep looks", tags: {}, keys: ["sweep:default.foo"] },
    {
      reason: "a tag that does not match the cloud name (hostile or stale) does not point at a Shape",
      tags: { "k8s-name": "kube-system/secret" },
      keys: ["sweep:default.foo"],
    },
    { reason: "garbage without a slash", tags: { "k8s-name": "/" }, keys: ["sweep:default.foo"] },
  ])("cloud event: $reason", ({ tags, keys }) => {
    const q = recorder();
    onCloudEvent(q, aCloudShape({ name: "default.foo", tags }));
    expect(q.keys).toEqual(keys);
  });

  it("a deleted Shape also asks the ShapeRef reconciler to look for a leak", () => {
    const q = recorder();
    onShapeEvent(q, aShape(), true);
    expect(q.keys).toEqual(["shapes:default/foo", "shapeRefs:default.foo"]);
  });
});

/**
 * Which Shape a cloud shape's event reconciles. The library's handler (core/external-resource/controllers.ts)
 * enqueues `resourceOf(nameOf(shape))`, when there is one, and the sweep for every owned shape; what leads
 * from a cloud shape to its Shape is the plugin's, tested here: the deterministic name, never a tag.
 */
import { describe, expect, it } from "vitest";
import { aCloudShape, FakeWorld } from "./testing.ts";

describe("shapesPlugin: the Shape a cloud shape's event reconciles", () => {
  const { plugin } = new FakeWorld();
  const shapeKeyOf = (name: string, tags: Record<string, string>): string | undefined => {
    const owner = plugin.resource.resourceOf(plugin.external.nameOf(aCloudShape({ name, tags })));
    return owner && `${owner.namespace}/${owner.name}`;
  };

  it.each<{ reason: string; name: string; tags: Record<string, string>; shape: string | undefined }>([
    {
      reason: "our cloud shape leads to its Shape by the deterministic name",
      name: "default.foo",
      tags: { "k8s-name": "default/foo" },
      shape: "default/foo",
    },
    {
      reason: "no k8s-name tag: the name alone leads to the Shape",
      name: "default.foo",
      tags: {},
      shape: "default/foo",
    },
    {
      reason:
        "regression: a k8s-name tag rewritten in the cloud (drift to repair) still leads to the Shape the name belongs to",
      name: "default.foo",
      tags: { "k8s-name": "someone/else" },
      shape: "default/foo",
    },
    {
      reason: "a hostile tag cannot point the controller at another namespace's Shape",
      name: "default.foo",
      tags: { "k8s-name": "kube-system/secret" },
      shape: "default/foo",
    },
    {
      reason: "a Shape name with dots: namespaces hold none, so the first dot splits",
      name: "team-a.web.v2",
      tags: {},
      shape: "team-a/web.v2",
    },
    {
      reason: "a name with no dot cannot be a Shape's: only the sweep looks",
      name: "nodot",
      tags: { "k8s-name": "default/nodot" },
      shape: undefined,
    },
    { reason: "an empty namespace part is no Shape's", name: ".foo", tags: {}, shape: undefined },
    { reason: "an empty name part is no Shape's", name: "default.", tags: {}, shape: undefined },
  ])("$reason", ({ name, tags, shape }) => {
    expect(shapeKeyOf(name, tags)).toBe(shape);
  });

  it("the external name of a Shape maps back to it (the inverse the handlers rely on)", () => {
    const name = plugin.resource.externalNameOf("team-a", "web.v2");
    expect(name).toBe("team-a.web.v2");
    expect(plugin.resource.resourceOf(name)).toEqual({ namespace: "team-a", name: "web.v2" });
  });
});

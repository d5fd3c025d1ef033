/**
 * Which Shape a cloud shape's event reconciles. The library's handler (library/src/controllers.ts)
 * enqueues `resourceOf(nameOf(shape))`, when there is one, and the sweep for every owned shape; what leads
 * from a cloud shape to its Shape is the plugin's, tested here: the deterministic name, never a tag. And the
 * plugin's list-watch, against the REAL mock cloud over HTTP: only our shapes, page by page, and 410 → relist.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningCloud, startCloud } from "@shapes/mock-cloud";
import { GoneError } from "reconcile-kit";
import { CloudClient } from "./cloud/client.ts";
import { ownedShapesListWatch } from "./plugin.ts";
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

describe("ownedShapesListWatch against the mock cloud", () => {
  let cloud: RunningCloud;
  let client: CloudClient;
  beforeAll(async () => {
    cloud = await startCloud({ token: "secret", heartbeatMs: 200 });
    client = new CloudClient({ baseUrl: cloud.url, token: "secret" });
  });
  afterAll(() => cloud.close());

  it("lists only owned shapes, page by page, then watches from the listing's revision", async () => {
    for (let i = 0; i < 5; i++)
      await client.create({ name: `ns.own-${i}`, type: "square", color: "red", tags: { owner: "me" } });
    await client.create({ name: "ns.foreign", type: "square", color: "red", tags: { owner: "them" } });
    const lw = ownedShapesListWatch(client, "me", 2);
    const signal = new AbortController().signal;
    const names: string[] = [];
    let token: string | undefined;
    let revision: number | string | undefined;
    do {
      const page = await lw.list(token, signal);
      revision ??= page.revision;
      names.push(...page.items.map((s) => s.name));
      token = page.nextPageToken || undefined;
    } while (token);
    expect(names.sort()).toEqual(["ns.own-0", "ns.own-1", "ns.own-2", "ns.own-3", "ns.own-4"]);

    const seen: string[] = [];
    const abort = new AbortController();
    const watching = lw.watch(
      revision ?? 0,
      (e) => {
        seen.push(`${e.type} ${e.object.name}`);
        if (seen.length === 2) abort.abort();
      },
      abort.signal,
    );
    const own = await client.create({
      name: "ns.own-new",
      type: "square",
      color: "red",
      tags: { owner: "me" },
    });
    await client.create({ name: "ns.foreign-new", type: "square", color: "red", tags: { owner: "them" } });
    await client.patch(own.id, { tags: { owner: null } });
    await watching;
    // The foreign shape is never seen; ours leaving the filter arrives as DELETED.
    expect(seen).toEqual(["ADDED ns.own-new", "DELETED ns.own-new"]);
  });

  it("turns a watch from a revision older than the cloud's history into GoneError, so the informer relists", async () => {
    const small = await startCloud({ token: "t", historyLimit: 2 });
    try {
      const c = new CloudClient({ baseUrl: small.url, token: "t" });
      for (let i = 0; i < 5; i++)
        await c.create({ name: `ns.s${i}`, type: "square", color: "red", tags: { owner: "me" } });
      const err = await ownedShapesListWatch(c, "me")
        .watch(0, () => undefined, new AbortController().signal)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GoneError);
    } finally {
      await small.close();
    }
  });
});

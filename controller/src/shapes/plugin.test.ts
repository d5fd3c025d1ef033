/**
 * Which Shape a cloud shape's event reconciles. The library's handler (library/src/controllers.ts)
 * enqueues `resourceOf(nameOf(shape))`, when there is one, and the sweep for every owned shape; what leads
 * from a cloud shape to its Shape is the plugin's, tested here: the deterministic name, never a tag. And the
 * plugin's list-watch, against the REAL mock cloud over HTTP: only our shapes, page by page, and 410 → relist.
 * And how the plugin's client reads the cloud's real answers (`classify`): a spec the cloud refuses for good
 * (422, its size limit per type) is "rejected", so the library stops retrying it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningCloud, startCloud } from "@shapes/mock-cloud";
import { type ExternalFailure, GoneError } from "reconcile-kit";
import { CloudClient, type CloudShape } from "./cloud/client.ts";
import { cloudShapesClient, ownedShapesListWatch } from "./plugin.ts";
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

  it.each<{ reason: string; shape: CloudShape; atProvider: Record<string, unknown> }>([
    {
      reason: "another owner's shape: what it is, and whose",
      shape: aCloudShape({ name: "default.a", id: "c1", size: 40, tags: { owner: "team-b", team: "x" } }),
      atProvider: { id: "c1", type: "square", color: "red", size: 40, owner: "team-b" },
    },
    {
      reason: "an untagged shape without a size: no owner, no size",
      shape: aCloudShape({ name: "default.b", id: "c2" }),
      atProvider: { id: "c2", type: "square", color: "red" },
    },
  ])("status.atProvider, $reason", ({ shape, atProvider }) => {
    expect(plugin.external.atProvider?.(shape)).toEqual(atProvider);
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

describe("cloudShapesClient.classify: the cloud's real answers", () => {
  let cloud: RunningCloud;
  let client: CloudClient;
  beforeAll(async () => {
    cloud = await startCloud({ token: "secret" });
    client = new CloudClient({ baseUrl: cloud.url, token: "secret" });
  });
  afterAll(() => cloud.close());
  const shapes = () => cloudShapesClient(client);
  const signal = () => AbortSignal.timeout(10_000);
  const desired = (name: string, fields: Record<string, unknown>) => ({
    name,
    fields: { type: "square", color: "red", size: null, tags: {}, ...fields },
  });

  it.each<{ reason: string; fail: () => Promise<unknown>; failure: ExternalFailure; says?: RegExp }>([
    {
      reason: "422: a triangle above the cloud's size limit is refused for good (the spec must change)",
      fail: () => shapes().create(desired("ns.huge", { type: "triangle", size: 800 }), signal()),
      failure: "rejected",
      says: /HTTP 422: cannot create shape ns\.huge: size 800 is too large: a triangle is at most size 500/,
    },
    {
      reason: "422 on an update too: a square of ours made a triangle too large for the rule",
      fail: async () => {
        const square = await shapes().create(desired("ns.grows", { size: 700 }), signal());
        return shapes().update(square, { type: "triangle" }, signal());
      },
      failure: "rejected",
      says: /HTTP 422: cannot change shape ns\.grows/,
    },
    {
      reason: "409: the name is taken",
      fail: async () => {
        await shapes().create(desired("ns.taken", {}), signal());
        return shapes().create(desired("ns.taken", {}), signal());
      },
      failure: "conflict",
    },
    {
      reason: "412: the shape changed since it was read",
      fail: async () => {
        const shape = await shapes().create(desired("ns.raced", {}), signal());
        await client.patch(shape.id, { color: "blue" });
        return shapes().delete(shape, signal());
      },
      failure: "stale",
    },
    {
      reason: "not a cloud error at all (a bug)",
      fail: () => Promise.reject(new Error("boom")),
      failure: "failed",
    },
  ])("$reason", async ({ fail, failure, says }) => {
    const err = await fail().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(shapes().classify(err).failure).toBe(failure);
    if (says) expect((err as Error).message).toMatch(says);
  });
});

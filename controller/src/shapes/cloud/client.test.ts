/**
 * The cloud client against the REAL mock cloud over HTTP: keeps the controller's idea of the API and the
 * cloud's implementation in step (status codes, problem bodies, ETags, the change feed's wire format).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCloud, type RunningCloud } from "../../../../mock-cloud/src/server.ts";
import { CloudClient, CloudError, parseRetryAfter, type CloudWatchEvent } from "./client.ts";
import { ownedShapesListWatch } from "./list-watch.ts";

let cloud: RunningCloud;
let client: CloudClient;
const calls: string[] = [];

beforeAll(async () => {
  cloud = await startCloud({ token: "secret", heartbeatMs: 200 });
  client = new CloudClient({
    baseUrl: cloud.url,
    token: "secret",
    onCall: (verb, status) => calls.push(`${verb} ${status}`),
  });
});
afterAll(() => cloud.close());

describe("CloudClient against the mock cloud", () => {
  it("creates, reads, merge-patches with If-Match and deletes", async () => {
    const created = await client.create({
      name: "ns.c1",
      type: "square",
      color: "red",
      tags: { owner: "k8s" },
    });
    expect(created).toMatchObject({ name: "ns.c1", color: "red", tags: { owner: "k8s" } });
    await expect(client.get(created.id)).resolves.toMatchObject({ id: created.id });

    const patched = await client.patch(created.id, { color: "blue", tags: { team: "a" } }, created.revision);
    expect(patched).toMatchObject({ color: "blue", tags: { owner: "k8s", team: "a" } });
    expect(patched.revision).toBeGreaterThan(created.revision);

    const stale = await client
      .patch(created.id, { color: "green" }, created.revision)
      .catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(CloudError);
    expect((stale as CloudError).isPreconditionFailed).toBe(true);

    await client.delete(created.id);
    const gone = await client.get(created.id).catch((e: unknown) => e);
    expect((gone as CloudError).isNotFound).toBe(true);
    expect(calls).toContain("create 201");
  });

  it("reports a name conflict with the id that holds the name", async () => {
    const first = await client.create({ name: "ns.taken", type: "circle", color: "red", tags: {} });
    const err = await client
      .create({ name: "ns.taken", type: "circle", color: "red", tags: {} })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CloudError);
    expect((err as CloudError).isConflict).toBe(true);
    expect((err as CloudError).problem?.existingId).toBe(first.id);
    expect((err as CloudError).message).toMatch(/^cannot create cloud shapes: HTTP 409/);
  });

  it("says cannot ... with the server's detail on a bad token, and status 0 on a dead server", async () => {
    const bad = new CloudClient({ baseUrl: cloud.url, token: "wrong" });
    const err = (await bad.list({}).catch((e: unknown) => e)) as CloudError;
    expect(err.status).toBe(401);
    const dead = new CloudClient({ baseUrl: "http://127.0.0.1:1", token: "x", timeoutMs: 2_000 });
    const down = (await dead.list({}).catch((e: unknown) => e)) as CloudError;
    expect(down.status).toBe(0);
    expect(down.message).toMatch(/^cannot list cloud shapes/);
  });

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

  it("turns a watch from a revision older than the history into 410 Gone", async () => {
    const small = await startCloud({ token: "t", historyLimit: 2 });
    try {
      const c = new CloudClient({ baseUrl: small.url, token: "t" });
      for (let i = 0; i < 5; i++)
        await c.create({ name: `ns.s${i}`, type: "square", color: "red", tags: {} });
      const events: CloudWatchEvent[] = [];
      const err = (await c
        .watch(0, (e) => events.push(e), new AbortController().signal)
        .catch((e: unknown) => e)) as CloudError;
      expect(err.isGone).toBe(true);
      expect(events).toEqual([]);
    } finally {
      await small.close();
    }
  });
});

describe("parseRetryAfter", () => {
  it.each([
    { reason: "delta seconds", value: "3", ms: 3_000 },
    { reason: "an HTTP date", value: new Date(10_000).toUTCString(), ms: 10_000 },
    { reason: "absent", value: null, ms: undefined },
    { reason: "garbage", value: "soon", ms: undefined },
  ])("$reason", ({ value, ms }) => expect(parseRetryAfter(value, 0)).toBe(ms));
});

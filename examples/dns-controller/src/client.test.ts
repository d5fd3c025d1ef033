/**
 * The zone client against the REAL zone API over HTTP: keeps the controller's idea of the API and the API's
 * implementation in step (status codes, problem bodies, If-Match, paging, the long-poll change feed).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type ExternalWatchEvent, GoneError } from "reconcile-kit";
import { ZoneClient, ZoneError, type NewZoneRecord, type ZoneRecord } from "./client.ts";
import { ZoneApi } from "./zone-api.ts";

let zone: ZoneApi;
let client: ZoneClient;
const calls: string[] = [];

beforeAll(async () => {
  zone = new ZoneApi();
  client = new ZoneClient({
    baseUrl: await zone.start(),
    clientId: "client-test",
    onCall: (verb, status) => calls.push(`${verb} ${status}`),
  });
});
afterAll(() => zone.stop());

const record = (name: string, labels: Record<string, string> = {}): NewZoneRecord => ({
  name: `${name}.example.test`,
  type: "A",
  value: "192.0.2.1",
  labels,
});

/** Runs a watch from `since` in the background, collecting its events, until `stop()`. */
function watching(labels: Record<string, string>, since: number) {
  const events: ExternalWatchEvent<ZoneRecord>[] = [];
  const abort = new AbortController();
  const done = client.listWatch(labels).watch(since, (e) => events.push(e), abort.signal);
  return { events, stop: () => (abort.abort(), done) };
}

describe("ZoneClient against the zone API", () => {
  it("renames a record by a patch of its name (same id), and refuses a name another record holds (409)", async () => {
    const a = await client.create(record("rename-a"));
    const b = await client.create(record("rename-b"));
    const taken = (await client
      .patch(b.id, { name: a.name }, b.revision)
      .catch((e: unknown) => e)) as ZoneError;
    expect(taken.status).toBe(409);
    expect(taken.holderId).toBe(a.id);

    const renamed = await client.patch(b.id, { name: "rename-c.example.test" }, b.revision);
    expect(renamed).toMatchObject({ id: b.id, name: "rename-c.example.test" });
    await expect(client.getByName("rename-b.example.test")).resolves.toBeUndefined();
    await expect(client.getByName("rename-c.example.test")).resolves.toEqual(renamed);
  });

  it("creates, reads by name, merge-patches and deletes, the writes conditional on the revision", async () => {
    const created = await client.create({ ...record("crud"), ttl: 60, labels: { owner: "me" } });
    expect(created).toMatchObject({ name: "crud.example.test", ttl: 60, labels: { owner: "me" } });
    await expect(client.getByName("crud.example.test")).resolves.toEqual(created);

    const patched = await client.patch(created.id, { ttl: null, labels: { team: "a" } }, created.revision);
    expect(patched.ttl).toBeUndefined();
    expect(patched.labels).toEqual({ owner: "me", team: "a" });
    expect(patched.revision).toBeGreaterThan(created.revision);

    const stale = (await client.delete(created.id, created.revision).catch((e: unknown) => e)) as ZoneError;
    expect(stale).toBeInstanceOf(ZoneError);
    expect(stale.status).toBe(412);
    expect(stale.message).toMatch(/^cannot delete zone records: HTTP 412: cannot write crud.example.test/);

    await client.delete(patched.id, patched.revision);
    await expect(client.getByName("crud.example.test")).resolves.toBeUndefined();
    const gone = (await client
      .patch(patched.id, { value: "192.0.2.2" })
      .catch((e: unknown) => e)) as ZoneError;
    expect(gone.status).toBe(404);
  });

  it("answers a taken name with 409 and the id of the record that holds it", async () => {
    const holder = await client.create(record("taken"));
    const err = (await client.create(record("taken")).catch((e: unknown) => e)) as ZoneError;
    expect(err).toMatchObject({ status: 409, holderId: holder.id });
  });

  it("refuses a bad body with 400 and says what is wrong", async () => {
    const err = (await client
      .create({ ...record("bad"), type: "MX" as "A" })
      .catch((e: unknown) => e)) as ZoneError;
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/type/);
  });

  it.each([
    { reason: "a create below the minimum: refused, nothing stored", ttl: 59, patch: false, status: 422 },
    { reason: "a patch below the minimum: refused, the record unchanged", ttl: 5, patch: true, status: 422 },
    { reason: "exactly the minimum: accepted", ttl: 60, patch: false, status: 201 },
  ])("the zone's own rule, a TTL of at least 60 s: $reason", async ({ ttl, patch, status }) => {
    const name = `ttl-${ttl}-${patch ? "patched" : "created"}`;
    const write = patch
      ? client.create(record(name)).then((r) => client.patch(r.id, { ttl }, r.revision))
      : client.create({ ...record(name), ttl });
    const err = await write.then(
      () => undefined,
      (e: unknown) => e as ZoneError,
    );
    const stored = await client.getByName(`${name}.example.test`);
    if (status !== 422) {
      expect(err).toBeUndefined();
      expect(stored?.ttl).toBe(ttl);
      return;
    }
    expect(err).toMatchObject({ status: 422 });
    expect(err?.message).toContain(`ttl ${ttl} is below this zone's minimum TTL of 60 seconds`);
    if (patch) expect(stored?.ttl).toBeUndefined();
    else expect(stored).toBeUndefined();
  });

  it("lists the records with a label, page by page, with the revision of the first page", async () => {
    for (const n of ["p1", "p2", "p3", "p4", "p5"]) await client.create(record(n, { owner: "pager" }));
    await client.create(record("p6", { owner: "someone-else" }));
    const lw = client.listWatch({ owner: "pager" }, 2);
    const names: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await lw.list(token, AbortSignal.timeout(5_000));
      expect(page.items.length).toBeLessThanOrEqual(2);
      names.push(...page.items.map((r) => r.name));
      token = page.nextPageToken;
      pages++;
    } while (token);
    expect(names).toEqual(["p1", "p2", "p3", "p4", "p5"].map((n) => `${n}.example.test`));
    expect(pages).toBe(3);
  });

  it("follows the change feed by label: a record that loses the label is DELETED; a watch resumes from a revision", async () => {
    const { revision } = await client.list({ labels: { owner: "w" } });
    const first = watching({ owner: "w" }, revision);
    const made = await client.create(record("w1", { owner: "w" }));
    await client.create(record("w2", { owner: "not-w" }));
    const patched = await client.patch(made.id, { value: "192.0.2.9" });
    const released = await client.patch(made.id, { labels: { owner: null } });
    await vi.waitFor(() => expect(first.events).toHaveLength(3), { timeout: 10_000 });
    await first.stop();
    expect(first.events.map((e) => [e.type, e.object.name, e.revision])).toEqual([
      ["ADDED", "w1.example.test", made.revision],
      ["MODIFIED", "w1.example.test", patched.revision],
      ["DELETED", "w1.example.test", released.revision],
    ]);

    // Resumed from the last revision seen: only what came after.
    const again = await client.patch(made.id, { labels: { owner: "w" } });
    const second = watching({ owner: "w" }, released.revision);
    await vi.waitFor(() => expect(second.events).toHaveLength(1), { timeout: 10_000 });
    await second.stop();
    expect(second.events[0]).toMatchObject({ type: "ADDED", revision: again.revision });
  });

  it("answers a long poll with no change empty, at its timeout, with the current revision", async () => {
    const { revision } = await client.list({});
    await expect(
      client.changes({ since: revision, labels: { owner: "nobody" }, timeoutMs: 50 }),
    ).resolves.toEqual({
      events: [],
      revision,
    });
  });

  it("turns a 410 (the revision is older than the history) into the core's GoneError", async () => {
    const small = new ZoneApi({ historyLimit: 2 });
    const smallClient = new ZoneClient({ baseUrl: await small.start() });
    try {
      for (const n of ["g1", "g2", "g3"]) await smallClient.create(record(n));
      const watch = smallClient.listWatch({}).watch(0, () => {}, AbortSignal.timeout(5_000));
      await expect(watch).rejects.toBeInstanceOf(GoneError);
    } finally {
      await small.stop();
    }
  });

  it("carries a 429's Retry-After, in ms; the next request goes through", async () => {
    zone.throttleNext(2);
    const err = (await client.getByName("any.example.test").catch((e: unknown) => e)) as ZoneError;
    expect(err).toMatchObject({ status: 429, retryAfterMs: 2_000 });
    await expect(client.getByName("any.example.test")).resolves.toBeUndefined();
  });

  it("reports a network failure as status 0, and every call to onCall", async () => {
    const down = new ZoneClient({ baseUrl: "http://127.0.0.1:1", onCall: (v, s) => calls.push(`${v} ${s}`) });
    const err = (await down.getByName("x.example.test").catch((e: unknown) => e)) as ZoneError;
    expect(err).toMatchObject({ status: 0 });
    expect(err.message).toMatch(/^cannot get zone records: /);
    expect(calls).toContain("get 0");
    expect(calls).toContain("create 201");
  });

  it("counts write requests by X-Client-Id", async () => {
    const before = zone.writes("client-test");
    const other = new ZoneClient({ baseUrl: zone.url, clientId: "someone" });
    await other.create(record("counted"));
    await client.getByName("counted.example.test");
    expect(zone.writes("someone")).toBe(1);
    expect(zone.writes("client-test")).toBe(before);
    expect(zone.writes()).toBeGreaterThan(before);
  });
});

/**
 * The etcd client and the plugin's calls against a REAL etcd (the binary the project builds for its control
 * plane, started by EtcdServer): keeps the client's idea of the gateway and the gateway's behaviour in step
 * (base64, transactions whose failed compare answers 200, paging at one revision, the watch with prev_kv,
 * compaction, the request size limit). Skipped, saying so, when no etcd binary is built yet.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExternalWatchEvent, GoneError } from "reconcile-kit";
import { binariesIn, cacheDir } from "@shapes/envtest";
import { EtcdClient, type EtcdEntry, EtcdError } from "./client.ts";
import { EtcdServer } from "./etcd-server.ts";
import { etcdEntriesClient, etcdPlugin } from "./plugin.ts";

const binary = process.env.ETCD_BINARY ?? binariesIn(cacheDir()).etcd;
const built = existsSync(binary);
if (!built) console.warn(`skipped: no etcd binary at ${binary} (npm run cluster -- build makes one)`);

let server: EtcdServer;
let client: EtcdClient;
const calls: string[] = [];
const signal = new AbortController().signal;

beforeAll(async () => {
  if (!built) return;
  server = await EtcdServer.start({ binary });
  client = new EtcdClient({ baseUrl: server.url, onCall: (verb, status) => calls.push(`${verb} ${status}`) });
}, 60_000);
afterAll(async () => {
  client?.close();
  await server?.stop();
});

/** The failure a call rejects with (an EtcdError's), or "resolved". */
async function failureOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "resolved";
  } catch (error) {
    return error instanceof EtcdError ? error.failure : `not an EtcdError: ${String(error)}`;
  }
}

/**
 * Runs the list-watch's watch for `owner` from `since` in the background, collecting its events, and in
 * `log` the events' revisions and its progress reports (`bookmark <revision>` or `alive`), in order.
 */
function watching(owner: string, since: number) {
  const events: ExternalWatchEvent<EtcdEntry>[] = [];
  const log: string[] = [];
  const abort = new AbortController();
  const done = client.listWatch(owner).watch(
    since,
    (e) => (events.push(e), log.push(`event ${e.revision}`)),
    abort.signal,
    (bookmark) => log.push(bookmark === undefined ? "alive" : `bookmark ${bookmark}`),
  );
  return { events, log, done, stop: () => (abort.abort(), done) };
}

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(!built)("EtcdClient against etcd's JSON gateway", () => {
  it("creates a key only where none is: its create revision is its id; a second create is a conflict", async () => {
    const created = await client.create("/config/c/one", { value: "v", owner: "me" });
    expect(created).toMatchObject({
      key: "/config/c/one",
      name: "one.c",
      fields: { value: "v", owner: "me" },
    });
    expect(created.id).toBe(String(created.revision));
    expect(await client.get("/config/c/one")).toEqual(created);
    expect(await failureOf(client.create("/config/c/one", { value: "w" }))).toBe("conflict");
    expect((await client.get("/config/c/one"))?.fields.value).toBe("v");
    // A failed compare is an answer of 200: the metric counts it as such, the failure says what it was.
    expect(calls.filter((c) => c.startsWith("create"))).toEqual(["create 200", "create 200"]);
  });

  it.each([
    {
      reason: "at the observed revision: merged, null removes a field",
      moved: false,
      gone: false,
      failure: "resolved",
    },
    { reason: "the key moved on", moved: true, gone: false, failure: "stale" },
    { reason: "the key is gone", moved: false, gone: true, failure: "notFound" },
  ])("updates only at the observed revision: $reason", async ({ moved, gone, failure }) => {
    const key = `/config/u/${failure}`;
    const observed = await client.create(key, { value: "a", owner: "me", uid: "u1" });
    if (moved) await client.put(key, JSON.stringify({ value: "person" }));
    if (gone) await client.deleteKey(key);
    expect(await failureOf(client.update(observed, { value: "b", uid: null }))).toBe(failure);
    if (failure === "resolved") {
      const now = await client.get(key);
      expect(now?.fields).toEqual({ value: "b", owner: "me" });
      expect(now?.id).toBe(observed.id);
      expect(now?.revision).toBeGreaterThan(observed.revision);
    }
  });

  it.each([
    { reason: "at the observed revision", moved: false, gone: false, failure: "resolved" },
    { reason: "the key moved on", moved: true, gone: false, failure: "stale" },
    { reason: "the key is gone", moved: false, gone: true, failure: "notFound" },
  ])("deletes only at the observed revision: $reason", async ({ moved, gone, failure }) => {
    const key = `/config/d/${failure}`;
    const observed = await client.create(key, { value: "a" });
    if (moved) await client.put(key, "by hand");
    if (gone) await client.deleteKey(key);
    expect(await failureOf(client.delete(observed))).toBe(failure);
    expect(await client.get(key)).toEqual(failure === "stale" ? expect.anything() : undefined);
  });

  it("reads a value that is not a JSON object (written by hand) as its text, with no marks", async () => {
    await client.put("/config/h/raw", "plain text");
    expect((await client.get("/config/h/raw"))?.fields).toEqual({ value: "plain text" });
  });

  it("reads etcd's refusal of a request above --max-request-bytes as rejected, with its words", async () => {
    const call = client.create("/config/r/big", { value: "x".repeat(10_000) });
    await expect(call).rejects.toThrow(/request is too large/);
    expect(await failureOf(client.create("/config/r/big", { value: "x".repeat(10_000) }))).toBe("rejected");
  });

  it("reads no answer at all as throttled", async () => {
    const nobody = new EtcdClient({ baseUrl: "http://127.0.0.1:1", timeoutMs: 2_000 });
    expect(await failureOf(nobody.get("/config/x/y"))).toBe("throttled");
    nobody.close();
  });

  it("lists in pages at the first page's revision: a key written between pages is not in the listing", async () => {
    for (const n of ["a", "b", "c"]) await client.create(`/config/p/${n}`, { value: n, owner: "pager" });
    const seen: string[] = [];
    let page = await client.listWatch("pager", 1).list(undefined, signal);
    const revision = page.revision;
    seen.push(...page.items.map((e) => e.key));
    await client.create("/config/p/b2", { value: "late", owner: "pager" });
    while (page.nextPageToken !== undefined) {
      page = await client.listWatch("pager", 1).list(page.nextPageToken, signal);
      expect(page.revision).toBe(revision);
      seen.push(...page.items.map((e) => e.key));
    }
    expect(seen).toEqual(["/config/p/a", "/config/p/b", "/config/p/c"]);
  });

  it("watches with the owner filter in the adapter: ours ADDED and MODIFIED; unmarked or deleted, DELETED as it was while ours; foreign, nothing", async () => {
    const since = (await client.list({ limit: 1 })).revision;
    const watch = watching("w-owner", since);
    const ours = await client.create("/config/w/ours", { value: "1", owner: "w-owner" });
    await client.create("/config/w/foreign", { value: "1", owner: "someone-else" });
    const updated = await client.update(ours, { value: "2" });
    const released = await client.update(updated, { owner: null });
    const again = await client.update(released, { owner: "w-owner" });
    await client.delete(again);
    await until("five events", () => watch.events.length >= 5);
    await watch.stop();
    expect(
      watch.events.map((e) => [e.type, e.object.fields.value, e.object.fields.owner, e.revision]),
    ).toEqual([
      ["ADDED", "1", "w-owner", ours.revision],
      ["MODIFIED", "2", "w-owner", updated.revision],
      ["DELETED", "2", "w-owner", released.revision],
      ["ADDED", "2", "w-owner", again.revision],
      ["DELETED", "2", "w-owner", again.revision + 1],
    ]);
  });

  it("reports etcd's progress notifications on a quiet watch as bookmarks at the store's revision", async () => {
    const head = (await client.list({ limit: 1 })).revision;
    const watch = watching("quiet", head);
    try {
      await until("two bookmarks", () => watch.log.filter((l) => l.startsWith("bookmark")).length >= 2);
    } finally {
      await watch.stop();
    }
    expect(watch.events).toEqual([]);
    expect(new Set(watch.log.filter((l) => l.startsWith("bookmark")))).toEqual(new Set([`bookmark ${head}`]));
  });

  it("bookmarks no revision before the watch caught up to it: from an old revision, events of others' keys included", async () => {
    const since = (await client.list({ limit: 1 })).revision;
    const ours = await client.create("/config/b/ours", { value: "1", owner: "b-owner" });
    const foreign = await client.create("/config/b/foreign", { value: "1", owner: "someone-else" });
    const watch = watching("b-owner", since);
    try {
      await until("a bookmark at the foreign key's change", () =>
        watch.log.includes(`bookmark ${foreign.revision}`),
      );
    } finally {
      await watch.stop();
    }
    // The creation answer carries the store's revision before the old changes are sent: a sign of life
    // only, no bookmark. The first bookmark follows our change; the foreign key's change is one too.
    expect(watch.log.slice(0, 2)).toEqual(["alive", `event ${ours.revision}`]);
    expect(watch.log.indexOf(`bookmark ${foreign.revision}`)).toBeGreaterThan(1);
  });

  it("resumes after `since`: the change at `since` itself is not delivered again", async () => {
    const created = await client.create("/config/s/one", { value: "1", owner: "s-owner" });
    const watch = watching("s-owner", created.revision);
    const updated = await client.update(created, { value: "2" });
    await until("the update", () => watch.events.length >= 1);
    await watch.stop();
    expect(watch.events.map((e) => [e.type, e.revision])).toEqual([["MODIFIED", updated.revision]]);
  });

  it("ends a watch from a compacted revision with a GoneError (the library relists)", async () => {
    const first = await client.create("/config/g/one", { value: "1", owner: "g" });
    await client.update(first, { value: "2" });
    const head = (await client.list({ limit: 1 })).revision;
    const res = await fetch(`${server.url}/v3/kv/compaction`, {
      method: "POST",
      body: JSON.stringify({ revision: String(head) }),
    });
    expect(res.status).toBe(200);
    await expect(watching("g", first.revision - 1).done).rejects.toThrow(GoneError);
  });
});

describe.skipIf(!built)("the plugin's etcd calls", () => {
  const plugin = etcdPlugin({ listWatch: (owner) => client.listWatch(owner) });
  const calls = () => etcdEntriesClient(client);
  const marks = { owner: "plug", uid: "uid-1", resourceKey: "ns/entry" };
  const resource = {
    metadata: { name: "entry", namespace: "plug", uid: "uid-1" },
    spec: { value: "wanted" },
  };

  it("creates the key of the entry's name with the value and our marks beside it, and reads the marks back", async () => {
    const desired = plugin.resource.desired(resource, marks);
    expect(desired.name).toBe("entry.plug");
    const created = await calls().create(desired, signal);
    expect(created.key).toBe("/config/plug/entry");
    expect(created.fields).toEqual({ value: "wanted", owner: "plug", uid: "uid-1", resource: "ns/entry" });
    expect(plugin.external.marksOf(created)).toEqual({ owner: "plug", uid: "uid-1" });
    expect(plugin.resource.statusOf(created)).toEqual({
      createRevision: created.id,
      key: "/config/plug/entry",
    });
  });

  it("releases by removing our marks and nothing else, at the observed revision", async () => {
    const observed = await client.get("/config/plug/entry");
    if (!observed) throw new Error("the key of the test before is not there");
    await calls().release(observed, signal);
    const after = await client.get("/config/plug/entry");
    expect(after?.fields).toEqual({ value: "wanted" });
    expect(after?.id).toBe(observed.id);
    expect(plugin.external.marksOf(after as EtcdEntry)).toEqual({ owner: undefined, uid: undefined });
  });

  it.each([
    { reason: "the client's own failure", error: new EtcdError("x", "stale", 200), failure: "stale" },
    { reason: "anything else (a bug) is a plain failure", error: new Error("boom"), failure: "failed" },
  ])("classifies: $reason", ({ error, failure }) => {
    expect(calls().classify(error)).toEqual({ failure });
  });
});

import { afterEach, describe, expect, it } from "vitest";
import type { Shape, ShapePage } from "../schemas.ts";
import {
  eventually,
  openWatch,
  shapeBody,
  startTestCloud,
  type TestCloud,
  type WatchStream,
} from "../test-support.ts";

let t: TestCloud | undefined;
const streams: WatchStream[] = [];
afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  await t?.close();
  t = undefined;
});

async function cloud(options: Parameters<typeof startTestCloud>[0] = {}): Promise<TestCloud> {
  t = await startTestCloud(options);
  return t;
}
async function watch(
  c: TestCloud,
  query: string,
  headers: Record<string, string> = {},
): Promise<WatchStream> {
  const s = await openWatch(c.url, query, headers);
  streams.push(s);
  return s;
}

describe("GET /v1/watch", () => {
  it("streams ADDED, MODIFIED and DELETED with the shape, its revision, and the revision as the SSE id", async () => {
    const c = await cloud();
    const w = await watch(c, "?since=0");
    expect(w.status).toBe(200);
    expect(w.headers.get("content-type")).toMatch(/^text\/event-stream/);

    const s = await c.create(shapeBody("watched", { tags: { owner: "k8s" } }));
    const patched = (await c.api("patch", `/v1/shapes/${s.id}`).send({ color: "blue" })).body as Shape;
    await c.api("delete", `/v1/shapes/${s.id}`).expect(204);

    await w.until(() => w.events.length === 3, "three events");
    expect(w.events.map((e) => e.type)).toEqual(["ADDED", "MODIFIED", "DELETED"]);
    expect(w.events[0]).toEqual({ type: "ADDED", shape: s, revision: s.revision });
    expect(w.events[1]).toEqual({ type: "MODIFIED", shape: patched, revision: patched.revision });
    expect(w.events[2]?.shape).toEqual(patched); // as it was when deleted
    expect(w.events[2]!.revision).toBeGreaterThan(patched.revision);
    expect(w.messages.map((m) => m.id)).toEqual(w.events.map((e) => String(e.revision)));
  });

  it("replays history after `since` (exclusive), then goes live, in strictly increasing revisions", async () => {
    const c = await cloud();
    const made: Shape[] = [];
    for (let i = 0; i < 5; i++) made.push(await c.create(shapeBody(`h-${i}`)));
    const w = await watch(c, `?since=${made[1]!.revision}`);
    await w.until(() => w.events.length === 3, "the three later creates");
    expect(w.events.map((e) => e.shape.name)).toEqual(["h-2", "h-3", "h-4"]);
    await c.create(shapeBody("live"));
    await w.until(() => w.events.length === 4, "the live create");
    const revisions = w.events.map((e) => e.revision);
    expect(revisions).toEqual([...revisions].sort((a, b) => a - b));
    expect(new Set(revisions).size).toBe(revisions.length);
  });

  it("without since, starts at the current revision", async () => {
    const c = await cloud();
    await c.create(shapeBody("old"));
    const w = await watch(c, "");
    await w.until(() => w.comments.some((x) => x.includes("after revision 1")), "the opening comment");
    await c.create(shapeBody("new"));
    await w.until(() => w.events.length === 1, "one event");
    expect(w.events[0]?.shape.name).toBe("new");
  });

  it("resumes from Last-Event-ID (EventSource reconnect), which wins over since", async () => {
    const c = await cloud();
    const a = await c.create(shapeBody("a"));
    await c.create(shapeBody("b"));
    const w = await watch(c, "?since=0", { "last-event-id": String(a.revision) });
    await w.until(() => w.events.length === 1, "one event");
    expect(w.events[0]?.shape.name).toBe("b");
  });

  it("answers 410 Gone when since is older than the retained history, or newer than the cloud", async () => {
    const c = await cloud({ historyLimit: 3 });
    for (let i = 0; i < 6; i++) await c.create(shapeBody(`g-${i}`)); // revisions 1..6, history keeps 4..6
    const old = await watch(c, "?since=2");
    expect(old.status).toBe(410);
    expect(old.problem).toMatchObject({ status: 410, oldestRevision: 3, currentRevision: 6 });
    const oldest = await watch(c, "?since=3");
    expect(oldest.status).toBe(200);
    await oldest.until(() => oldest.events.length === 3, "the retained three");
    const future = await watch(c, "?since=7");
    expect(future.status).toBe(410);
    expect((future.problem as { detail: string }).detail).toContain("only at revision 6");
    const badId = await watch(c, "", { "last-event-id": "2" });
    expect(badId.status).toBe(410);
  });

  const badQueries: { reason: string; query: string; field: string }[] = [
    { reason: "a negative since", query: "?since=-1", field: "since" },
    { reason: "a non-numeric since", query: "?since=abc", field: "since" },
    { reason: "a bad tag filter", query: "?tag=nokey", field: "tag" },
    { reason: "an unknown parameter", query: "?from=1", field: "from" },
  ];
  it.each(badQueries)("answers 400 for $reason", async ({ query, field }) => {
    const c = await cloud();
    const w = await watch(c, query);
    expect(w.status).toBe(400);
    expect((w.problem as { errors: { field: string }[] }).errors.map((e) => e.field)).toContain(field);
  });

  it("sends heartbeat comments", async () => {
    const c = await cloud({ heartbeatMs: 50 });
    const w = await watch(c, "?since=0");
    await w.until(() => w.comments.filter((x) => x.includes("heartbeat")).length >= 2, "two heartbeats");
  });

  it("with tag filters: shapes entering the filter are ADDED, leaving it DELETED, others unseen", async () => {
    const c = await cloud();
    const w = await watch(c, "?since=0&tag=owner=k8s");
    const mine = await c.create(shapeBody("mine", { tags: { owner: "k8s" } }));
    const foreign = await c.create(shapeBody("foreign"));
    await c.api("patch", `/v1/shapes/${foreign.id}`).send({ color: "blue" }).expect(200); // unseen
    await c.api("patch", `/v1/shapes/${mine.id}`).send({ color: "green" }).expect(200); // MODIFIED
    await c
      .api("patch", `/v1/shapes/${mine.id}`)
      .send({ tags: { owner: null } })
      .expect(200); // leaves: DELETED
    await c
      .api("patch", `/v1/shapes/${foreign.id}`)
      .send({ tags: { owner: "k8s" } })
      .expect(200); // enters: ADDED
    await c.api("delete", `/v1/shapes/${mine.id}`).expect(204); // already outside: unseen
    await c.api("delete", `/v1/shapes/${foreign.id}`).expect(204); // DELETED
    await w.until(() => w.events.length === 5, "five events");
    expect(w.events.map((e) => [e.type, e.shape.name])).toEqual([
      ["ADDED", "mine"],
      ["MODIFIED", "mine"],
      ["DELETED", "mine"],
      ["ADDED", "foreign"],
      ["DELETED", "foreign"],
    ]);
    expect(w.events[2]?.shape.tags).toEqual({}); // the DELETED-for-this-watcher carries the new state
  });

  it("list-then-watch misses nothing: pages plus events from the list's revision rebuild the cloud", async () => {
    const c = await cloud();
    for (let i = 0; i < 30; i++) await c.create(shapeBody(`lw-${i}`, { size: i + 1 }));
    // List page by page while another client keeps writing in between pages.
    const view = new Map<string, Shape>();
    let token: string | undefined;
    let revision = 0;
    let step = 0;
    do {
      const page = (await c.api("get", `/v1/shapes?limit=4${token ? `&pageToken=${token}` : ""}`))
        .body as ShapePage;
      revision = page.revision; // the last page's: every page must report the first page's revision
      for (const s of page.items) view.set(s.id, s);
      token = page.nextPageToken;
      const victim = `lw-${step * 3}`;
      const all = (await c.api("get", "/v1/shapes?limit=1000")).body as ShapePage;
      const v = all.items.find((s) => s.name === victim);
      if (v) await c.api("delete", `/v1/shapes/${v.id}`).expect(204);
      await c.create(shapeBody(`new-${step}`));
      const p = all.items.find((s) => s.name === `lw-${29 - step}`);
      if (p) await c.api("patch", `/v1/shapes/${p.id}`).send({ color: "purple" }).expect(200);
      step++;
    } while (token);

    const w = await watch(c, `?since=${revision}`);
    const target = (await c.api("get", "/v1/shapes?limit=1000")).body as ShapePage;
    await w.until(() => (w.events.at(-1)?.revision ?? revision) >= target.revision, "the events up to now");
    for (const e of w.events) {
      if (e.type === "DELETED") view.delete(e.shape.id);
      else view.set(e.shape.id, e.shape);
    }
    const byId = (shapes: Iterable<Shape>) => [...shapes].sort((a, b) => a.id.localeCompare(b.id));
    expect(byId(view.values())).toEqual(byId(target.items));
  });

  it("ends a watch that falls behind the retained history; reconnecting from its last id is 410", async () => {
    const c = await cloud({ historyLimit: 5 });
    // A lagging watch does not advance, so the history moves past it.
    await c.admin("put", "/admin/faults").send({ path: "/v1/watch", listLagMs: 600_000 }).expect(200);
    const w = await watch(c, "?since=0");
    for (let i = 0; i < 8; i++) await c.create(shapeBody(`fall-${i}`));
    await c.admin("delete", "/admin/faults").expect(204); // the watch wakes up and finds its history gone
    await w.ended;
    expect(w.events).toEqual([]);
    expect(w.comments.some((x) => x.includes("410"))).toBe(true);
    const again = await watch(c, "?since=0");
    expect(again.status).toBe(410);
  });

  it("closes open watches when the cloud closes", async () => {
    const c = await cloud();
    const w = await watch(c, "?since=0");
    await eventually(() => c.cloud.deps.feed.size === 1, "the watch registered");
    await c.close();
    t = undefined;
    await w.ended;
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import request from "supertest";
import type { Shape, ShapePage } from "../schemas.ts";
import {
  ADMIN_TOKEN,
  manualClock,
  openWatch,
  problemFields,
  shapeBody,
  startTestCloud,
  TOKEN,
  type TestCloud,
} from "../test-support.ts";

let t: TestCloud;
beforeAll(async () => {
  t = await startTestCloud();
});
afterAll(async () => {
  await t.close();
});
afterEach(async () => {
  await t.admin("delete", "/admin/faults").expect(204);
});

let n = 0;
const fresh = () => `admin-${++n}`;
const revision = async () => (await request(t.url).get("/healthz")).body.revision as number;

describe("/admin/faults", () => {
  it("starts empty, takes one rule or a list of rules, and clears", async () => {
    expect((await t.admin("get", "/admin/faults")).body).toEqual({ rules: [] });
    const one = await t.admin("put", "/admin/faults").send({ errorRate: 0.5, method: "POST" });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ rules: [{ errorRate: 0.5, method: "POST" }] });
    const rules = [{ outage: true, path: "/v1/watch" }, { latencyMs: 5 }];
    expect((await t.admin("put", "/admin/faults").send({ rules })).body).toEqual({ rules });
    expect((await t.admin("get", "/admin/faults")).body).toEqual({ rules });
    await t.admin("delete", "/admin/faults").expect(204);
    expect((await t.admin("get", "/admin/faults")).body).toEqual({ rules: [] });
  });

  const invalid: { reason: string; body: unknown; field: string }[] = [
    { reason: "a rate above 1", body: { errorRate: 1.5 }, field: "errorRate" },
    { reason: "a negative latency", body: { latencyMs: -1 }, field: "latencyMs" },
    { reason: "a lower-case method", body: { method: "get" }, field: "method" },
    { reason: "a relative path", body: { path: "v1/shapes" }, field: "path" },
    { reason: "an unknown switch", body: { chaos: true }, field: "chaos" },
    {
      reason: "a bad rule in a list",
      body: { rules: [{ throttleRate: "all" }] },
      field: "rules.0.throttleRate",
    },
  ];
  it.each(invalid)(
    "answers 400 naming the field for $reason, keeping the old rules",
    async ({ body, field }) => {
      await t.admin("put", "/admin/faults").send({ latencyMs: 1 }).expect(200);
      const res = await t.admin("put", "/admin/faults").send(body as object);
      expect(res.status).toBe(400);
      expect(problemFields(res.body)).toContain(field);
      expect((await t.admin("get", "/admin/faults")).body).toEqual({ rules: [{ latencyMs: 1 }] });
    },
  );

  it("needs the admin token, not the API token", async () => {
    const api = await request(t.url).get("/admin/faults").set("authorization", `Bearer ${TOKEN}`);
    expect(api.status).toBe(401);
    expect(api.headers["www-authenticate"]).toMatch(/realm="shapes-admin"/);
    expect((await request(t.url).put("/admin/faults").send({ outage: true })).status).toBe(401);
    expect((await t.admin("get", "/admin/faults")).body).toEqual({ rules: [] });
  });
});

describe("a cloud started without an admin token", () => {
  let closed: TestCloud;
  beforeAll(async () => {
    closed = await startTestCloud({ adminToken: undefined });
  });
  afterAll(async () => {
    await closed.close();
  });

  const refused: {
    reason: string;
    method: "get" | "put" | "delete";
    path: string;
    authorization?: string;
  }[] = [
    {
      reason: "the API token cannot switch faults (a controller holds it)",
      method: "put",
      path: "/admin/faults",
      authorization: `Bearer ${TOKEN}`,
    },
    {
      reason: "the API token cannot read the faults",
      method: "get",
      path: "/admin/faults",
      authorization: `Bearer ${TOKEN}`,
    },
    {
      reason: "the API token cannot clear the faults",
      method: "delete",
      path: "/admin/faults",
      authorization: `Bearer ${TOKEN}`,
    },
    {
      reason: "the API token cannot read the request log",
      method: "get",
      path: "/admin/requests",
      authorization: `Bearer ${TOKEN}`,
    },
    {
      reason: "the API token cannot clear the request log",
      method: "delete",
      path: "/admin/requests",
      authorization: `Bearer ${TOKEN}`,
    },
    { reason: "no token opens it", method: "put", path: "/admin/faults" },
    {
      reason: "any other token neither",
      method: "put",
      path: "/admin/faults",
      authorization: `Bearer ${ADMIN_TOKEN}`,
    },
  ];
  it.each(refused)("answers 401: $reason", async ({ method, path, authorization }) => {
    const req = request(closed.url)[method](path);
    if (authorization) req.set("authorization", authorization);
    const res = await (method === "put" ? req.send({ outage: true }) : req);
    expect(res.status).toBe(401);
    expect(res.headers["www-authenticate"]).toMatch(/realm="shapes-admin"/);
    expect(res.body).toMatchObject({ type: "https://shapes.example.com/problems/unauthorized" });
    expect(res.body.detail).toMatch(/started without an admin token/);
    expect(closed.cloud.deps.faults.config).toEqual({ rules: [] });
  });

  it("still serves the API with its token", async () => {
    await closed.api("get", "/v1/shapes").expect(200);
  });
});

describe("fault kinds, on and off", () => {
  it("errorRate 1: every matching call is a 500 problem and changes nothing; off: back to normal", async () => {
    await t.admin("put", "/admin/faults").send({ errorRate: 1 }).expect(200);
    const before = await revision();
    const res = await t.api("post", "/v1/shapes").send(shapeBody(fresh()));
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({
      status: 500,
      type: "https://shapes.example.com/problems/injected-error",
    });
    expect((await t.api("get", "/v1/shapes")).status).toBe(500);
    expect(await revision()).toBe(before);
    await t.admin("delete", "/admin/faults").expect(204);
    expect((await t.api("post", "/v1/shapes").send(shapeBody(fresh()))).status).toBe(201);
  });

  it("throttleRate 1: 429 with Retry-After (the rule's, or 1 s); off: normal", async () => {
    await t.admin("put", "/admin/faults").send({ throttleRate: 1 }).expect(200);
    const dflt = await t.api("get", "/v1/shapes");
    expect(dflt.status).toBe(429);
    expect(dflt.headers["retry-after"]).toBe("1");
    await t.admin("put", "/admin/faults").send({ throttleRate: 1, retryAfterSeconds: 7 }).expect(200);
    const res = await t.api("post", "/v1/shapes").send(shapeBody(fresh()));
    expect(res.status).toBe(429);
    expect(res.headers["retry-after"]).toBe("7");
    expect(res.body.type).toBe("https://shapes.example.com/problems/throttled");
    await t.admin("put", "/admin/faults").send({ throttleRate: 0 }).expect(200);
    expect((await t.api("get", "/v1/shapes")).status).toBe(200);
  });

  it("outage: 503 on every API call (Retry-After when set) while admin and health still answer", async () => {
    await t.admin("put", "/admin/faults").send({ outage: true, retryAfterSeconds: 30 }).expect(200);
    for (const [method, path] of [
      ["get", "/v1/shapes"],
      ["get", "/v1/shapes/shp_x"],
      ["delete", "/v1/shapes/shp_x"],
      ["get", "/v1/watch?since=0"],
    ] as const) {
      const res = await t.api(method, path);
      expect(res.status, `${method} ${path}`).toBe(503);
      expect(res.headers["retry-after"]).toBe("30");
    }
    expect((await request(t.url).get("/healthz")).status).toBe(200);
    expect((await request(t.url).get("/metrics")).status).toBe(200);
    await t.admin("put", "/admin/faults").send({ outage: false }).expect(200);
    expect((await t.api("get", "/v1/shapes")).status).toBe(200);
  });

  it("latencyMs: answers no sooner than the latency", async () => {
    await t.admin("put", "/admin/faults").send({ latencyMs: 300, path: "/v1/shapes" }).expect(200);
    const started = performance.now();
    const res = await t.api("get", "/v1/shapes?limit=1");
    expect(res.status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(295); // a lower bound: the delay happened
  });

  it("scopes rules by method and path template", async () => {
    const s = await t.create(shapeBody(fresh()));
    await t
      .admin("put", "/admin/faults")
      .send({
        rules: [
          { method: "PATCH", path: "/v1/shapes/:id", errorRate: 1 },
          { path: "/v1/watch", outage: true },
        ],
      })
      .expect(200);
    expect((await t.api("patch", `/v1/shapes/${s.id}`).send({ color: "blue" })).status).toBe(500);
    expect((await t.api("get", `/v1/shapes/${s.id}`)).status).toBe(200);
    expect((await t.api("post", "/v1/shapes").send(shapeBody(fresh()))).status).toBe(201);
    expect((await t.api("get", "/v1/watch?since=0")).status).toBe(503);
    await t.admin("put", "/admin/faults").send({ path: "/v1/*", throttleRate: 1 }).expect(200);
    expect((await t.api("get", `/v1/shapes/${s.id}`)).status).toBe(429);
  });

  it("counts injected faults in the metrics", async () => {
    await t.admin("put", "/admin/faults").send({ throttleRate: 1 }).expect(200);
    await t.api("get", "/v1/shapes").expect(429);
    const metrics = (await request(t.url).get("/metrics")).text;
    expect(metrics).toMatch(/cloud_injected_faults_total\{kind="throttle"\} [1-9]/);
  });
});

describe("listLagMs (eventual consistency)", () => {
  // The lag counts on the data's clock, which these tests move by hand: no sleeping.
  const clock = manualClock();
  let c: TestCloud;
  beforeAll(async () => {
    c = await startTestCloud({ now: clock.now });
  });
  afterAll(async () => {
    await c.close();
  });
  afterEach(async () => {
    await c.admin("delete", "/admin/faults").expect(204);
  });

  it("lists show the cloud as it was lagMs ago; GET by id stays current; off: lists catch up", async () => {
    const team = fresh();
    const old = await c.create(shapeBody(fresh(), { tags: { team } }));
    clock.advance(10_000);
    const created = await c.create(shapeBody(fresh(), { tags: { team } }));
    const patched = (await c.api("patch", `/v1/shapes/${old.id}`).send({ color: "green" })).body as Shape;
    await c.admin("put", "/admin/faults").send({ listLagMs: 5_000 }).expect(200);

    const lagging = (await c.api("get", `/v1/shapes?tag=team=${team}`)).body as ShapePage;
    expect(lagging.items).toEqual([old]); // no new shape, and the old one as it was
    expect(lagging.revision).toBe(old.revision);
    expect((await c.api("get", `/v1/shapes/${created.id}`)).body).toEqual(created);

    clock.advance(5_000); // now the writes are 5 s old: visible
    const caughtUp = (await c.api("get", `/v1/shapes?tag=team=${team}`)).body as ShapePage;
    expect(caughtUp.items).toEqual([patched, created]);

    await c.create(shapeBody(fresh(), { tags: { team } }));
    await c.admin("delete", "/admin/faults").expect(204);
    expect(((await c.api("get", `/v1/shapes?tag=team=${team}`)).body as ShapePage).items).toHaveLength(3);
  });

  it("shows a deleted shape in lagging lists until the lag has passed", async () => {
    const team = fresh();
    const s = await c.create(shapeBody(fresh(), { tags: { team } }));
    clock.advance(10_000);
    await c
      .admin("put", "/admin/faults")
      .send({ listLagMs: 5_000, method: "GET", path: "/v1/shapes" })
      .expect(200);
    await c.api("delete", `/v1/shapes/${s.id}`).expect(204);
    expect(((await c.api("get", `/v1/shapes?tag=team=${team}`)).body as ShapePage).items).toEqual([s]);
    clock.advance(5_000);
    expect(((await c.api("get", `/v1/shapes?tag=team=${team}`)).body as ShapePage).items).toEqual([]);
  });

  it("reads later pages no older than the first page, even if the lag grows meanwhile", async () => {
    const team = fresh();
    const first = await c.create(shapeBody(fresh(), { tags: { team } }));
    clock.advance(10_000);
    const second = await c.create(shapeBody(fresh(), { tags: { team } }));
    const page1 = (await c.api("get", `/v1/shapes?tag=team=${team}&limit=1`)).body as ShapePage;
    expect(page1.items).toEqual([first]);
    await c.admin("put", "/admin/faults").send({ listLagMs: 5_000 }).expect(200); // would hide `second`
    const page2 = (await c.api("get", `/v1/shapes?tag=team=${team}&limit=1&pageToken=${page1.nextPageToken}`))
      .body as ShapePage;
    expect(page2.items).toEqual([second]);
    expect(page2.revision).toBe(page1.revision);
  });

  it("holds watch events back by the lag, then delivers them", async () => {
    clock.advance(10_000);
    await c.admin("put", "/admin/faults").send({ listLagMs: 5_000 }).expect(200);
    const since = (await request(c.url).get("/healthz")).body.revision as number;
    const w = await openWatch(c.url, `?since=${since}`);
    try {
      const s = await c.create(shapeBody(fresh()));
      await w.until(() => w.comments.some((x) => x.includes("watching")), "the stream to open");
      expect(w.events).toEqual([]);
      clock.advance(5_000);
      await c.admin("put", "/admin/faults").send({ listLagMs: 5_000 }).expect(200); // wakes the watch
      await w.until(() => w.events.length === 1, "the event once the lag has passed");
      expect(w.events[0]).toMatchObject({ type: "ADDED", revision: s.revision });
    } finally {
      w.close();
    }
  });

  it("delivers a lagging event on its own once the lag passes in real time", async () => {
    const real = await startTestCloud();
    try {
      await real.admin("put", "/admin/faults").send({ listLagMs: 150 }).expect(200);
      const w = await openWatch(real.url, "?since=0");
      try {
        const s = await real.create(shapeBody("late"));
        await w.until(() => w.events.length === 1, "the event after 150 ms");
        expect(w.events[0]?.revision).toBe(s.revision);
      } finally {
        w.close();
      }
    } finally {
      await real.close();
    }
  });
});

describe("/admin/requests", () => {
  it("logs API writes with user agent and client id, not reads, and can be cleared", async () => {
    await t.admin("delete", "/admin/requests").expect(204);
    const s = await t.create(shapeBody(fresh()));
    await t
      .api("patch", `/v1/shapes/${s.id}`)
      .set("user-agent", "tester/1")
      .set("x-client-id", "replica-a")
      .send({ color: "blue" });
    await t.api("get", `/v1/shapes/${s.id}`).expect(200);
    await t.api("delete", `/v1/shapes/${s.id}`).set("x-client-id", "replica-b").expect(204);
    await request(t.url).post("/v1/shapes").send(shapeBody(fresh())).expect(401);

    const log = await t.admin("get", "/admin/requests");
    expect(log.status).toBe(200);
    const items = log.body.items as Record<string, unknown>[];
    expect(items.map((e) => [e.method, e.path, e.status])).toEqual([
      ["POST", "/v1/shapes", 201],
      ["PATCH", `/v1/shapes/${s.id}`, 200],
      ["DELETE", `/v1/shapes/${s.id}`, 204],
      ["POST", "/v1/shapes", 401],
    ]);
    expect(items[1]).toMatchObject({ userAgent: "tester/1", clientId: "replica-a" });
    expect(items[2]).toMatchObject({ clientId: "replica-b" });
    for (const e of items) {
      expect(e.finishedAtMs as number).toBeGreaterThanOrEqual(e.startedAtMs as number);
      expect(Date.parse(e.time as string)).toBe(Math.floor(e.startedAtMs as number));
    }
    const seqs = items.map((e) => e.seq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    await t.admin("delete", "/admin/requests").expect(204);
    expect((await t.admin("get", "/admin/requests")).body.items).toEqual([]);
  });

  it("keeps only the most recent entries", async () => {
    const small = await startTestCloud({ requestLogLimit: 3 });
    try {
      for (let i = 0; i < 5; i++) await small.create(shapeBody(`r-${i}`));
      const log = await request(small.url)
        .get("/admin/requests")
        .set("authorization", `Bearer ${ADMIN_TOKEN}`);
      expect(log.body.limit).toBe(3);
      expect((log.body.items as { seq: number }[]).map((e) => e.seq)).toEqual([3, 4, 5]);
    } finally {
      await small.close();
    }
  });
});

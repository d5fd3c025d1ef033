/**
 * The console's client (static/api.js, browser code run here in Node) against a real cloud over HTTP:
 * each call does what the page says it does, and each failure carries the cloud's own explanation.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Shape } from "../schemas.ts";
import { ADMIN_TOKEN, shapeBody, startTestCloud, TOKEN, type TestCloud } from "../test-support.ts";
import { CLIENT_ID, CloudClient, CloudError, traceIdOf } from "./static/api.js";

let t: TestCloud;
let client: CloudClient;
beforeAll(async () => {
  t = await startTestCloud();
  client = new CloudClient({ baseUrl: t.url, token: TOKEN, adminToken: ADMIN_TOKEN });
});
afterAll(async () => {
  await t.close();
});

/** The URL a fetch is called with. */
function urlOf(input: string | URL | Request): string {
  return typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
}

/** The CloudError a call rejects with. */
async function failure(call: Promise<unknown>): Promise<CloudError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof CloudError)) throw new Error(`expected a CloudError, got ${String(error)}`);
  return error;
}

describe("CloudClient", () => {
  it("creates a shape without tags, recolors and deletes it, each If-Match its revision", async () => {
    const created = await client.create({ name: "client.one", type: "triangle", color: "green" });
    expect(created).toMatchObject({ name: "client.one", type: "triangle", color: "green", tags: {} });

    const recolored = await client.recolor(created, "blue");
    expect(recolored).toMatchObject({ id: created.id, color: "blue" });
    expect(recolored.revision).toBeGreaterThan(created.revision);

    // Acting on what was shown before the recolor: the cloud refuses, and says why.
    const stale = await failure(client.remove(created));
    expect(stale.status).toBe(412);
    expect(stale.message).toMatch(/^cannot delete client\.one: /);
    expect(stale.detail).toMatch(/^cannot /);
    await t.api("get", `/v1/shapes/${created.id}`).expect(200);

    await client.remove(recolored);
    await t.api("get", `/v1/shapes/${created.id}`).expect(404);

    // The console's writes are told apart in the request log.
    const log = (await t.admin("get", "/admin/requests").expect(200)).body.items as { clientId?: string }[];
    expect(log.slice(-4).map((e) => e.clientId)).toEqual([CLIENT_ID, CLIENT_ID, CLIENT_ID, CLIENT_ID]);
  });

  it("lists every page, with the revision of the first", async () => {
    for (let i = 0; i < 3; i++) await t.create(shapeBody(`client.list-${i}`));
    const { revision } = (await t.api("get", "/v1/shapes?limit=1").expect(200)).body;
    const paged = new CloudClient({
      baseUrl: t.url,
      token: TOKEN,
      // a page size of 1, to prove the pages are followed (the client asks for 1000)
      fetch: (input, init) => fetch(urlOf(input).replace("limit=1000", "limit=1"), init),
    });
    const listing = await paged.listAll();
    const all = (await t.api("get", "/v1/shapes?limit=1000").expect(200)).body as { items: Shape[] };
    expect(listing.items.map((s) => s.id)).toEqual(all.items.map((s) => s.id));
    expect(listing.items.length).toBeGreaterThanOrEqual(3);
    expect(listing.revision).toBe(revision);
  });

  it("turns a problem answer into a CloudError with its detail and status", async () => {
    await t.create(shapeBody("client.taken"));
    const taken = await failure(client.create({ name: "client.taken", type: "square", color: "red" }));
    expect(taken.status).toBe(409);
    expect(taken.detail).toMatch(/^cannot use name "client\.taken": shape shp_\w+ already has it$/);

    const invalid = await failure(client.create({ name: "Not A Name", type: "square", color: "red" }));
    expect(invalid.status).toBe(400);
    expect(invalid.detail).toContain("name");
  });

  it("reads and replaces the fault rules with the admin token, and reports throttling's Retry-After", async () => {
    try {
      const set = await client.setFaults({
        rules: [{ path: "/v1/shapes", throttleRate: 1, retryAfterSeconds: 7 }],
      });
      expect(set).toEqual({ rules: [{ path: "/v1/shapes", throttleRate: 1, retryAfterSeconds: 7 }] });
      expect(await client.faults()).toEqual(set);
      const throttled = await failure(client.listAll());
      expect(throttled).toMatchObject({ status: 429, retryAfterSeconds: 7 });
    } finally {
      await t.admin("delete", "/admin/faults").expect(204);
    }
  });

  it("says which token was refused", async () => {
    const wrongApi = new CloudClient({ baseUrl: t.url, token: "wrong", adminToken: ADMIN_TOKEN });
    const api = await failure(wrongApi.listAll());
    expect(api.status).toBe(401);
    expect(api.message).toBe("cannot list shapes: cannot authenticate: the bearer token is not valid");
    expect(await wrongApi.faults()).toEqual({ rules: [] }); // the admin token is its own

    // Without an admin token the client sends the API token for the faults, which a cloud with its own refuses.
    const apiOnly = new CloudClient({ baseUrl: t.url, token: TOKEN });
    expect((await failure(apiOnly.faults())).status).toBe(401);
  });

  it("reports an unreachable cloud as status 0", async () => {
    const gone = new CloudClient({ baseUrl: "http://127.0.0.1:1", token: TOKEN });
    const error = await failure(gone.listAll());
    expect(error.status).toBe(0);
    expect(error.message).toMatch(/^cannot list shapes: the cloud does not answer/);
  });
});

describe("traceIdOf", () => {
  const id = "4bf92f3577b34da6a3ce929d0e0e4736";
  const cases: { reason: string; header: string | undefined; traceId: string | undefined }[] = [
    { reason: "a Level 2 traceresponse", header: `00-${id}-00f067aa0ba902b7-01`, traceId: id },
    { reason: "an unsampled one still names its trace", header: `00-${id}-00f067aa0ba902b7-00`, traceId: id },
    {
      reason: "a future version, with more fields",
      header: `01-${id}-00f067aa0ba902b7-01-extra`,
      traceId: id,
    },
    { reason: "no header", header: undefined, traceId: undefined },
    { reason: "not the format", header: "yes", traceId: undefined },
    { reason: "version ff is invalid", header: `ff-${id}-00f067aa0ba902b7-01`, traceId: undefined },
    {
      reason: "an all-zero trace id is invalid",
      header: `00-${"0".repeat(32)}-00f067aa0ba902b7-01`,
      traceId: undefined,
    },
    { reason: "an all-zero span id is invalid", header: `00-${id}-${"0".repeat(16)}-01`, traceId: undefined },
    {
      reason: "upper-case hex is not the format",
      header: `00-${id.toUpperCase()}-00f067aa0ba902b7-01`,
      traceId: undefined,
    },
  ];
  it.each(cases)("$reason", ({ header, traceId }) => {
    const res = new Response(null, { headers: header === undefined ? {} : { traceresponse: header } });
    expect(traceIdOf(res)).toBe(traceId);
  });
});

describe("the trace of each call", () => {
  /**
   * A client whose every request carries a new caller's `traceparent` (the console sends none; here the
   * cloud does not trace, so it answers with the caller's trace), and the trace ids it sent.
   */
  function tracedClient() {
    const sent: string[] = [];
    const traced = new CloudClient({
      baseUrl: t.url,
      token: TOKEN,
      adminToken: ADMIN_TOKEN,
      fetch: (input, init) => {
        const traceId = randomBytes(16).toString("hex");
        sent.push(traceId);
        const headers = {
          ...(init?.headers as Record<string, string>),
          traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
        };
        return fetch(input, { ...init, headers });
      },
    });
    return { traced, sent };
  }

  it("is the trace id of the latest answer, success or failure, and none without one", async () => {
    const { traced, sent } = tracedClient();
    expect(traced.traceId).toBeUndefined();
    const created = await traced.create({ name: "client.traced", type: "circle", color: "red" });
    expect(traced.traceId).toBe(sent.at(-1));
    const log = (await t.admin("get", "/admin/requests").expect(200)).body.items as { traceId?: string }[];
    expect(log.at(-1)?.traceId).toBe(sent.at(-1));

    await failure(traced.remove({ ...created, revision: created.revision + 1000 }));
    expect(traced.traceId).toBe(sent.at(-1));
    expect(sent).toHaveLength(2);

    // No traceparent sent and the cloud does not trace: no trace to show.
    await client.remove(created);
    expect(client.traceId).toBeUndefined();

    const gone = new CloudClient({ baseUrl: "http://127.0.0.1:1", token: TOKEN });
    await failure(gone.faults());
    expect(gone.traceId).toBeUndefined();
  });

  it("is a session's own: actions at the same time keep their traces apart", async () => {
    const { traced, sent } = tracedClient();
    const one = traced.session();
    const other = traced.session();
    await Promise.all([one.faults(), other.faults()]);
    expect(sent).toHaveLength(2);
    expect([one.traceId, other.traceId].sort()).toEqual([...sent].sort());
    expect(one.traceId).not.toBe(other.traceId);
    expect(traced.traceId).toBeUndefined(); // the sessions' calls are not the parent client's
  });
});

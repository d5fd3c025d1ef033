/**
 * The cloud client against the REAL mock cloud over HTTP: keeps the controller's idea of the API and the
 * cloud's implementation in step (status codes, problem bodies, ETags, the change feed's wire format).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CloudHttpClient, type RunningCloud, startCloud } from "@shapes/mock-cloud";
import { RateLimiter, type RequestLimiter } from "reconcile-kit";
import { CloudClient, CloudError, parseRetryAfter, type CloudWatchEvent } from "./client.ts";

let cloud: RunningCloud;
let client: CloudClient;
const calls: string[] = [];

beforeAll(async () => {
  cloud = await startCloud({ token: "secret", adminToken: "admin-secret", heartbeatMs: 200 });
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

  it("reads a shape by name (any owner): the shape, undefined when absent, CloudError otherwise", async () => {
    const made = await client.create({
      name: "ns.by.name",
      type: "circle",
      color: "red",
      tags: { owner: "x" },
    });
    calls.length = 0;
    await expect(client.getByName("ns.by.name")).resolves.toEqual(made);
    await expect(client.getByName("ns.no.such.name")).resolves.toBeUndefined();
    expect(calls).toEqual(["get 200", "get 404"]);

    await client.delete(made.id);
    await expect(client.getByName("ns.by.name")).resolves.toBeUndefined();

    const bad = new CloudClient({ baseUrl: cloud.url, token: "wrong" });
    const err = (await bad.getByName("ns.by.name").catch((e: unknown) => e)) as CloudError;
    expect(err).toBeInstanceOf(CloudError);
    expect(err.status).toBe(401);
    expect(err.message).toMatch(/^cannot get cloud shapes: HTTP 401/);
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

  it("reports the feed's heartbeats while no shape changes: a quiet feed shows it is alive", async () => {
    const abort = new AbortController();
    let heartbeats = 0;
    const watching = client.watch(
      0,
      () => undefined,
      abort.signal,
      { owner: "nobody-writes-this" },
      () => {
        if (++heartbeats === 3) abort.abort();
      },
    );
    await watching;
    expect(heartbeats).toBe(3);
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

describe("CloudClient with a limiter", () => {
  /** Lets every call through and writes down what the client told it. */
  class RecordingLimiter implements RequestLimiter {
    readonly log: string[] = [];
    acquire(): Promise<void> {
      this.log.push("acquire");
      return Promise.resolve();
    }
    report(status: number, retryAfterMs?: number): void {
      this.log.push(`report ${status}${retryAfterMs === undefined ? "" : ` ${retryAfterMs}`}`);
    }
  }
  const admin = () =>
    new CloudHttpClient({
      baseUrl: cloud.url,
      token: "secret",
      adminToken: "admin-secret",
      clientId: "test-admin",
    });

  it("waits for its turn before every request/response call and reports each answer, Retry-After included", async () => {
    const limiter = new RecordingLimiter();
    const c = new CloudClient({ baseUrl: cloud.url, token: "secret", limiter });
    const made = await c.create({ name: "ns.limited", type: "circle", color: "red", tags: {} });
    await c.list({ limit: 1 });
    await c.get(made.id);
    await c.getByName("ns.limited");
    await c.patch(made.id, { color: "blue" });
    await c.delete(made.id);
    await c.get(made.id).catch(() => undefined);
    await admin().setFaults([{ path: "/v1/shapes", throttleRate: 1, retryAfterSeconds: 2 }]);
    try {
      const err = (await c.list({}).catch((e: unknown) => e)) as CloudError;
      expect(err.status).toBe(429);
    } finally {
      await admin().clearFaults();
    }
    const pairs = limiter.log.join(", ");
    expect(pairs).toBe(
      [201, 200, 200, 200, 200, 204, 404, "429 2000"].map((status) => `acquire, report ${status}`).join(", "),
    );
  });

  it("sends nothing when the wait for the limiter is aborted, and says why", async () => {
    const limiter = new RateLimiter({ qps: 100, burst: 1 });
    limiter.holdUntil(Date.now() + 3_600_000);
    const seen: string[] = [];
    const c = new CloudClient({
      baseUrl: cloud.url,
      token: "secret",
      limiter,
      onCall: (verb, status) => seen.push(`${verb} ${status}`),
    });
    const stop = new AbortController();
    const listing = c.list({}, stop.signal).catch((e: unknown) => e);
    stop.abort(new Error("leadership lost"));
    const err = (await listing) as CloudError;
    expect(err).toBeInstanceOf(CloudError);
    expect(err.status).toBe(0);
    expect(err.message).toBe("cannot list cloud shapes: leadership lost");
    expect(seen).toEqual([]);
  });

  it.each([
    {
      reason: "a timeout is no answer: reported as status 0",
      abortAfterMs: undefined,
      want: ["acquire", "report 0"],
    },
    {
      reason: "our own abort says nothing about the service: not reported",
      abortAfterMs: 50,
      want: ["acquire"],
    },
  ])("$reason", async ({ abortAfterMs, want }) => {
    const limiter = new RecordingLimiter();
    const c = new CloudClient({ baseUrl: cloud.url, token: "secret", limiter, timeoutMs: 300 });
    await admin().setFaults([{ path: "/v1/shapes", latencyMs: 5_000 }]);
    try {
      const signal = abortAfterMs === undefined ? undefined : AbortSignal.timeout(abortAfterMs);
      const err = (await c.list({}, signal).catch((e: unknown) => e)) as CloudError;
      expect(err.status).toBe(0);
    } finally {
      await admin().clearFaults();
    }
    expect(limiter.log).toEqual(want);
  });

  it("never gates the watch stream: it follows the change feed while every other call is held", async () => {
    const limiter = new RateLimiter({ qps: 100, burst: 1 });
    limiter.holdUntil(Date.now() + 3_600_000);
    const c = new CloudClient({ baseUrl: cloud.url, token: "secret", limiter });
    const abort = new AbortController();
    const seen: string[] = [];
    const watching = c.watch(
      (await admin().health()).revision,
      (e) => {
        seen.push(`${e.type} ${e.shape.name}`);
        abort.abort();
      },
      abort.signal,
    );
    await client.create({ name: "ns.seen-while-held", type: "circle", color: "red", tags: {} });
    await watching;
    expect(seen).toEqual(["ADDED ns.seen-while-held"]);
  });
});

/**
 * The cloud continues its callers' traces (middleware/trace.ts, and the repository's transaction spans),
 * over real HTTP: first with tracing off (no provider registered: the caller's trace id still reaches the
 * request log), then with an in-memory provider registered globally, as `startCloudTracing` (tracing.ts) would in a process.
 */
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { randomBytes } from "node:crypto";
import request from "supertest";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { RequestLogEntry, type FaultRule, type Shape } from "../schemas.ts";
import {
  eventually,
  type InMemoryTracing,
  openWatch,
  shapeBody,
  startInMemoryTracing,
  startTestCloud,
  TOKEN,
  type TestCloud,
} from "../test-support.ts";
import { serverSpanStatus } from "./trace.ts";

/** A caller's span: a fresh trace id and span id, and its `traceparent`. */
function callerSpan() {
  const traceId = randomBytes(16).toString("hex");
  const spanId = randomBytes(8).toString("hex");
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

let n = 0;
const fresh = () => `traced-${++n}`;

/** The last entry of the request log, validated with its schema. */
async function lastLogged(t: TestCloud): Promise<RequestLogEntry> {
  const items = (await t.admin("get", "/admin/requests").expect(200)).body.items as unknown[];
  return RequestLogEntry.parse(items.at(-1));
}

describe("serverSpanStatus", () => {
  const cases: { reason: string; status: number; code: SpanStatusCode }[] = [
    { reason: "a success is no error", status: 200, code: SpanStatusCode.UNSET },
    { reason: "a refused request is the client's mistake", status: 412, code: SpanStatusCode.UNSET },
    { reason: "a 404 is the client's mistake too", status: 404, code: SpanStatusCode.UNSET },
    { reason: "a 500 is the server's failure", status: 500, code: SpanStatusCode.ERROR },
    { reason: "so is an outage's 503", status: 503, code: SpanStatusCode.ERROR },
    { reason: "an abandoned request got no answer", status: 0, code: SpanStatusCode.ERROR },
  ];
  it.each(cases)("$status: $reason", ({ status, code }) => {
    const result = serverSpanStatus(status);
    expect(result.code).toBe(code);
    if (code === SpanStatusCode.ERROR) expect(result.message).toMatch(/\S/);
  });
});

describe("with tracing off (no provider registered)", () => {
  let t: TestCloud;
  beforeAll(async () => {
    // Whatever ran before in this worker: the API's no-op tracer from here on.
    trace.disable();
    context.disable();
    t = await startTestCloud();
  });
  afterAll(async () => {
    await t.close();
  });

  const caller = callerSpan();
  const cases: {
    reason: string;
    traceparent: string | undefined;
    traceId: string | undefined;
    traceresponse: string | undefined;
  }[] = [
    {
      reason: "a caller that traces: its trace id is logged and echoed, with its own span id",
      traceparent: caller.traceparent,
      traceId: caller.traceId,
      traceresponse: caller.traceparent,
    },
    {
      reason: "no traceparent: nothing to correlate",
      traceparent: undefined,
      traceId: undefined,
      traceresponse: undefined,
    },
    {
      reason: "a malformed traceparent is ignored",
      traceparent: `00-${caller.traceId}-nope-01`,
      traceId: undefined,
      traceresponse: undefined,
    },
    {
      reason: "an all-zero trace id is invalid (W3C)",
      traceparent: `00-${"0".repeat(32)}-${caller.spanId}-01`,
      traceId: undefined,
      traceresponse: undefined,
    },
    {
      reason: "upper-case hex is not W3C",
      traceparent: caller.traceparent.toUpperCase(),
      traceId: undefined,
      traceresponse: undefined,
    },
  ];
  it.each(cases)("$reason", async ({ traceparent, traceId, traceresponse }) => {
    const req = t.api("post", "/v1/shapes");
    if (traceparent !== undefined) req.set("traceparent", traceparent);
    const res = await req.send(shapeBody(fresh()));
    expect(res.status).toBe(201);
    expect(res.headers.traceresponse).toBe(traceresponse);
    const logged = await lastLogged(t);
    expect(logged.path).toBe("/v1/shapes");
    if (traceId === undefined) expect(logged).not.toHaveProperty("traceId");
    else expect(logged.traceId).toBe(traceId);
  });
});

describe("with an in-memory tracer provider", () => {
  let tracing: InMemoryTracing;
  let t: TestCloud;
  beforeAll(async () => {
    tracing = startInMemoryTracing();
    t = await startTestCloud();
  });
  afterAll(async () => {
    await t.close();
    await tracing.stop();
  });
  beforeEach(async () => {
    await t.admin("delete", "/admin/faults").expect(204);
    tracing.reset();
  });

  const spansIn = (traceId: string): ReadableSpan[] =>
    tracing.spans().filter((s) => s.spanContext().traceId === traceId);

  /** The SERVER span of a trace, once it ended (at the response's close, maybe after the client read it). */
  async function serverSpan(traceId: string): Promise<ReadableSpan> {
    let found: ReadableSpan | undefined;
    await eventually(() => {
      found = spansIn(traceId).find((s) => s.kind === SpanKind.SERVER);
      return found !== undefined;
    }, `the SERVER span of trace ${traceId}`);
    return found!;
  }

  const setFaults = (rules: FaultRule[]) => t.admin("put", "/admin/faults").send({ rules }).expect(200);

  const writes: {
    reason: string;
    method: "post" | "patch" | "delete";
    route: string;
    operation: "INSERT" | "UPDATE" | "DELETE";
    status: number;
    faults?: FaultRule[];
  }[] = [
    {
      reason: "a PATCH: its JSON body is read from stream events before the handler runs",
      method: "patch",
      route: "/v1/shapes/:id",
      operation: "UPDATE",
      status: 200,
    },
    {
      reason: "a POST behind an async guard (an injected latency awaits a timer)",
      method: "post",
      route: "/v1/shapes",
      operation: "INSERT",
      status: 201,
      faults: [{ method: "POST", latencyMs: 5 }],
    },
    {
      reason: "a DELETE, without a body",
      method: "delete",
      route: "/v1/shapes/:id",
      operation: "DELETE",
      status: 204,
    },
  ];
  it.each(writes)(
    "$method: a SERVER span child of the caller's, and a sqlite $operation span under it: $reason",
    async ({ method, route, operation, status, faults }) => {
      const existing = await t.create(shapeBody(fresh()));
      if (faults) await setFaults(faults);
      const caller = callerSpan();
      const path = method === "post" ? "/v1/shapes" : `/v1/shapes/${existing.id}`;
      const req = t
        .api(method, path)
        .set("traceparent", caller.traceparent)
        .set("user-agent", "trace-test/1");
      const res = await (method === "post"
        ? req.send(shapeBody(fresh()))
        : method === "patch"
          ? req.set("content-type", "application/merge-patch+json").send({ color: "blue" })
          : req);
      expect(res.status).toBe(status);

      const server = await serverSpan(caller.traceId);
      expect(server.name).toBe(`${method.toUpperCase()} ${route}`);
      expect(server.parentSpanContext?.spanId).toBe(caller.spanId);
      expect(server.attributes).toMatchObject({
        "http.request.method": method.toUpperCase(),
        "http.route": route,
        "url.path": path,
        "http.response.status_code": status,
        "user_agent.original": "trace-test/1",
      });
      expect(server.status.code).toBe(SpanStatusCode.UNSET);
      expect(res.headers.traceresponse).toBe(`00-${caller.traceId}-${server.spanContext().spanId}-01`);

      const sqlite = spansIn(caller.traceId).filter((s) => s.name.startsWith("sqlite "));
      expect(sqlite.map((s) => s.name)).toEqual([`sqlite ${operation} shapes`]);
      expect(sqlite[0]!.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
      expect(sqlite[0]!.kind).toBe(SpanKind.CLIENT);
      expect(sqlite[0]!.attributes).toEqual({
        "db.system.name": "sqlite",
        "db.operation.name": operation,
        "db.collection.name": "shapes",
      });
      expect(sqlite[0]!.status.code).toBe(SpanStatusCode.UNSET);

      expect((await lastLogged(t)).traceId).toBe(caller.traceId);
    },
  );

  it("keeps concurrent requests' contexts apart", async () => {
    const shapes = await Promise.all([1, 2, 3].map(() => t.create(shapeBody(fresh()))));
    await setFaults([{ method: "PATCH", latencyMs: 20 }]); // all three wait at once
    const callers = shapes.map(() => callerSpan());
    await Promise.all(
      shapes.map((shape, i) =>
        t
          .api("patch", `/v1/shapes/${shape.id}`)
          .set("traceparent", callers[i]!.traceparent)
          .send({ color: "green" })
          .expect(200),
      ),
    );
    for (const caller of callers) {
      const server = await serverSpan(caller.traceId);
      const spans = spansIn(caller.traceId);
      expect(spans.map((s) => s.name).sort()).toEqual(["PATCH /v1/shapes/:id", "sqlite UPDATE shapes"]);
      const sqlite = spans.find((s) => s.name === "sqlite UPDATE shapes");
      expect(sqlite?.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    }
  });

  it("starts a trace of its own for a request without traceparent, and logs that trace", async () => {
    const res = await t.api("post", "/v1/shapes").send(shapeBody(fresh())).expect(201);
    const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(res.headers.traceresponse));
    expect(match, `traceresponse ${String(res.headers.traceresponse)}`).not.toBeNull();
    const server = await serverSpan(match![1]!);
    expect(server.parentSpanContext).toBeUndefined();
    expect(server.spanContext().spanId).toBe(match![2]);
    expect((await lastLogged(t)).traceId).toBe(match![1]);
  });

  it("marks the SERVER span of a 5xx as an error (an injected 500: nothing written)", async () => {
    const shape = await t.create(shapeBody(fresh()));
    await setFaults([{ method: "PATCH", errorRate: 1 }]);
    const caller = callerSpan();
    await t
      .api("patch", `/v1/shapes/${shape.id}`)
      .set("traceparent", caller.traceparent)
      .send({ color: "pink" })
      .expect(500);
    const server = await serverSpan(caller.traceId);
    expect(server.name).toBe("PATCH /v1/shapes/:id");
    expect(server.status.code).toBe(SpanStatusCode.ERROR);
    expect(server.attributes).toMatchObject({ "http.response.status_code": 500, "error.type": "500" });
    expect(spansIn(caller.traceId).filter((s) => s.name.startsWith("sqlite "))).toEqual([]);
    expect((await lastLogged(t)).traceId).toBe(caller.traceId);
  });

  it("fails the transaction span of a refused write, but not the SERVER span of its 412", async () => {
    const shape = await t.create(shapeBody(fresh()));
    const caller = callerSpan();
    await t
      .api("patch", `/v1/shapes/${shape.id}`)
      .set("traceparent", caller.traceparent)
      .set("if-match", `"${shape.revision + 1000}"`)
      .send({ color: "pink" })
      .expect(412);
    const server = await serverSpan(caller.traceId);
    expect(server.status.code).toBe(SpanStatusCode.UNSET);
    const [sqlite] = spansIn(caller.traceId).filter((s) => s.name === "sqlite UPDATE shapes");
    expect(sqlite?.status.code).toBe(SpanStatusCode.ERROR);
    expect(sqlite?.status.message).toMatch(/^cannot change shape/);
    expect(sqlite?.attributes["error.type"]).toBe("RevisionMismatchError");
  });

  it("names a request no route matched by its method alone", async () => {
    const caller = callerSpan();
    await request(t.url).get("/no/such/path").set("traceparent", caller.traceparent).expect(404);
    const server = await serverSpan(caller.traceId);
    expect(server.name).toBe("GET");
    expect(server.attributes).not.toHaveProperty("http.route");
    expect(server.attributes).toMatchObject({
      "url.path": "/no/such/path",
      "http.response.status_code": 404,
    });
    expect(server.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("streams the watch in a SERVER span that ends when the client leaves; writes trace apart", async () => {
    const watcher = callerSpan();
    const watch = await openWatch(t.url, "", { traceparent: watcher.traceparent });
    try {
      expect(watch.status).toBe(200);
      expect(watch.headers.get("traceresponse")).toMatch(
        new RegExp(`^00-${watcher.traceId}-[0-9a-f]{16}-01$`),
      );
      const writer = callerSpan();
      const name = fresh();
      const created = await t
        .api("post", "/v1/shapes")
        .set("traceparent", writer.traceparent)
        .send(shapeBody(name))
        .expect(201);
      await watch.until(() => watch.events.some((e) => e.shape.id === (created.body as Shape).id), name);
      // The write's transaction belongs to the write's trace, not the watch's.
      await serverSpan(writer.traceId);
      expect(spansIn(writer.traceId).map((s) => s.name)).toContain("sqlite INSERT shapes");
      expect(spansIn(watcher.traceId)).toEqual([]); // still streaming: not ended
    } finally {
      watch.close();
    }
    const server = await serverSpan(watcher.traceId);
    expect(server.name).toBe("GET /v1/watch");
    expect(server.attributes["http.response.status_code"]).toBe(200);
    expect(server.status.code).toBe(SpanStatusCode.UNSET);
    expect(spansIn(watcher.traceId)).toHaveLength(1);
  });

  it("shows the caller's trace id in GET /admin/requests", async () => {
    const caller = callerSpan();
    await request(t.url)
      .post("/v1/shapes")
      .set("authorization", `Bearer ${TOKEN}`)
      .set("traceparent", caller.traceparent)
      .set("x-client-id", "tracer")
      .send(shapeBody(fresh()))
      .expect(201);
    const res = await t.admin("get", "/admin/requests").expect(200);
    const entries = res.body.items as RequestLogEntry[];
    expect(entries.filter((e) => e.traceId === caller.traceId)).toMatchObject([
      { method: "POST", path: "/v1/shapes", status: 201, clientId: "tracer" },
    ]);
  });
});

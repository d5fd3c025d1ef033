import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { OTLP_TRACES_PATH, startOtlpReceiver, type OtlpReceiver } from "./otlp-receiver.ts";

const TRACE = "5b8efff798038103d269b633813fc60c";
const OTHER_TRACE = "0af7651916cd43dd8448eb211c80319c";

/** One span in OTLP/JSON, as @opentelemetry/exporter-trace-otlp-http writes it; `over` replaces fields. */
function otlpSpan(name: string, spanId: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    traceId: TRACE,
    spanId,
    name,
    kind: 1,
    startTimeUnixNano: "1700000000000000000",
    endTimeUnixNano: "1700000000250000000",
    attributes: [],
    droppedAttributesCount: 0,
    events: [],
    droppedEventsCount: 0,
    status: { code: 0 },
    links: [],
    droppedLinksCount: 0,
    ...over,
  };
}

/** An ExportTraceServiceRequest of one process (`service`) and one scope holding `spans`. */
function otlpRequest(service: string, spans: Record<string, unknown>[]): Record<string, unknown> {
  return {
    resourceSpans: [
      {
        resource: {
          attributes: [
            { key: "service.name", value: { stringValue: service } },
            { key: "process.pid", value: { intValue: 4242 } },
          ],
          droppedAttributesCount: 0,
        },
        scopeSpans: [{ scope: { name: "shapes", version: "1.0.0" }, spans }],
      },
    ],
  };
}

let receiver: OtlpReceiver;

beforeEach(async () => {
  receiver = await startOtlpReceiver();
});
afterEach(async () => {
  await receiver.close();
});

/** POSTs a body to the receiver's traces path, gzipped when asked. */
async function post(
  body: unknown,
  { gzip = false, contentType = "application/json", path = OTLP_TRACES_PATH } = {},
): Promise<{ status: number; body: { code?: number; message?: string } }> {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  const res = await fetch(`${receiver.url}${path}`, {
    method: "POST",
    headers: { "content-type": contentType, ...(gzip ? { "content-encoding": "gzip" } : {}) },
    body: gzip ? gzipSync(text) : text,
  });
  return { status: res.status, body: (await res.json()) as { code?: number; message?: string } };
}

describe("POST /v1/traces", () => {
  test("decodes every field of a span, flattened with its resource's service.name", async () => {
    const root = otlpSpan("reconcile", "00f067aa0ba902b7", {
      kind: 2,
      parentSpanId: "",
      attributes: [
        { key: "shape.name", value: { stringValue: "red-square" } },
        { key: "shape.generation", value: { intValue: "3" } },
        { key: "retry", value: { boolValue: false } },
        { key: "ratio", value: { doubleValue: 0.5 } },
        { key: "tags", value: { arrayValue: { values: [{ stringValue: "a" }, { intValue: 7 }] } } },
        {
          key: "owner",
          value: { kvlistValue: { values: [{ key: "id", value: { stringValue: "k8s-1" } }] } },
        },
      ],
      events: [
        {
          name: "exception",
          timeUnixNano: "1700000000100000000",
          attributes: [{ key: "exception.message", value: { stringValue: "boom" } }],
        },
      ],
      links: [{ traceId: OTHER_TRACE, spanId: "b7ad6b7169203331", attributes: [] }],
      status: { code: 2, message: "cannot patch" },
    });
    const child = otlpSpan("cloud PATCH", "53995c3f42cd8ad8", { parentSpanId: "00f067aa0ba902b7", kind: 3 });

    expect(await post(otlpRequest("shapes-controller", [root, child]))).toEqual({ status: 200, body: {} });

    const [got, gotChild] = receiver.spans();
    expect(got).toEqual({
      traceId: TRACE,
      spanId: "00f067aa0ba902b7",
      parentSpanId: undefined,
      name: "reconcile",
      kind: 2,
      service: "shapes-controller",
      resource: { "service.name": "shapes-controller", "process.pid": 4242 },
      scope: "shapes",
      startTimeUnixNano: 1_700_000_000_000_000_000n,
      endTimeUnixNano: 1_700_000_000_250_000_000n,
      attributes: {
        "shape.name": "red-square",
        "shape.generation": 3,
        retry: false,
        ratio: 0.5,
        tags: ["a", 7],
        owner: { id: "k8s-1" },
      },
      events: [
        {
          name: "exception",
          timeUnixNano: 1_700_000_000_100_000_000n,
          attributes: { "exception.message": "boom" },
        },
      ],
      links: [{ traceId: OTHER_TRACE, spanId: "b7ad6b7169203331", attributes: {} }],
      status: { code: 2, message: "cannot patch" },
    });
    expect(gotChild).toMatchObject({ parentSpanId: "00f067aa0ba902b7", kind: 3, status: { code: 0 } });
    expect(gotChild?.status).not.toHaveProperty("message");
    expect([receiver.requests, receiver.spansReceived, receiver.spansDropped]).toEqual([1, 2, 0]);
  });

  test("takes a gzip-compressed body (content-encoding: gzip)", async () => {
    const body = otlpRequest("mock-cloud", [otlpSpan("POST /v1/shapes", "1111111111111111")]);
    expect(await post(body, { gzip: true })).toEqual({ status: 200, body: {} });
    expect(receiver.spans().map((s) => [s.service, s.name])).toEqual([["mock-cloud", "POST /v1/shapes"]]);
  });

  test("takes ids in base64, the protobuf JSON mapping, as lowercase hex", async () => {
    const traceId = Buffer.from(TRACE, "hex").toString("base64");
    const spanId = Buffer.from("00f067aa0ba902b7", "hex").toString("base64");
    await post(otlpRequest("x", [otlpSpan("s", spanId, { traceId })]));
    expect(receiver.spans()[0]).toMatchObject({ traceId: TRACE, spanId: "00f067aa0ba902b7" });
  });

  test("keeps the defaults proto3 JSON leaves out: kind, status, attributes, times", async () => {
    await post({
      resourceSpans: [
        { scopeSpans: [{ spans: [{ traceId: TRACE, spanId: "1111111111111111", name: "bare" }] }] },
      ],
    });
    expect(receiver.spans()[0]).toMatchObject({
      service: undefined,
      scope: undefined,
      kind: 0,
      status: { code: 0 },
      attributes: {},
      events: [],
      startTimeUnixNano: 0n,
    });
    expect(receiver.spansByService).toEqual({ "(no service.name)": 1 });
  });

  test.each([
    {
      reason: "a body that is not JSON",
      body: "{resourceSpans:",
      want: /^cannot read the OTLP request: the body is not JSON/,
    },
    {
      reason: "JSON that is not an object",
      body: "[1,2]",
      want: "cannot read the OTLP request: the body is not an object: [1,2]",
    },
    {
      reason: "resourceSpans that is not an array",
      body: { resourceSpans: { spans: [] } },
      want: 'cannot read the OTLP request: resourceSpans is not an array: {"spans":[]}',
    },
    {
      reason: "a traceId that is not 16 bytes of hex",
      body: otlpRequest("x", [otlpSpan("s", "1111111111111111", { traceId: "not-an-id" })]),
      want: 'cannot read the OTLP request: resourceSpans[0].scopeSpans[0].spans[0].traceId is not an id of 16 bytes (32 hex digits): "not-an-id"',
    },
    {
      reason: "a span without a spanId",
      body: otlpRequest("x", [otlpSpan("s", "1111111111111111", { spanId: undefined })]),
      want: "cannot read the OTLP request: resourceSpans[0].scopeSpans[0].spans[0].spanId is not an id of 8 bytes (16 hex digits): undefined",
    },
    {
      reason: "a time that is not a number of nanoseconds",
      body: otlpRequest("x", [otlpSpan("s", "1111111111111111", { startTimeUnixNano: "yesterday" })]),
      want: /spans\[0\]\.startTimeUnixNano is not a time in nanoseconds: "yesterday"$/,
    },
    {
      reason: "an attribute without a key",
      body: otlpRequest("x", [
        otlpSpan("s", "1111111111111111", { attributes: [{ value: { stringValue: "v" } }] }),
      ]),
      want: /spans\[0\]\.attributes\[0\]\.key is not a string: undefined$/,
    },
    {
      reason: "an intValue that is not an integer",
      body: otlpRequest("x", [
        otlpSpan("s", "1111111111111111", { attributes: [{ key: "n", value: { intValue: "1.5" } }] }),
      ]),
      want: /spans\[0\]\.attributes\[0\]\.value\.intValue is not an integer: "1\.5"$/,
    },
  ])("answers 400 with what is wrong, and keeps nothing of the batch: $reason", async ({ body, want }) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(3);
    expect(res.body.message).toMatch(want);
    expect(receiver.spans()).toEqual([]);
    expect(receiver.requestsRejected).toBe(1);
    // It goes on receiving.
    expect((await post(otlpRequest("x", [otlpSpan("good", "2222222222222222")]))).status).toBe(200);
  });

  test("answers 400 to a body that says gzip and is not", async () => {
    const res = await fetch(`${receiver.url}${OTLP_TRACES_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: "{}",
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(/^cannot gunzip the body/);
  });

  test("answers 413 to a body over maxBodyBytes, gzipped or not", async () => {
    const small = await startOtlpReceiver({ maxBodyBytes: 1000 });
    try {
      const body = JSON.stringify(otlpRequest("x", [otlpSpan("s".repeat(2000), "1111111111111111")]));
      for (const gzip of [false, true]) {
        const res = await fetch(`${small.url}${OTLP_TRACES_PATH}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...(gzip ? { "content-encoding": "gzip" } : {}) },
          body: gzip ? gzipSync(body) : body,
        });
        expect(res.status, `gzip: ${gzip}`).toBe(413);
      }
    } finally {
      await small.close();
    }
  });

  test.each([
    { reason: "another path is not found", method: "POST", path: "/v1/metrics", want: 404 },
    { reason: "the root is not found", method: "GET", path: "/", want: 404 },
    { reason: "only POST on the traces path", method: "GET", path: OTLP_TRACES_PATH, want: 405 },
    {
      reason: "protobuf bodies are not taken",
      method: "POST",
      path: OTLP_TRACES_PATH,
      want: 415,
      type: "application/x-protobuf",
    },
  ])("$reason: $want", async ({ method, path, want, type }) => {
    const res = await fetch(`${receiver.url}${path}`, {
      method,
      headers: { "content-type": type ?? "application/json" },
      ...(method === "POST" ? { body: "{}" } : {}),
    });
    expect(res.status).toBe(want);
    expect(((await res.json()) as { message: string }).message).toMatch(/^cannot /);
  });
});

describe("what it keeps", () => {
  test("trace() gives one trace's spans by start time", async () => {
    await post(
      otlpRequest("c", [
        otlpSpan("late", "1111111111111111", { startTimeUnixNano: "300" }),
        otlpSpan("elsewhere", "2222222222222222", { traceId: OTHER_TRACE }),
        otlpSpan("early", "3333333333333333", { startTimeUnixNano: "100" }),
      ]),
    );
    expect(receiver.trace(TRACE.toUpperCase()).map((s) => s.name)).toEqual(["early", "late"]);
    expect(receiver.trace(OTHER_TRACE).map((s) => s.name)).toEqual(["elsewhere"]);
  });

  test("keeps at most maxSpans, the newest, and counts the dropped", async () => {
    const small = await startOtlpReceiver({ maxSpans: 2 });
    try {
      for (const name of ["a", "b", "c"]) {
        await fetch(`${small.url}${OTLP_TRACES_PATH}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(otlpRequest("svc", [otlpSpan(name, "1111111111111111")])),
        });
      }
      expect(small.spans().map((s) => s.name)).toEqual(["b", "c"]);
      expect([small.requests, small.spansReceived, small.spansDropped]).toEqual([3, 3, 1]);
      expect(small.spansByService).toEqual({ svc: 3 });
      expect(small.summary()).toBe("3 requests, 3 spans, 1 no longer kept; svc: b ×1, c ×1");
    } finally {
      await small.close();
    }
  });

  test("clear() forgets the spans and the counts", async () => {
    await post(otlpRequest("c", [otlpSpan("a", "1111111111111111")]));
    receiver.clear();
    expect([receiver.spans(), receiver.requests, receiver.spansReceived]).toEqual([[], 0, 0]);
    expect(receiver.summary()).toBe("nothing");
  });
});

describe("waitFor", () => {
  test("resolves with the matching spans when a later batch brings them", async () => {
    const waiting = receiver.waitFor((s) => s.name === "reconcile", { timeoutMs: 10_000, count: 2 });
    await post(
      otlpRequest("c", [otlpSpan("reconcile", "1111111111111111"), otlpSpan("other", "2222222222222222")]),
    );
    await post(otlpRequest("c", [otlpSpan("reconcile", "3333333333333333")]));
    expect((await waiting).map((s) => s.spanId)).toEqual(["1111111111111111", "3333333333333333"]);
  });

  test("resolves at once when the spans are there already", async () => {
    await post(otlpRequest("c", [otlpSpan("reconcile", "1111111111111111")]));
    await expect(
      receiver.waitFor((s) => s.name === "reconcile", { timeoutMs: 10_000 }),
    ).resolves.toHaveLength(1);
  });

  test("times out saying what it waited for and what was received", async () => {
    await post(otlpRequest("shapes-controller", [otlpSpan("reconcile", "1111111111111111")]));
    await expect(
      receiver.waitFor((s) => s.service === "mock-cloud", { timeoutMs: 50, what: "from the mock cloud" }),
    ).rejects.toThrow(
      "cannot receive a span from the mock cloud within 50 ms (0 of 1 matched); received: 1 request, 1 span; shapes-controller: reconcile ×1",
    );
  });

  test("stops when the signal aborts, and when the receiver closes", async () => {
    const controller = new AbortController();
    const aborted = receiver.waitFor(() => false, { signal: controller.signal });
    controller.abort(new Error("test over"));
    await expect(aborted).rejects.toThrow(
      "cannot receive a span matching the predicate: the wait was aborted; received: nothing",
    );

    const closed = receiver.waitFor(() => false);
    await receiver.close();
    await expect(closed).rejects.toThrow("cannot receive spans: the receiver was closed");
  });

  test("rejects when the predicate throws", async () => {
    await post(otlpRequest("c", [otlpSpan("a", "1111111111111111")]));
    await expect(
      receiver.waitFor(() => {
        throw new Error("bad predicate");
      }),
    ).rejects.toThrow("cannot receive spans: the predicate threw (bad predicate)");
  });
});

/**
 * A reconcile's scope, through the real Controller and a real OpenTelemetry SDK (in memory): its span, the
 * event spans it descends from, the child span of each call, the ids on its log lines and Events, and the
 * history entry it leaves.
 */
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { Controller } from "../queue/controller.ts";
import { DecisionHistory } from "./history.ts";
import { silentLogger, type Logger } from "./logger.ts";
import {
  logFields,
  noteDecision,
  noteObserved,
  noteSubject,
  reconcileAnnotations,
  traceCall,
  type EnqueueCause,
} from "./reconcile-scope.ts";
import { done, failed, requeueAfter, type ReconcileResult } from "../queue/result.ts";
import { startInMemoryTracing, type InMemoryTracing } from "../testing/tracing.ts";

let tracing: InMemoryTracing;
beforeAll(() => {
  tracing = startInMemoryTracing();
});
afterAll(() => tracing.stop());
beforeEach(() => tracing.reset());

/** A port like the library's: one call that fails with a status code when asked to. */
class Port {
  readonly received: string[] = [];
  write(name: string, fail?: number): Promise<string> {
    this.received.push(name);
    if (fail !== undefined)
      return Promise.reject(Object.assign(new Error(`cannot write ${name}: ${fail}`), { status: fail }));
    return Promise.resolve(`wrote ${name}`);
  }
}

/** {@link Port} traced, as the library's traced decorators trace theirs (reconcile/traced.ts). */
class TracedPort extends Port {
  override write(name: string, fail?: number): Promise<string> {
    return traceCall("test-api", { call: "write thing", target: name }, () => super.write(name, fail));
  }
}

/** Runs ONE reconcile of `key` through a started Controller; resolves with its result. */
async function reconcileOnce(
  body: (port: Port) => Promise<ReconcileResult>,
  options: { cause?: EnqueueCause; history?: DecisionHistory; logger?: Logger } = {},
): Promise<ReconcileResult> {
  const port = new TracedPort();
  const controller = new Controller({
    name: "test",
    reconciler: { reconcile: () => body(port) },
    logger: options.logger ?? silentLogger(),
    ...(options.history ? { history: options.history, subjectOf: (k: string) => `subject-of-${k}` } : {}),
  });
  const finished = new Promise<ReconcileResult>((resolve) =>
    controller.onReconciled((_key, result) => resolve(result)),
  );
  controller.enqueue("default/a", options.cause);
  controller.start();
  const result = await finished;
  await controller.shutDown();
  return result;
}

const aCause: EnqueueCause = { source: "external-shapes", event: "MODIFIED", object: "default.a" };

describe("the reconcile span", () => {
  it.each<{ reason: string; result: ReconcileResult; attributes: Record<string, unknown>; error: boolean }>([
    {
      reason: "done: the result, the key, the controller, the branch and why",
      result: done(),
      attributes: {
        "reconcile.result": "done",
        "reconcile.key": "default/a",
        "reconcile.controller": "test",
        "reconcile.branch": ["in-sync"],
        "reconcile.why": ["nothing to write"],
      },
      error: false,
    },
    {
      reason: "requeueAfter: the requeue delay too",
      result: requeueAfter(5_000),
      attributes: { "reconcile.result": "requeueAfter", "reconcile.requeue_after_ms": 5_000 },
      error: false,
    },
    {
      reason: "failed: an error span with the failure's message",
      result: failed(new Error("cannot create cloud shape default.a: 503")),
      attributes: { "reconcile.result": "failed" },
      error: true,
    },
  ])("$reason", async ({ result, attributes, error }) => {
    await reconcileOnce(() => {
      noteObserved("thing default.a: absent", { "k8s.resource.generation": 3 });
      noteDecision("in-sync", "nothing to write");
      return Promise.resolve(result);
    });
    const [span] = tracing.named("reconcile test");
    expect(span?.attributes).toMatchObject({ ...attributes, "k8s.resource.generation": 3 });
    expect(span?.attributes["reconcile.id"]).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/);
    expect(span?.status.code).toBe(error ? SpanStatusCode.ERROR : SpanStatusCode.UNSET);
    expect(span?.events.map((e) => e.name)).toContain("decision");
  });

  it("descends from the event that queued its key, and links to it", async () => {
    await reconcileOnce(() => Promise.resolve(done()), { cause: aCause });
    const [event] = tracing.named("external-shapes MODIFIED");
    const [reconcile] = tracing.named("reconcile test");
    expect(event?.kind).toBe(SpanKind.CONSUMER);
    expect(event?.attributes).toMatchObject({ "event.object": "default.a", "event.type": "MODIFIED" });
    expect(reconcile?.spanContext().traceId).toBe(event?.spanContext().traceId);
    expect(reconcile?.parentSpanContext?.spanId).toBe(event?.spanContext().spanId);
    expect(reconcile?.links.map((l) => l.context.spanId)).toEqual([event?.spanContext().spanId]);
  });

  it("starts a trace of its own when nothing but a resync queued the key", async () => {
    await reconcileOnce(() => Promise.resolve(done()));
    const [reconcile] = tracing.named("reconcile test");
    expect(reconcile?.parentSpanContext).toBeUndefined();
    expect(reconcile?.links).toEqual([]);
  });
});

describe("the calls of a reconcile", () => {
  it("each call through a traced port is a client child span, and the call runs in its context", async () => {
    let inside: Record<string, string> = {};
    await reconcileOnce(async (port) => {
      await port.write("default.a");
      inside = logFields();
      return done();
    });
    const [call] = tracing.named("write thing");
    const [reconcile] = tracing.named("reconcile test");
    expect(call?.kind).toBe(SpanKind.CLIENT);
    expect(call?.attributes).toMatchObject({ "peer.service": "test-api", "reconcile.target": "default.a" });
    expect(call?.parentSpanContext?.spanId).toBe(reconcile?.spanContext().spanId);
    expect(inside.trace_id).toBe(reconcile?.spanContext().traceId);
  });

  it.each([
    { reason: "a 503 from the external API", status: 503 },
    { reason: "a 409 (a conflict the reconciler handles is still a failed call)", status: 409 },
  ])("a failed call is an error span with its status code: $reason", async ({ status }) => {
    await reconcileOnce(async (port) => {
      await port.write("default.a", status).catch(() => undefined);
      return done();
    });
    const [call] = tracing.named("write thing");
    expect(call?.status.code).toBe(SpanStatusCode.ERROR);
    expect(call?.attributes["http.response.status_code"]).toBe(status);
  });

  it("a call outside any reconcile passes through untraced", async () => {
    const port = new TracedPort();
    expect(await port.write("x")).toBe("wrote x");
    expect(tracing.named("write thing")).toEqual([]);
  });
});

describe("what a reconcile leaves behind", () => {
  it("keeps its story in the history, under its subject, with its trace id", async () => {
    const history = new DecisionHistory();
    await reconcileOnce(
      async (port) => {
        noteSubject("present");
        noteObserved("thing default.a: absent");
        noteDecision("create", "no thing of ours is named default.a");
        await port.write("default.a");
        await port.write("default.b", 503).catch(() => undefined);
        return done();
      },
      { history },
    );
    const [entry] = history.get("subject-of-default/a")?.entries ?? [];
    const [reconcile] = tracing.named("reconcile test");
    expect(entry).toMatchObject({
      controller: "test",
      key: "default/a",
      traceId: reconcile?.spanContext().traceId,
      reconcileId: reconcile?.attributes["reconcile.id"],
      observed: ["thing default.a: absent"],
      decided: [{ branch: "create", why: "no thing of ours is named default.a" }],
      result: "done",
      subjectState: "present",
    });
    expect(entry?.calls.map((c) => `${c.call} ${c.target} ${c.outcome.split(":")[0]}`)).toEqual([
      "write thing default.a ok",
      "write thing default.b 503",
    ]);
  });

  it("puts its reconcile id and trace on every log line written inside it, and on its Events", async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, callback) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        callback();
      },
    });
    const logger = pino({ level: "info", mixin: logFields }, sink);
    let annotations: Record<string, string> = {};
    await reconcileOnce(
      () => {
        logger.info("inside");
        annotations = reconcileAnnotations("shapes.example.com");
        return Promise.resolve(done());
      },
      { logger },
    );
    logger.info("outside");
    const [reconcile] = tracing.named("reconcile test");
    const id = reconcile?.attributes["reconcile.id"];
    await vi.waitFor(() => expect(lines.map((l) => l.msg)).toContain("outside"));
    const inside = lines.find((l) => l.msg === "inside");
    expect(inside).toMatchObject({
      reconcile_id: id,
      trace_id: reconcile?.spanContext().traceId,
      span_id: reconcile?.spanContext().spanId,
    });
    expect(lines.find((l) => l.msg === "outside")).not.toHaveProperty("reconcile_id");
    expect(annotations).toEqual({
      "shapes.example.com/reconcile-id": id,
      "shapes.example.com/trace-id": reconcile?.spanContext().traceId,
    });
  });
});

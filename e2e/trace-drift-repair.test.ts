/**
 * Scenario: "why did the controller do that?" (issue 14). One drift repair, traced end to end with a REAL
 * OpenTelemetry exporter in both processes, into an OTLP receiver in this test: the controller (its own
 * process) and the cloud (in this process, so it exports with this process's provider).
 *
 * One trace must hold the cloud's change event as the controller received it, the reconcile it caused,
 * that reconcile's PATCH, and the cloud's server span for that PATCH (with its SQLite write). The same trace
 * id must be in the cloud's request log, on the controller's log line, on the Event it recorded, and in
 * `npm run why`.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { main as why } from "@shapes/controller";
import { type ControllerProcess, type Stack, waitConverged, waitFor } from "@shapes/stack";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "@shapes/envtest";
import { type CloudTracing, startCloudTracing } from "@shapes/mock-cloud";
import { startStack } from "./support/stack.ts";

const SERVER = 2;
const CONSUMER = 5;

describe("a drift repair, traced end to end", () => {
  let receiver: OtlpReceiver;
  let tracing: CloudTracing | undefined;
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    // Export every 200 ms instead of 5 s: the test waits on the spans, not on a timer.
    const env = { ...receiver.env, OTEL_BSP_SCHEDULE_DELAY: "200" };
    tracing = await startCloudTracing(env);
    stack = await startStack("trace-drift-repair");
    controller = await stack.startController({ env });
    ns = await stack.kube.createNamespace("traced");
  });
  afterAll(async () => {
    await stack?.stop();
    await tracing?.shutdown();
    await receiver?.close();
  });

  test("one trace: the change event → the reconcile → its PATCH → the cloud's server span → SQLite", async () => {
    await stack.kube.applyShape(ns, "recolor", { type: "square", color: "purple" });
    const before = await waitConverged(stack, ns, "recolor");

    // A human recolors it in the cloud.
    await stack.cloud.patch(before.cloud.id, { color: "yellow" });

    // The reconcile that repaired it, and everything around it, arrive as the exporters send them.
    const [reconcile] = await receiver.waitFor(
      (s) =>
        s.name === "reconcile shape" &&
        s.attributes["reconcile.key"] === `${ns}/recolor` &&
        branches(s).includes("repair-drift"),
      { what: "of the reconcile that repaired the drift" },
    );
    const traceId = reconcile!.traceId;
    const inTrace = (what: string, predicate: (s: ReceivedSpan) => boolean) =>
      receiver.waitFor((s) => s.traceId === traceId && predicate(s), { what }).then(([s]) => s!);

    const event = await inTrace("the change event", (s) => s.spanId === reconcile!.parentSpanId);
    expect(event).toMatchObject({
      name: "external-shapes MODIFIED",
      kind: CONSUMER,
      parentSpanId: undefined,
    });
    expect(event.attributes["event.object"]).toBe(`${ns}.recolor`);
    expect(reconcile!.links.map((l) => l.spanId)).toContain(event.spanId);
    expect(reconcile!.service).toBe("shapes-controller");

    const patch = await inTrace(
      "the reconcile's PATCH",
      (s) => s.parentSpanId === reconcile!.spanId && s.name === "update cloud shape",
    );
    expect(patch.attributes["reconcile.target"]).toBe(`${ns}.recolor`);

    const server = await inTrace("the cloud's server span", (s) => s.parentSpanId === patch.spanId);
    expect(server).toMatchObject({ name: "PATCH /v1/shapes/:id", kind: SERVER, service: "shapes-cloud" });
    expect(server.attributes["http.response.status_code"]).toBe(200);
    const write = await inTrace("the SQLite write", (s) => s.parentSpanId === server.spanId);
    expect(write.name).toMatch(/^sqlite /);

    // The cloud's request log has the PATCH under the same trace id.
    const logged = await stack.cloud.requests();
    expect(logged).toContainEqual(
      expect.objectContaining({ method: "PATCH", path: `/v1/shapes/${before.cloud.id}`, traceId }),
    );

    // The controller's log lines of that reconcile carry it, with the reconcile id.
    const line = await waitFor("a controller log line in the trace", async () => {
      const found = (await controller.logs()).find(
        (l) => l.trace_id === traceId && l.key === `${ns}/recolor`,
      );
      if (!found) throw new Error(`no log line with trace_id ${traceId} yet`);
      return found;
    });
    const reconcileId = String(line.reconcile_id);
    expect(reconcileId).toBe(reconcile!.attributes["reconcile.id"]);

    // The Event it recorded names the reconcile and the trace.
    const [repaired] = (await stack.kube.eventsFor(ns, "recolor")).filter(
      (e) => e.reason === "RepairedCloudShapeDrift",
    );
    expect(repaired?.metadata.annotations).toMatchObject({
      "shapes.example.com/reconcile-id": reconcileId,
      "shapes.example.com/trace-id": traceId,
    });

    // And `npm run why` tells it, trace id included.
    let story = "";
    const code = await why([`${ns}/recolor`, "--metrics-url", controller.url], {
      out: (text) => (story += text),
      err: (text) => (story += text),
    });
    expect(code).toBe(0);
    expect(story).toContain(traceId);
    expect(story).toContain(reconcileId);
    expect(story).toContain("repair-drift");
    expect(story).toContain('color: "yellow" → "purple"');
  });
});

/** The branches a reconcile span says it took. */
function branches(span: ReceivedSpan): string[] {
  const value = span.attributes["reconcile.branch"];
  return Array.isArray(value) ? value.map(String) : [];
}

/**
 * Every branch of the reconcile, traced (issue 14): through the real Controller, the real Shape plugin and
 * the library's traced ports (library/src/reconcile/traced.ts) over the fake world, with a real
 * OpenTelemetry SDK in memory. Each branch leaves its span: the branches taken and why, the result, and a
 * child span per call, an error with its status code when the call failed.
 */
import { SpanStatusCode } from "@opentelemetry/api";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ExternalResourceReconciler, type ReconcileResult, silentLogger } from "reconcile-kit";
import { Controller, TracedExternalClient, TracedResourceWriter } from "reconcile-kit/parts";
import { type InMemoryTracing, startInMemoryTracing } from "reconcile-kit/testing";
import { ADOPTION_POLICY_ANNOTATION, FINALIZER, PAUSED_ANNOTATION, type Shape } from "./api.ts";
import { CloudError, type CloudShape } from "./cloud/client.ts";
import { FakeWorld, aCloudShape, aShape, converged, ours, readyStatus } from "./testing.ts";

let tracing: InMemoryTracing;
beforeAll(() => {
  tracing = startInMemoryTracing();
});
afterAll(() => tracing.stop());
beforeEach(() => tracing.reset());

/** One reconcile of default/foo in `world`, through a Controller, with traced ports. */
async function reconcile(world: FakeWorld): Promise<ReconcileResult> {
  const deps = world.deps();
  const reconciler = new ExternalResourceReconciler<Shape, CloudShape>({
    ...deps,
    client: new TracedExternalClient(deps.client, deps.plugin.external),
    kube: new TracedResourceWriter(deps.kube, deps.plugin.resource),
  });
  const controller = new Controller({ name: "shape", reconciler, logger: silentLogger() });
  const finished = new Promise<ReconcileResult>((resolve) => controller.onReconciled((_k, r) => resolve(r)));
  controller.enqueue("default/foo");
  controller.start();
  const result = await finished;
  await controller.shutDown();
  return result;
}

interface Case {
  reason: string;
  setup: (world: FakeWorld) => Shape | undefined;
  /** The branches taken, in order (the span's `reconcile.branch`). */
  branches: string[];
  /** A piece of the last branch's why. */
  why: string;
  result: string;
  /** The child spans, in order: `<name> <outcome>`, the outcome being ok or the status code. */
  calls: string[];
}

const cases: Case[] = [
  {
    reason: "gone from the cache: forget it",
    setup: () => undefined,
    branches: ["forget"],
    why: "is gone",
    result: "done",
    calls: [],
  },
  {
    reason: "a new Shape: finalizer, intent record, create, status",
    setup: () => aShape(),
    branches: ["add-finalizer", "record-intent", "create", "in-sync"],
    why: "managed fields match the spec",
    result: "done",
    calls: [
      "add finalizer to Shape ok",
      "create ShapeRef ok",
      "create cloud shape ok",
      "write Shape status ok",
    ],
  },
  {
    reason: "converged: in sync, no call at all",
    setup: (w) => converged(w, aShape({ finalizers: [FINALIZER], status: readyStatus })),
    branches: ["in-sync"],
    why: "nothing to write",
    result: "done",
    calls: [],
  },
  {
    reason: "drift: repaired with one update, and the why names the field",
    setup: (w) =>
      converged(
        w,
        aShape({ finalizers: [FINALIZER], status: readyStatus }),
        aCloudShape({ name: "default.foo", id: "c1", color: "purple", tags: ours }),
      ),
    branches: ["repair-drift"],
    why: 'color: "purple" → "red"',
    result: "done",
    calls: ["update cloud shape ok", "write Shape status ok"],
  },
  {
    reason: "a foreign shape holds the name: left alone, reported, looked at again",
    setup: (w) => {
      w.cloud.set("f1", aCloudShape({ name: "default.foo", id: "f1", tags: { owner: "someone-else" } }));
      return aShape({ finalizers: [FINALIZER] });
    },
    branches: ["record-intent", "create", "leave-foreign"],
    why: "not ours",
    result: "requeueAfter",
    calls: [
      "create ShapeRef ok",
      "create cloud shape 409",
      "read cloud shape by name ok",
      "write Shape status ok",
    ],
  },
  {
    reason: "observe only: a foreign shape read by name and reported, never written",
    setup: (w) => {
      w.cloud.set("f1", aCloudShape({ name: "default.foo", id: "f1", tags: { owner: "someone-else" } }));
      return aShape({ spec: { managementPolicies: ["Observe"] } });
    },
    branches: ["observe-only"],
    why: "never write it",
    result: "requeueAfter",
    calls: ["read cloud shape by name ok", "write Shape status ok"],
  },
  {
    reason: "without Update: drift left alone, and the why names the field",
    setup: (w) =>
      converged(
        w,
        aShape({
          finalizers: [FINALIZER],
          status: readyStatus,
          spec: { managementPolicies: ["Observe", "Create", "Delete"] },
        }),
        aCloudShape({ name: "default.foo", id: "c1", color: "purple", tags: ours }),
      ),
    branches: ["leave-drift"],
    why: 'color: "purple" → "red"',
    result: "done",
    calls: ["write Shape status ok"],
  },
  {
    reason: "adoption on request: a shape with no owner tag is retagged as ours and brought to the spec",
    setup: (w) => {
      w.cloud.set("f1", aCloudShape({ name: "default.foo", id: "f1", color: "blue", tags: {} }));
      return aShape({ finalizers: [FINALIZER], annotations: { [ADOPTION_POLICY_ANNOTATION]: "adopt" } });
    },
    branches: ["record-intent", "look-to-adopt", "adopt-on-request", "in-sync"],
    why: "managed fields match the spec",
    result: "done",
    calls: [
      "create ShapeRef ok",
      "read cloud shape by name ok",
      "update cloud shape ok",
      "write Shape status ok",
    ],
  },
  {
    reason: "adoption on request refused: another owner id holds the name, and the why names it",
    setup: (w) => {
      w.cloud.set("f1", aCloudShape({ name: "default.foo", id: "f1", tags: { owner: "cluster-b" } }));
      return aShape({ finalizers: [FINALIZER], annotations: { [ADOPTION_POLICY_ANNOTATION]: "adopt" } });
    },
    branches: ["record-intent", "look-to-adopt", "refuse-adoption"],
    why: '(owner "cluster-b")',
    result: "requeueAfter",
    calls: ["create ShapeRef ok", "read cloud shape by name ok", "write Shape status ok"],
  },
  {
    reason: "being deleted with policy Delete: delete outside, then the record, then the finalizer",
    setup: (w) => converged(w, aShape({ finalizers: [FINALIZER], deleting: true, status: readyStatus })),
    branches: ["finalize", "delete"],
    why: "deletionPolicy Delete",
    result: "done",
    calls: [
      "read the Shape CRD ok",
      "delete cloud shape ok",
      "delete ShapeRef ok",
      "remove finalizer from Shape ok",
    ],
  },
  {
    reason:
      "being deleted with policy Delete while the Shape CRD is being deleted (an uninstall): release, never delete",
    setup: (w) => {
      w.definition = { uid: "crd", createdAt: "2026-01-01T00:00:00Z", deletingSince: "2026-02-01T00:00:00Z" };
      return converged(w, aShape({ finalizers: [FINALIZER], deleting: true, status: readyStatus }));
    },
    branches: ["finalize", "release-on-uninstall"],
    why: "released, not deleted: the CRD shapes.shapes.example.com is being deleted (uninstall)",
    result: "done",
    calls: [
      "read the Shape CRD ok",
      "release cloud shape ok",
      "delete ShapeRef ok",
      "remove finalizer from Shape ok",
    ],
  },
  {
    reason: "being deleted with policy Orphan: release, never delete",
    setup: (w) =>
      converged(
        w,
        aShape({
          finalizers: [FINALIZER],
          deleting: true,
          spec: { deletionPolicy: "Orphan" },
          status: readyStatus,
        }),
      ),
    branches: ["finalize", "orphan"],
    why: "deletionPolicy Orphan",
    result: "done",
    calls: ["release cloud shape ok", "delete ShapeRef ok", "remove finalizer from Shape ok"],
  },
  {
    reason: "paused: hands off, the condition only",
    setup: (w) =>
      converged(
        w,
        aShape({
          finalizers: [FINALIZER],
          annotations: { [PAUSED_ANNOTATION]: "true" },
          status: readyStatus,
        }),
      ),
    branches: ["paused"],
    why: "annotation is set",
    result: "done",
    calls: ["write Shape status ok"],
  },
  {
    reason: "the cloud refuses the create (503): the call's span is an error with the code, Synced says why",
    setup: (w) => {
      w.cloudFailures.set("create", new CloudError("cannot create cloud shapes: unavailable", 503));
      return aShape({ finalizers: [FINALIZER] });
    },
    branches: ["record-intent", "create", "report-failure"],
    why: "CannotCreateCloudShape",
    result: "failed",
    calls: ["create ShapeRef ok", "create cloud shape 503", "write Shape status ok"],
  },
];

describe("the span of each branch of the Shape reconcile", () => {
  it.each(cases)("$reason", async ({ setup, branches, why, result, calls }) => {
    const world = new FakeWorld();
    const shape = setup(world);
    if (shape) world.shapes.set("default/foo", shape);
    const got = await reconcile(world);
    expect(got.kind).toBe(result);

    const [span] = tracing.named("reconcile shape");
    expect(span?.attributes["reconcile.key"]).toBe("default/foo");
    expect(span?.attributes["reconcile.branch"]).toEqual(branches);
    expect(String((span?.attributes["reconcile.why"] as string[] | undefined)?.at(-1))).toContain(why);
    expect(span?.attributes["reconcile.result"]).toBe(result);
    if (shape) expect(span?.attributes["k8s.resource.generation"]).toBe(shape.metadata.generation ?? 0);
    expect(span?.status.code).toBe(result === "failed" ? SpanStatusCode.ERROR : SpanStatusCode.UNSET);

    const children = tracing
      .spans()
      .filter((s) => s.parentSpanContext?.spanId === span?.spanContext().spanId)
      .sort((a, b) => (a.startTime[0] - b.startTime[0]) * 1e9 + (a.startTime[1] - b.startTime[1]));
    expect(children.map((c) => `${c.name} ${statusOf(c)}`)).toEqual(calls);
    for (const child of children) {
      const failed = child.attributes["http.response.status_code"] !== undefined;
      expect(child.status.code).toBe(failed ? SpanStatusCode.ERROR : SpanStatusCode.UNSET);
    }
  });
});

/** A call span's status code as the table writes it: the code, or `ok` when the call did not fail. */
function statusOf(span: { attributes: Record<string, unknown> }): string {
  const code = span.attributes["http.response.status_code"];
  return typeof code === "number" ? String(code) : "ok";
}

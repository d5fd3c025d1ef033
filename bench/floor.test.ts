import type { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ExternalResourceReconciler, type Json, silentLogger } from "reconcile-kit";
import { KubeEventRecorder, KubeHttp, KubeResourceWriter, leanEventSink } from "reconcile-kit/parts";
import { kubeConnectionOf } from "reconcile-kit/client-node";
import { startTlsApiStub, type TlsApiStub } from "@shapes/envtest";
import type { CloudShape, Shape } from "@shapes/controller";
import { aShape, FakeWorld } from "@shapes/controller/testing";
import {
  BareKubeClient,
  FLOOR_REQUESTS_PER_SHAPE,
  RECONCILE_ID_ANNOTATION,
  addFinalizerRequest,
  cleanUpFloor,
  convergeOverFloor,
  createShapeRefRequest,
  createShapeRequest,
  createdEventRequest,
  createdShapeOf,
  failureOf,
  floorCloudId,
  inParallel,
  shapeStatusRequest,
  writeFloor,
  type CreatedShape,
  type KubeRequest,
} from "./floor.ts";

const NOW = new Date("2026-02-02T00:00:00Z");
const foo: CreatedShape = {
  namespace: "default",
  name: "foo",
  uid: "uid-foo",
  resourceVersion: "100",
  generation: 1,
};
const API = "/apis/shapes.example.com/v1alpha1";

describe("the floor's requests for one Shape", () => {
  test.each<{ reason: string; request: KubeRequest; want: Omit<KubeRequest, "what"> }>([
    {
      reason: "the Shape, as the bench's converge creates it",
      request: createShapeRequest("ns", "shape-00001", { type: "circle", color: "red", size: 7 }),
      want: {
        method: "POST",
        path: `${API}/namespaces/ns/shapes`,
        contentType: "application/json",
        body: {
          apiVersion: "shapes.example.com/v1alpha1",
          kind: "Shape",
          metadata: { name: "shape-00001", namespace: "ns" },
          spec: { type: "circle", color: "red", size: 7 },
        },
      },
    },
    {
      reason: "the finalizer, a merge patch guarded by the resourceVersion the create answered",
      request: addFinalizerRequest(foo),
      want: {
        method: "PATCH",
        path: `${API}/namespaces/default/shapes/foo`,
        contentType: "application/merge-patch+json",
        body: { metadata: { finalizers: ["shapes.example.com/cloud-shape"], resourceVersion: "100" } },
      },
    },
    {
      reason: "the ShapeRef: cluster-scoped, named <namespace>.<name> as the CRD's rules want, no status",
      request: createShapeRefRequest(foo, "k8s-owner"),
      want: {
        method: "POST",
        path: `${API}/shaperefs`,
        contentType: "application/json",
        body: {
          apiVersion: "shapes.example.com/v1alpha1",
          kind: "ShapeRef",
          metadata: { name: "default.foo" },
          spec: {
            shape: { namespace: "default", name: "foo", uid: "uid-foo" },
            cloudName: "default.foo",
            deletionPolicy: "Delete",
            owner: "k8s-owner",
          },
        },
      },
    },
    {
      reason: "the Event, core/v1 in the Shape's namespace, about the Shape as it was read",
      request: createdEventRequest(foo, "shp_0000000000000001", NOW, "0a1b2c3d-1"),
      want: {
        method: "POST",
        path: "/api/v1/namespaces/default/events",
        contentType: "application/json",
        body: {
          metadata: {
            generateName: "foo.",
            namespace: "default",
            annotations: { "shapes.example.com/reconcile-id": "0a1b2c3d-1" },
          },
          involvedObject: {
            apiVersion: "shapes.example.com/v1alpha1",
            kind: "Shape",
            name: "foo",
            namespace: "default",
            uid: "uid-foo",
            resourceVersion: "100",
          },
          type: "Normal",
          reason: "CreatedCloudShape",
          message: "Created cloud shape default.foo (shp_0000000000000001)",
          source: { component: "shapes-controller" },
          firstTimestamp: "2026-02-02T00:00:00.000Z",
          lastTimestamp: "2026-02-02T00:00:00.000Z",
          count: 1,
          reportingComponent: "shapes-controller",
        },
      },
    },
    {
      reason: "the Shape's status: Ready and Synced for generation 1, the cloud id and name",
      request: shapeStatusRequest(foo, "shp_0000000000000001", NOW),
      want: {
        method: "PATCH",
        path: `${API}/namespaces/default/shapes/foo/status`,
        contentType: "application/merge-patch+json",
        body: {
          status: {
            observedGeneration: 1,
            driftRepairs: 0,
            cloudId: "shp_0000000000000001",
            cloudName: "default.foo",
            conditions: [
              {
                type: "Ready",
                status: "True",
                reason: "Available",
                message: "Cloud shape default.foo matches the spec",
                observedGeneration: 1,
                lastTransitionTime: "2026-02-02T00:00:00Z",
              },
              {
                type: "Synced",
                status: "True",
                reason: "ReconcileSuccess",
                message: "The cloud shape matches the spec",
                observedGeneration: 1,
                lastTransitionTime: "2026-02-02T00:00:00Z",
              },
            ],
            lastSyncTime: "2026-02-02T00:00:00Z",
          },
        },
      },
    },
  ])("$reason", ({ request, want }) => {
    const { what, ...onTheWire } = request;
    expect(what).toMatch(/^[a-z]/);
    expect(onTheWire).toEqual(want);
  });

  test("the controller's own reconcile of a new Shape writes the same ShapeRef, status and Event", async () => {
    // The real reconciler and Shape plugin over the controller's in-memory fakes: what it writes for one
    // new Shape, beside what the floor sends for it.
    const world = new FakeWorld("k8s-owner");
    world.shapes.set("default/foo", aShape());
    const reconciler = new ExternalResourceReconciler<Shape, CloudShape>(world.deps());
    expect((await reconciler.reconcile("default/foo", new AbortController().signal)).kind).toBe("done");
    const ref = world.shapeRefs.get("default.foo");
    const status = world.shapes.get("default/foo")?.status;
    const cloudId = status?.cloudId ?? "";
    const body = (r: KubeRequest) => r.body as Record<string, unknown>;

    expect(body(createShapeRefRequest(foo, "k8s-owner")).spec).toEqual(ref?.spec);
    expect(ref?.status).toBeUndefined(); // neither writes the ShapeRef's status
    expect(body(shapeStatusRequest(foo, cloudId, NOW)).status).toEqual(status);
    const event = body(createdEventRequest(foo, cloudId, NOW, "x"));
    expect(world.events).toEqual([{ type: event.type, reason: event.reason, message: event.message }]);
  });

  test.each([
    { reason: "the first Shape", i: 0, want: "shp_0000000000000000" },
    { reason: "hex, 16 digits, as the mock cloud's ids", i: 255, want: "shp_00000000000000ff" },
  ])("a made-up cloud id: $reason", ({ i, want }) => {
    expect(floorCloudId(i)).toBe(want);
  });
});

describe("createdShapeOf", () => {
  test.each<{ reason: string; answer: unknown; want: CreatedShape | RegExp }>([
    {
      reason: "the identity the next requests need",
      answer: { metadata: { namespace: "ns", name: "a", uid: "u", resourceVersion: "7", generation: 1 } },
      want: { namespace: "ns", name: "a", uid: "u", resourceVersion: "7", generation: 1 },
    },
    {
      reason: "no generation: 1, a created object's",
      answer: { metadata: { namespace: "ns", name: "a", uid: "u", resourceVersion: "7" } },
      want: { namespace: "ns", name: "a", uid: "u", resourceVersion: "7", generation: 1 },
    },
    {
      reason: "no uid: it cannot go on",
      answer: { metadata: { namespace: "ns", name: "a", resourceVersion: "7" } },
      want: /^cannot read the created Shape: .*lacks/,
    },
    { reason: "no body at all", answer: undefined, want: /^cannot read the created Shape/ },
  ])("$reason", ({ answer, want }) => {
    if (want instanceof RegExp) expect(() => createdShapeOf(answer)).toThrow(want);
    else expect(createdShapeOf(answer)).toEqual(want);
  });
});

describe("failureOf", () => {
  test.each([
    {
      reason: "the API server's own message, from its Status",
      status: 422,
      text: JSON.stringify({ kind: "Status", code: 422, message: 'ShapeRef "x" is invalid: spec.owner' }),
      want: 'cannot create the ShapeRef x: HTTP 422: ShapeRef "x" is invalid: spec.owner',
    },
    {
      reason: "a body that is not JSON: its start, as it came",
      status: 502,
      text: "Bad Gateway\n",
      want: "cannot create the ShapeRef x: HTTP 502: Bad Gateway",
    },
    { reason: "no body", status: 500, text: "", want: "cannot create the ShapeRef x: HTTP 500" },
  ])("$reason", ({ status, text, want }) => {
    expect(failureOf("create the ShapeRef x", status, text).message).toBe(want);
  });
});

describe("convergeOverFloor", () => {
  test.each([
    { reason: "converge time over floor time", converge: 21_200, floor: 5_300, want: 4 },
    { reason: "no floor measured", converge: 21_200, floor: undefined, want: undefined },
    { reason: "no converge measured", converge: undefined, floor: 5_300, want: undefined },
    { reason: "a zero floor says nothing", converge: 21_200, floor: 0, want: undefined },
  ])("$reason", ({ converge, floor, want }) => {
    expect(convergeOverFloor(converge, floor)).toBe(want);
  });
});

describe("inParallel", () => {
  test("runs every index, never more than `concurrency` at once", async () => {
    let inFlight = 0;
    let most = 0;
    const seen: number[] = [];
    await inParallel(20, 3, async (i) => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 1));
      seen.push(i);
      inFlight--;
    });
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_v, i) => i));
    expect(most).toBe(3);
  });

  test("the first failure stops the rest and is thrown", async () => {
    const seen: number[] = [];
    const run = inParallel(20, 2, async (i) => {
      await Promise.resolve();
      if (i === 3) throw new Error("cannot do 3");
      seen.push(i);
    });
    await expect(run).rejects.toThrow("cannot do 3");
    expect(seen.length).toBeLessThan(19);
  });
});

/**
 * A fake API server over TLS that wants a client certificate, answers like kube-apiserver (a created Shape
 * gets a uid, a resourceVersion and generation 1), records every request, and counts connections and the
 * most requests in flight at once.
 */
interface Seen {
  method: string;
  path: string;
  contentType: string | undefined;
  body: unknown;
  authorized: boolean;
}
let api: TlsApiStub;
const seen: Seen[] = [];
let inFlight = 0;
let mostInFlight = 0;
/** An answer other than the normal one for a path matching it. */
let failing: { path: RegExp; status: number; body: unknown } | undefined;

beforeAll(async () => {
  api = await startTlsApiStub((req, res) => {
    mostInFlight = Math.max(mostInFlight, ++inFlight);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const body: unknown = text ? JSON.parse(text) : undefined;
      const path = req.url ?? "";
      seen.push({
        method: req.method ?? "",
        path,
        contentType: req.headers["content-type"],
        body,
        authorized: (req.socket as { authorized?: boolean }).authorized === true,
      });
      // A moment before answering, so that requests pile up to the client's limit.
      setTimeout(() => {
        inFlight--;
        res.setHeader("content-type", "application/json");
        if (failing?.path.test(path)) {
          res.writeHead(failing.status).end(JSON.stringify(failing.body));
          return;
        }
        const created = /\/namespaces\/([^/]+)\/shapes$/.exec(path);
        if (req.method === "POST" && created) {
          const meta = (body as { metadata: { name: string } }).metadata;
          res.writeHead(201).end(
            JSON.stringify({
              ...(body as object),
              metadata: {
                ...meta,
                namespace: created[1],
                uid: `uid-${meta.name}`,
                resourceVersion: "10",
                generation: 1,
              },
            }),
          );
          return;
        }
        if (req.method === "GET") {
          res.writeHead(200).end(JSON.stringify({ items: [] }));
          return;
        }
        res.writeHead(200).end(JSON.stringify(body ?? {}));
      }, 2);
    });
  });
});

afterAll(() => api.close());

function kubeConfig(): KubeConfig {
  return api.kubeConfig();
}

function reset(): void {
  seen.length = 0;
  api.stats.connections = 0;
  mostInFlight = 0;
  failing = undefined;
}

const wire = (s: Seen) => ({ method: s.method, path: s.path, contentType: s.contentType, body: s.body });
const floorWire = (r: KubeRequest) => ({
  method: r.method,
  path: r.path,
  contentType: r.contentType,
  body: r.body,
});

describe("on the wire", () => {
  test("the floor's requests are the controller's writer's and event recorder's, byte for byte in JSON", async () => {
    reset();
    const plugin = new FakeWorld("k8s-owner").plugin;
    const http = new KubeHttp(kubeConnectionOf(kubeConfig()));
    const writer = new KubeResourceWriter<Shape>(http, plugin.resource);
    const shape = aShape();
    const cloudId = floorCloudId(1);
    const spec = plugin.resource.intentSpec({
      resource: { namespace: "default", name: "foo", uid: "uid-foo" },
      externalName: "default.foo",
      deletionPolicy: "Delete",
      owner: "k8s-owner",
    });
    const status = (shapeStatusRequest(foo, cloudId, NOW).body as { status: Record<string, Json> }).status;
    await writer.addFinalizer(shape);
    await writer.createIntent("default.foo", spec);
    await writer.updateStatus(shape, status);
    new KubeEventRecorder(leanEventSink(http), {
      component: "shapes-controller",
      annotations: () => ({ [RECONCILE_ID_ANNOTATION]: "0a1b2c3d-1" }),
      log: silentLogger(),
    }).record(shape, "Normal", "CreatedCloudShape", `Created cloud shape default.foo (${cloudId})`);
    for (let i = 0; seen.length < 4 && i < 500; i++) await new Promise((r) => setTimeout(r, 10));
    await http.close();

    // The Event's times are the recorder's clock: compared apart.
    const untimed = (x: ReturnType<typeof wire>) => {
      const body = x.body as Record<string, unknown>;
      if (!("firstTimestamp" in body)) return x;
      expect(body.firstTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      return { ...x, body: { ...body, firstTimestamp: "t", lastTimestamp: "t" } };
    };
    expect(seen.map(wire).map(untimed)).toEqual(
      [
        addFinalizerRequest(foo),
        createShapeRefRequest(foo, "k8s-owner"),
        shapeStatusRequest(foo, cloudId, NOW),
        createdEventRequest(foo, cloudId, NOW, "0a1b2c3d-1"),
      ]
        .map(floorWire)
        .map(untimed),
    );
  });

  test("writeFloor: five requests per Shape in the controller's order, `concurrency` at a time, one pool", async () => {
    reset();
    const client = BareKubeClient.of(kubeConfig(), 4);
    const names = Array.from({ length: 12 }, (_v, i) => `shape-${i}`);
    let shapes = 0;
    const timing = await writeFloor({
      client,
      namespace: "floor",
      names,
      specOf: () => ({ type: "circle", color: "red" }),
      ownerId: "k8s-owner",
      concurrency: 4,
      onShape: () => shapes++,
      now: () => NOW,
    });
    client.close();

    expect(timing.requests).toBe(12 * FLOOR_REQUESTS_PER_SHAPE);
    expect(timing.durationMs).toBeGreaterThan(0);
    expect(shapes).toBe(12);
    expect(seen.every((s) => s.authorized)).toBe(true); // the kubeconfig's client certificate
    expect(mostInFlight).toBe(4);
    expect(api.stats.connections).toBeLessThanOrEqual(4); // one keep-alive pool of 4 sockets
    // Everything about shape-7 (no other name holds that text), in the order the server got it.
    const of = (name: string) => seen.filter((s) => JSON.stringify([s.path, s.body]).includes(name));
    expect(of("shape-7").map((s) => `${s.method} ${s.path}`)).toEqual([
      `POST ${API}/namespaces/floor/shapes`,
      `PATCH ${API}/namespaces/floor/shapes/shape-7`,
      `POST ${API}/shaperefs`,
      "POST /api/v1/namespaces/floor/events",
      `PATCH ${API}/namespaces/floor/shapes/shape-7/status`,
    ]);
    // The Shape's identity from the create's answer goes into the next requests.
    expect(of("shape-7")[1]?.body).toEqual({
      metadata: { finalizers: ["shapes.example.com/cloud-shape"], resourceVersion: "10" },
    });
    expect(of("shape-7")[2]?.body).toMatchObject({ spec: { shape: { uid: "uid-shape-7" } } });
  });

  test("writeFloor: an answer that is not 2xx fails the run with the API server's message", async () => {
    reset();
    failing = {
      path: /shapes\/shape-3\/status$/,
      status: 422,
      body: { kind: "Status", code: 422, message: 'Shape.shapes.example.com "shape-3" is invalid' },
    };
    const client = BareKubeClient.of(kubeConfig(), 2);
    const run = writeFloor({
      client,
      namespace: "floor",
      names: Array.from({ length: 10 }, (_v, i) => `shape-${i}`),
      specOf: () => ({ type: "circle", color: "red" }),
      ownerId: "k8s-owner",
      concurrency: 2,
    });
    await expect(run).rejects.toThrow(
      'cannot write the status of the Shape floor/shape-3: HTTP 422: Shape.shapes.example.com "shape-3" is invalid',
    );
    client.close();
    // Nothing new starts after the failure: fewer than all ten Shapes were created.
    expect(seen.filter((s) => s.method === "POST" && s.path.endsWith("/shapes")).length).toBeLessThan(10);
  });

  test("cleanUpFloor: finalizers off, the namespace's Shapes and Events, each ShapeRef, then a check", async () => {
    reset();
    const client = BareKubeClient.of(kubeConfig(), 1);
    await cleanUpFloor(client, "floor", ["a", "b"], 1);
    client.close();
    expect(seen.map((s) => `${s.method} ${s.path} ${JSON.stringify(s.body ?? null)}`)).toEqual([
      `PATCH ${API}/namespaces/floor/shapes/a {"metadata":{"finalizers":null}}`,
      `PATCH ${API}/namespaces/floor/shapes/b {"metadata":{"finalizers":null}}`,
      `DELETE ${API}/namespaces/floor/shapes null`,
      "DELETE /api/v1/namespaces/floor/events null",
      `DELETE ${API}/shaperefs/floor.a null`,
      `DELETE ${API}/shaperefs/floor.b null`,
      `GET ${API}/namespaces/floor/shapes?limit=1 null`,
    ]);
  });
});

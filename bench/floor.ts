/**
 * The floor: what the converge's Kubernetes writes cost the API server on their own. A bare client makes,
 * for each of N Shapes, exactly the requests a converged Shape costs in the controller's run — the bench's
 * create, then the controller's four writes — with the same objects, to the same API server, at the same
 * concurrency, and nothing else: no reconcile logic, no cache, no cloud. Converge time / floor time is the
 * figure that holds on a shared machine (issue "Lean and fast": ≤ 1.25).
 *
 * Per Shape, one after the other (the controller's order; the Event is fire-and-forget there, in line here):
 *
 *   1. POST  shapes                  the Shape (the bench's converge creates it the same way)
 *   2. PATCH shapes                  our finalizer, guarded by the create's resourceVersion (merge patch)
 *   3. POST  shaperefs               the ShapeRef, cluster-scoped, named <namespace>.<name>, phase-less
 *   4. POST  events                  CreatedCloudShape, in the Shape's namespace
 *   5. PATCH shapes/status           Ready and Synced, the cloud id and name (merge patch)
 *
 * The bodies come from the controller's own functions where it has them (the plugin's ShapeRef spec, its
 * Shape status fields, the conditions); the finalizer patch and the Event are built as
 * library/src/reconcile/kube-writer.ts and library/src/kube/events.ts build them (floor.test.ts holds the two side by
 * side). The cloud id is made up (`shp_` and 16 hex digits, the mock cloud's shape): no cloud is called.
 *
 * The client is the leanest one, the controller's own (library/src/kube/kube-http.ts): node:https with ONE keep-alive
 * Agent of `concurrency` sockets, the admin's client certificate, key and CA from the KubeConfig, plain JSON
 * bodies — so converge / floor compares the controller's work, not two clients. `concurrency` Shapes are in flight,
 * each a chain of its requests, so at most `concurrency` requests are. Every answer must be 2xx: anything
 * else fails the run with the API server's own message.
 */
import { randomBytes } from "node:crypto";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  asError,
  KubeApiError,
  KubeHttp,
  MERGE_PATCH,
  ready,
  Reason,
  reasonsFor,
  rfc3339,
  setCondition,
  synced,
} from "reconcile-kit/parts";
import { kubeConnectionOf } from "reconcile-kit/client-node";
import {
  type CloudClient,
  cloudNameOf,
  FINALIZER,
  GROUP,
  shapeRefNameOf,
  SHAPEREFS,
  SHAPES,
  type ShapeSpec,
  shapesPlugin,
  type ShapeStatus,
  VERSION,
} from "@shapes/controller";

/** Requests per Shape: the bench's create and the controller's four writes. */
export const FLOOR_REQUESTS_PER_SHAPE = 5;

/** `source.component` of the controller's Events (controller/src/shapes/setup.ts). */
export const EVENT_COMPONENT = "shapes-controller";

/** The annotation the controller puts on each Event: the reconcile that recorded it (reconcile-scope.ts). */
export const RECONCILE_ID_ANNOTATION = `${GROUP}/reconcile-id`;

const JSON_TYPE = "application/json";
const API = `/apis/${GROUP}/${VERSION}`;

// The plugin's pure parts (the ShapeRef's spec, the Shape's status fields). Its cloud client is only
// used by the list-watch of cloud shapes, which the floor never starts.
const plugin = shapesPlugin({} as Pick<CloudClient, "list" | "watch">).resource;
const reasons = reasonsFor("CloudShape");

/** One request to the API server, as it goes on the wire. */
export interface KubeRequest {
  /** What it does, for an error: "create the Shape bench-floor-x/shape-00001". */
  what: string;
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** The path and query. */
  path: string;
  /** Sent as JSON (`contentType`) when present. */
  body?: unknown;
  /** application/json, or application/merge-patch+json for a patch. */
  contentType?: string;
}

/** What the floor needs of a created Shape: its answer's identity. */
export interface CreatedShape {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  generation: number;
}

/** 1. The Shape, as the bench's converge creates it (bench/workload.ts). */
export function createShapeRequest(namespace: string, name: string, spec: ShapeSpec): KubeRequest {
  return {
    what: `create the Shape ${namespace}/${name}`,
    method: "POST",
    path: `${API}/namespaces/${namespace}/${SHAPES}`,
    contentType: JSON_TYPE,
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: "Shape", metadata: { name, namespace }, spec },
  };
}

/** 2. Our finalizer, guarded by the resourceVersion read (KubeResourceWriter.addFinalizer). */
export function addFinalizerRequest(shape: CreatedShape): KubeRequest {
  return {
    what: `add the finalizer to the Shape ${shape.namespace}/${shape.name}`,
    method: "PATCH",
    path: `${API}/namespaces/${shape.namespace}/${SHAPES}/${shape.name}`,
    contentType: MERGE_PATCH,
    body: { metadata: { finalizers: [FINALIZER], resourceVersion: shape.resourceVersion } },
  };
}

/** 3. The ShapeRef, Pending (no status), before any cloud create (KubeResourceWriter.createIntent). */
export function createShapeRefRequest(shape: CreatedShape, ownerId: string): KubeRequest {
  const { namespace, name, uid } = shape;
  const refName = shapeRefNameOf(namespace, name);
  return {
    what: `create the ShapeRef ${refName}`,
    method: "POST",
    path: `${API}/${SHAPEREFS}`,
    contentType: JSON_TYPE,
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: plugin.intentKind,
      metadata: { name: refName },
      spec: plugin.intentSpec({
        resource: { namespace, name, uid },
        externalName: cloudNameOf(namespace, name),
        deletionPolicy: "Delete",
        owner: ownerId,
      }),
    },
  };
}

/** 4. The Event of the cloud create, as KubeEventRecorder.record writes it (the object as first read). */
export function createdEventRequest(
  shape: CreatedShape,
  cloudId: string,
  now: Date,
  reconcileId: string,
): KubeRequest {
  const { namespace, name, uid, resourceVersion } = shape;
  const time = now.toISOString(); // client-node sends a Date as toISOString()
  return {
    what: `create the Event of the Shape ${namespace}/${name}`,
    method: "POST",
    path: `/api/v1/namespaces/${namespace}/events`,
    contentType: JSON_TYPE,
    body: {
      metadata: {
        generateName: `${name}.`,
        namespace,
        annotations: { [RECONCILE_ID_ANNOTATION]: reconcileId },
      },
      involvedObject: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "Shape",
        name,
        namespace,
        uid,
        resourceVersion,
      },
      type: "Normal",
      reason: reasons.Created,
      message: `Created cloud shape ${cloudNameOf(namespace, name)} (${cloudId})`,
      source: { component: EVENT_COMPONENT },
      firstTimestamp: time,
      lastTimestamp: time,
      count: 1,
      reportingComponent: EVENT_COMPONENT,
    },
  };
}

/** The status the controller writes for a Shape it just converged (the reconciler's #writeStatus). */
export function convergedStatus(shape: CreatedShape, cloudId: string, now: Date): ShapeStatus {
  const cloudName = cloudNameOf(shape.namespace, shape.name);
  let conditions = setCondition(
    [],
    {
      ...ready({
        status: "True",
        reason: Reason.Available,
        message: `Cloud shape ${cloudName} matches the spec`,
      }),
      observedGeneration: shape.generation,
    },
    now,
  );
  conditions = setCondition(
    conditions,
    {
      ...synced({
        status: "True",
        reason: Reason.ReconcileSuccess,
        message: "The cloud shape matches the spec",
      }),
      observedGeneration: shape.generation,
    },
    now,
  );
  return {
    observedGeneration: shape.generation,
    driftRepairs: 0,
    ...(plugin.statusOf({ id: cloudId, name: cloudName }) as Pick<ShapeStatus, "cloudId" | "cloudName">),
    conditions,
    lastSyncTime: rfc3339(now),
  };
}

/** 5. The Shape's status, through the status subresource (KubeResourceWriter.updateStatus). */
export function shapeStatusRequest(shape: CreatedShape, cloudId: string, now: Date): KubeRequest {
  return {
    what: `write the status of the Shape ${shape.namespace}/${shape.name}`,
    method: "PATCH",
    path: `${API}/namespaces/${shape.namespace}/${SHAPES}/${shape.name}/status`,
    contentType: MERGE_PATCH,
    body: { status: convergedStatus(shape, cloudId, now) },
  };
}

/** A cloud id of the mock cloud's shape (`shp_` and 16 hex digits), made up for the i-th Shape. */
export function floorCloudId(i: number): string {
  return `shp_${i.toString(16).padStart(16, "0")}`;
}

/** Reads the identity of a created Shape from the create's answer; throws when it lacks one. */
export function createdShapeOf(answer: unknown): CreatedShape {
  const meta = (answer as { metadata?: Record<string, unknown> } | null)?.metadata ?? {};
  const { namespace, name, uid, resourceVersion, generation } = meta;
  if (
    typeof namespace !== "string" ||
    typeof name !== "string" ||
    typeof uid !== "string" ||
    typeof resourceVersion !== "string"
  ) {
    throw new Error(
      `cannot read the created Shape: its answer lacks metadata.namespace, name, uid or resourceVersion: ${String(JSON.stringify(answer)).slice(0, 200)}`,
    );
  }
  return {
    namespace,
    name,
    uid,
    resourceVersion,
    generation: typeof generation === "number" ? generation : 1,
  };
}

/** The error of an answer that is not 2xx: the API server's own message (its Status), or the body's start. */
export function failureOf(what: string, status: number, text: string): Error {
  let message = text.trim().slice(0, 300);
  try {
    const body = JSON.parse(text) as { kind?: unknown; message?: unknown };
    if (typeof body.message === "string" && body.message !== "") message = body.message;
  } catch {
    // not JSON: the text as it came
  }
  return new Error(`cannot ${what}: HTTP ${status}${message ? `: ${message}` : ""}`);
}

/** converge time / floor time: how far above the floor the controller converges; undefined without both. */
export function convergeOverFloor(
  convergeMs: number | undefined,
  floorMs: number | undefined,
): number | undefined {
  if (convergeMs === undefined || floorMs === undefined || !(floorMs > 0)) return undefined;
  return convergeMs / floorMs;
}

/**
 * The leanest client of an API server — the controller's own (library/src/kube/kube-http.ts: one keep-alive pool, plain
 * JSON) — with the floor's errors: each names what the request was for, and a refusal carries the API server's
 * message ({@link failureOf}).
 */
export class BareKubeClient {
  readonly #http: KubeHttp;

  private constructor(http: KubeHttp) {
    this.#http = http;
  }

  /**
   * A client of the KubeConfig's current cluster as its current user (its CA, client certificate and key, or
   * a bearer token) on ONE keep-alive pool of `maxSockets` sockets.
   */
  static of(kubeConfig: KubeConfig, maxSockets: number, timeoutMs = 60_000): BareKubeClient {
    if (!kubeConfig.getCurrentCluster()?.server)
      throw new Error("cannot make a bare client: the kubeconfig has no current cluster");
    return new BareKubeClient(new KubeHttp(kubeConnectionOf(kubeConfig), { maxSockets, timeoutMs }));
  }

  /** Sends one request; resolves with the answer's JSON (undefined when empty), rejects unless 2xx. */
  async send(req: KubeRequest): Promise<unknown> {
    try {
      return await this.#http.request(req.method, req.path, req.body, req.contentType ?? JSON_TYPE);
    } catch (error) {
      if (error instanceof KubeApiError) throw failureOf(req.what, error.code, error.body);
      throw asError(error, `cannot ${req.what}`);
    }
  }

  /** Closes the pool's sockets. */
  close(): void {
    void this.#http.close();
  }
}

/** What {@link writeFloor} writes. */
export interface FloorWrite {
  client: BareKubeClient;
  /** The floor's own namespace (created by the caller; the controller must not be running). */
  namespace: string;
  /** The N Shapes: the converge's names and specs. */
  names: readonly string[];
  specOf: (name: string) => ShapeSpec;
  /** The owner id the controller would stamp (ShapeRef spec.owner). */
  ownerId: string;
  /** Shapes in flight; the client's pool should have as many sockets. */
  concurrency: number;
  /** Called after each Shape's last request (progress). */
  onShape?: () => void;
  now?: () => Date;
}

/** How long the floor took. */
export interface FloorTiming {
  /** From the first request to the last answer. */
  durationMs: number;
  /** Requests made, all 2xx: N × {@link FLOOR_REQUESTS_PER_SHAPE}. */
  requests: number;
}

/**
 * Makes each Shape's requests in order, `concurrency` Shapes at a time, and times the whole. The first
 * failure stops every chain (none starts a next request) and is thrown once they all stopped.
 */
export async function writeFloor(w: FloorWrite): Promise<FloorTiming> {
  const now = w.now ?? (() => new Date());
  // As the controller's reconcile ids: a process part, then a counter (library/src/observability/reconcile-scope.ts).
  const process = randomBytes(4).toString("hex");
  let requests = 0;
  let stopped = false;
  const send = async (req: KubeRequest) => {
    if (stopped) throw new Error(`cannot ${req.what}: stopped by an earlier failure`);
    try {
      const answer = await w.client.send(req);
      requests++;
      return answer;
    } catch (error) {
      stopped = true;
      throw error;
    }
  };
  const start = performance.now();
  await inParallel(w.names.length, w.concurrency, async (i) => {
    const name = w.names[i] as string;
    const cloudId = floorCloudId(i);
    const shape = createdShapeOf(await send(createShapeRequest(w.namespace, name, w.specOf(name))));
    await send(addFinalizerRequest(shape));
    await send(createShapeRefRequest(shape, w.ownerId));
    await send(createdEventRequest(shape, cloudId, now(), `${process}-${i.toString(36)}`));
    await send(shapeStatusRequest(shape, cloudId, now()));
    w.onShape?.();
  });
  return { durationMs: performance.now() - start, requests };
}

/**
 * Removes what {@link writeFloor} made, so that the controller started next finds nothing of it: each
 * Shape's finalizer (N patches), then the namespace's Shapes and Events (two collection deletes), and each
 * ShapeRef by name (N deletes); then checks that no Shape is left. The namespace stays, empty (a local
 * control plane has no namespace controller to finish deleting one).
 */
export async function cleanUpFloor(
  client: BareKubeClient,
  namespace: string,
  names: readonly string[],
  concurrency: number,
): Promise<void> {
  await inParallel(names.length, concurrency, async (i) => {
    const name = names[i] as string;
    await client.send({
      what: `remove the finalizer of the Shape ${namespace}/${name}`,
      method: "PATCH",
      path: `${API}/namespaces/${namespace}/${SHAPES}/${name}`,
      contentType: MERGE_PATCH,
      body: { metadata: { finalizers: null } },
    });
  });
  await client.send({
    what: `delete the Shapes of ${namespace}`,
    method: "DELETE",
    path: `${API}/namespaces/${namespace}/${SHAPES}`,
  });
  await client.send({
    what: `delete the Events of ${namespace}`,
    method: "DELETE",
    path: `/api/v1/namespaces/${namespace}/events`,
  });
  await inParallel(names.length, concurrency, async (i) => {
    const refName = shapeRefNameOf(namespace, names[i] as string);
    await client.send({
      what: `delete the ShapeRef ${refName}`,
      method: "DELETE",
      path: `${API}/${SHAPEREFS}/${refName}`,
    });
  });
  const left = (await client.send({
    what: `list the Shapes left in ${namespace}`,
    method: "GET",
    path: `${API}/namespaces/${namespace}/${SHAPES}?limit=1`,
  })) as { items?: unknown[] } | undefined;
  if ((left?.items?.length ?? 0) > 0)
    throw new Error(`cannot clean up the floor: Shapes are left in ${namespace}`);
}

/**
 * Calls `fn` for 0 … count-1, `concurrency` at a time, each worker taking the next index when its call
 * ended. The first failure stops them all (none takes a next index) and is thrown once every call ended.
 */
export async function inParallel(
  count: number,
  concurrency: number,
  fn: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: Error | undefined;
  const worker = async () => {
    while (failure === undefined && next < count) {
      const i = next++;
      try {
        await fn(i);
      } catch (error) {
        failure ??= error instanceof Error ? error : new Error(`cannot go on: ${JSON.stringify(error)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  if (failure !== undefined) throw failure;
}

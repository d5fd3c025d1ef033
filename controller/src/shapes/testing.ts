/**
 * In-memory fakes for the table tests of the Shapes plugin over the external-resource library: a tiny
 * "world" holding Shapes, ShapeRefs and cloud shapes. It is the library's Kubernetes side itself (a
 * {@link ResourceWriter} of Shapes), gives the caches as {@link Lister}s (the ShapeRefs read through the
 * plugin's `readIntent`, as the real intent lister does), and a fake cloud API that the real plugin
 * (`shapesPlugin`) and the real cloud client adapter (`cloudShapesClient`) wrap, so the plugin's code runs in
 * every test. Every write, on either side, is recorded in `calls`.
 */
import type { IntentRecord, ManagedStatus } from "../../../library/src/reconcile/contract.ts";
import type { ResourceWriter } from "../../../library/src/kube/kube-writer.ts";
import type { Counters, EventRecorder, Lister } from "../../../library/src/reconcile/ports.ts";
import type { ReconcilerDeps } from "../../../library/src/reconcile/reconciler.ts";
import type { Json } from "../../../library/src/reconcile/diff.ts";
import { silentLogger } from "../../../library/src/observability/logger.ts";
import { FINALIZER, TAG_OWNER, type Shape, type ShapeRef, type ShapeStatus } from "./api.ts";
import {
  CloudError,
  type CloudClient,
  type CloudShape,
  type CloudShapeInput,
  type CloudShapePatch,
} from "./cloud/client.ts";
import { cloudShapesClient, shapesPlugin } from "./plugin.ts";

/** A Shape for tests: `default/foo`, uid `uid-foo`, a red square, generation 1. */
export function aShape(
  overrides: {
    name?: string;
    uid?: string;
    spec?: Partial<Shape["spec"]>;
    status?: ShapeStatus;
    generation?: number;
    finalizers?: string[];
    deleting?: boolean;
    annotations?: Record<string, string>;
  } = {},
): Shape {
  const name = overrides.name ?? "foo";
  return {
    apiVersion: "shapes.example.com/v1alpha1",
    kind: "Shape",
    metadata: {
      name,
      namespace: "default",
      uid: overrides.uid ?? `uid-${name}`,
      generation: overrides.generation ?? 1,
      resourceVersion: "100",
      ...(overrides.finalizers ? { finalizers: overrides.finalizers } : {}),
      ...(overrides.deleting ? { deletionTimestamp: new Date("2026-01-01T00:00:00Z") } : {}),
      ...(overrides.annotations ? { annotations: overrides.annotations } : {}),
    },
    spec: { type: "square", color: "red", ...overrides.spec },
    ...(overrides.status ? { status: overrides.status } : {}),
  };
}

/** A cloud shape for tests. */
export function aCloudShape(overrides: Partial<CloudShape> & { name: string }): CloudShape {
  return {
    id: `id-${overrides.name}`,
    type: "square",
    color: "red",
    tags: {},
    revision: 1,
    createdAt: "2026-01-01T00:00:00Z",
    updatedAt: "2026-01-01T00:00:00Z",
    ...overrides,
  };
}

/** An error as client-node's ApiException carries it: an HTTP status in `code`. */
export function kubeError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** The cloud calls the fake cloud answers: those the plugin, the client adapter and the observer make. */
export type FakeCloudApi = Pick<
  CloudClient,
  "get" | "getByName" | "list" | "watch" | "create" | "patch" | "delete"
>;

/**
 * The fake world. `calls` lists every write, in the order made, e.g. `cloud.create default.foo`,
 * `kube.addFinalizer`, and every cloud read (`cloud.getByName default.foo`, `cloud.get c1`, `cloud.list
 * {...}`); the Kubernetes live reads (readResource, readIntent) are not listed. The intent-record writes are named after the ShapeRef they write:
 * `kube.createShapeRef <name>`, `kube.updateShapeRefSpec <name> <spec>`, `kube.setShapeRefPhase <name>
 * <phase>`, `kube.deleteShapeRef <name>`.
 */
export class FakeWorld implements ResourceWriter<Shape> {
  readonly shapes = new Map<string, Shape>();
  readonly shapeRefs = new Map<string, ShapeRef>();
  /** Cloud shapes by id. */
  readonly cloud = new Map<string, CloudShape>();
  /** Cloud shapes (by id) the cache does NOT show yet (a lagging list-watch). */
  readonly hiddenFromCache = new Set<string>();
  readonly calls: string[] = [];
  readonly events: { type: string; reason: string; message: string }[] = [];
  readonly counts = {
    driftRepaired: 0,
    leaksRemoved: { intent: 0, sweep: 0 },
    foreignSeen: 0,
    adopted: 0,
  };
  /** Make the next cloud call of this verb (get, getByName, list, create, patch, delete) fail with this error. */
  readonly cloudFailures = new Map<string, CloudError>();
  /** Make the next call of this ResourceWriter method fail with this error (see {@link kubeError}). */
  readonly kubeFailures = new Map<keyof ResourceWriter<Shape>, Error>();
  #revision = 10;
  #nextId = 1;
  #nextRefUid = 1;

  readonly ownerId: string;
  /** The fake cloud API; the plugin and the client adapter below wrap it. */
  readonly cloudApi: FakeCloudApi;
  /** The real Shape plugin, its list-watch over the fake cloud. */
  readonly plugin: ReturnType<typeof shapesPlugin>;
  /** The real client adapter (`cloudShapesClient`) over the fake cloud. */
  readonly client: ReturnType<typeof cloudShapesClient>;

  constructor(ownerId = "k8s") {
    this.ownerId = ownerId;
    this.cloudApi = this.#fakeCloud();
    this.plugin = shapesPlugin(this.cloudApi);
    this.client = cloudShapesClient(this.cloudApi);
  }

  /** The Shape cache, keyed `namespace/name`. */
  get resources(): Lister<Shape> {
    return { get: (key) => this.shapes.get(key), list: () => [...this.shapes.values()] };
  }

  /** The ShapeRef cache as the library reads it: every ShapeRef through the plugin's `readIntent`. */
  get intents(): Lister<IntentRecord> {
    const read = (ref: ShapeRef) => this.plugin.resource.readIntent(ref);
    return {
      get: (name) => {
        const ref = this.shapeRefs.get(name);
        return ref && read(ref);
      },
      list: () => [...this.shapeRefs.values()].map(read),
    };
  }

  /** The list-watch cache: the cloud shapes carrying our owner tag, by cloud name, less the hidden ones. */
  get cache(): Lister<CloudShape> {
    const visible = () =>
      [...this.cloud.values()].filter(
        (s) => s.tags[TAG_OWNER] === this.ownerId && !this.hiddenFromCache.has(s.id),
      );
    return { get: (name) => visible().find((s) => s.name === name), list: visible };
  }

  get eventSink(): EventRecorder {
    return { record: (_o, type, reason, message) => this.events.push({ type, reason, message }) };
  }

  get counters(): Counters {
    return {
      driftRepaired: () => this.counts.driftRepaired++,
      leakRemoved: (kind) => this.counts.leaksRemoved[kind]++,
      foreignSeen: () => this.counts.foreignSeen++,
      adopted: () => this.counts.adopted++,
    };
  }

  /**
   * The dependencies of the library's reconcilers, wired to this world. The intent reconciler and the sweep
   * take a subset of them.
   */
  deps(): ReconcilerDeps<Shape, CloudShape> & { now: () => Date } {
    return {
      plugin: this.plugin,
      resources: this.resources,
      intents: this.intents,
      cache: this.cache,
      client: this.client,
      kube: this,
      events: this.eventSink,
      counters: this.counters,
      ownerId: this.ownerId,
      now: () => new Date("2026-02-02T00:00:00Z"),
      log: silentLogger(),
    };
  }

  // The Kubernetes side: a ResourceWriter of Shapes. Every method fails like the API server does (a
  // rejected promise with `code`), and only once per injected failure.

  addFinalizer(shape: Shape): Promise<string | undefined> {
    return request(() => {
      this.#kube("addFinalizer", "kube.addFinalizer");
      this.#updateShape(shape, (c) => ({
        ...c,
        metadata: { ...c.metadata, finalizers: [...(c.metadata.finalizers ?? []), FINALIZER] },
      }));
      return undefined;
    });
  }

  removeFinalizer(shape: Shape): Promise<void> {
    return request(() => {
      this.#kube("removeFinalizer", "kube.removeFinalizer");
      this.#updateShape(shape, (c) => ({
        ...c,
        metadata: { ...c.metadata, finalizers: (c.metadata.finalizers ?? []).filter((f) => f !== FINALIZER) },
      }));
      // The last finalizer of a Shape being deleted: the API server deletes it.
      const cur = this.shapes.get(keyOf(shape));
      if (cur?.metadata.deletionTimestamp && !cur.metadata.finalizers?.length)
        this.shapes.delete(keyOf(shape));
    });
  }

  updateStatus(shape: Shape, status: ManagedStatus): Promise<void> {
    return request(() => {
      this.#kube("updateStatus", "kube.updateStatus");
      this.#updateShape(shape, (c) => ({ ...c, status }));
    });
  }

  createIntent(name: string, spec: Record<string, Json>): Promise<void> {
    return request(() => {
      this.#kube("createIntent", `kube.createShapeRef ${name}`);
      if (this.shapeRefs.has(name)) throw kubeError(409, `shaperefs "${name}" already exists`);
      // Like the API server: it gives a uid, and takes no status on create (no phase yet means Pending).
      this.shapeRefs.set(name, {
        apiVersion: "shapes.example.com/v1alpha1",
        kind: "ShapeRef",
        metadata: { name, uid: `ref-uid-${this.#nextRefUid++}` },
        spec: spec as unknown as ShapeRef["spec"],
      });
    });
  }

  updateIntentSpec(name: string, spec: Record<string, Json>): Promise<void> {
    return request(() => {
      this.#kube("updateIntentSpec", `kube.updateShapeRefSpec ${name} ${JSON.stringify(spec)}`);
      const ref = this.shapeRefs.get(name);
      if (!ref) throw kubeError(404, `shaperefs "${name}" not found`);
      this.shapeRefs.set(name, { ...ref, spec: { ...ref.spec, ...(spec as Partial<ShapeRef["spec"]>) } });
    });
  }

  setIntentStatus(name: string, status: Record<string, Json>): Promise<void> {
    return request(() => {
      const { phase } = status as ShapeRef["status"] & {};
      this.#kube("setIntentStatus", `kube.setShapeRefPhase ${name} ${phase ?? ""}`);
      const ref = this.shapeRefs.get(name);
      if (!ref) throw kubeError(404, `shaperefs "${name}" not found`);
      this.shapeRefs.set(name, { ...ref, status: { ...ref.status, ...(status as ShapeRef["status"]) } });
    });
  }

  deleteIntent(name: string, uid?: string): Promise<void> {
    return request(() => {
      this.#kube("deleteIntent", `kube.deleteShapeRef ${name}`);
      // Like the API server's delete precondition: only the object with this uid (a fixture without one
      // reads as "", as the plugin's readIntent gives it). A newer record, or none, counts as done.
      if (uid !== undefined && (this.shapeRefs.get(name)?.metadata.uid ?? "") !== uid) return;
      this.shapeRefs.delete(name);
    });
  }

  readResource(namespace: string, name: string): Promise<Shape | undefined> {
    return request(() => {
      this.#kube("readResource");
      return this.shapes.get(`${namespace}/${name}`);
    });
  }

  readIntent(name: string): Promise<IntentRecord | undefined> {
    return request(() => {
      this.#kube("readIntent");
      const ref = this.shapeRefs.get(name);
      return ref && this.plugin.resource.readIntent(ref);
    });
  }

  /** Records `call` (writes only), then fails if a failure was injected for `method`. */
  #kube(method: keyof ResourceWriter<Shape>, call?: string): void {
    if (call) this.calls.push(call);
    const err = this.kubeFailures.get(method);
    if (err) {
      this.kubeFailures.delete(method);
      throw err;
    }
  }

  #updateShape(shape: Shape, f: (cur: Shape) => Shape): void {
    const cur = this.shapes.get(keyOf(shape));
    if (!cur) throw kubeError(404, `shapes "${shape.metadata.name}" not found`);
    this.shapes.set(keyOf(shape), f(cur));
  }

  #failCloud(verb: string): void {
    const err = this.cloudFailures.get(verb);
    if (err) {
      this.cloudFailures.delete(verb);
      throw err;
    }
  }

  /** The fake cloud: the world's `cloud` map behind the CloudClient calls, each answering like a request. */
  #fakeCloud(): FakeCloudApi {
    return {
      get: (id: string) =>
        request(() => {
          this.calls.push(`cloud.get ${id}`);
          this.#failCloud("get");
          const shape = this.cloud.get(id);
          if (!shape) throw new CloudError("not found", 404);
          return shape;
        }),
      getByName: (name: string) =>
        request(() => {
          this.calls.push(`cloud.getByName ${name}`);
          this.#failCloud("getByName");
          // Reads the cloud itself, not the cache: hiddenFromCache does not hide a shape from it.
          return [...this.cloud.values()].find((s) => s.name === name);
        }),
      list: (query: { tags?: Record<string, string> }) =>
        request(() => {
          this.calls.push(`cloud.list ${JSON.stringify(query.tags ?? {})}`);
          this.#failCloud("list");
          const items = [...this.cloud.values()].filter((s) =>
            Object.entries(query.tags ?? {}).every(([k, v]) => s.tags[k] === v),
          );
          return { items, revision: this.#revision };
        }),
      // No change feed in unit tests: a watch that never delivers, until aborted.
      watch: (_since: number, _onEvent: unknown, signal: AbortSignal) =>
        new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true })),
      create: (input: CloudShapeInput) =>
        request(() => {
          this.calls.push(`cloud.create ${input.name}`);
          this.#failCloud("create");
          const holder = [...this.cloud.values()].find((s) => s.name === input.name);
          if (holder) throw new CloudError("cannot create: name taken", 409, { existingId: holder.id });
          const shape = aCloudShape({ ...input, id: `cloud-${this.#nextId++}`, revision: ++this.#revision });
          this.cloud.set(shape.id, shape);
          return shape;
        }),
      patch: (id: string, patch: CloudShapePatch, ifMatch?: number) =>
        request(() => {
          this.calls.push(`cloud.patch ${id} ${JSON.stringify(patch)}`);
          this.#failCloud("patch");
          const shape = this.cloud.get(id);
          if (!shape) throw new CloudError("not found", 404);
          if (ifMatch !== undefined && ifMatch !== shape.revision) throw new CloudError("precondition", 412);
          const tags: Record<string, string> = { ...shape.tags };
          for (const [k, v] of Object.entries(patch.tags ?? {})) {
            if (v === null) delete tags[k];
            else tags[k] = v;
          }
          const { tags: _t, size, ...rest } = patch;
          const next: CloudShape = { ...shape, ...rest, tags, revision: ++this.#revision };
          const sized =
            size === null ? (({ size: _s, ...r }) => r)(next) : size === undefined ? next : { ...next, size };
          this.cloud.set(id, sized);
          return sized;
        }),
      delete: (id: string, ifMatch?: number) =>
        request(() => {
          this.calls.push(`cloud.delete ${id}`);
          this.#failCloud("delete");
          const shape = this.cloud.get(id);
          if (!shape) throw new CloudError("not found", 404);
          if (ifMatch !== undefined && ifMatch !== shape.revision) throw new CloudError("precondition", 412);
          this.cloud.delete(id);
        }),
    };
  }
}

const keyOf = (s: Shape) => `${s.metadata.namespace}/${s.metadata.name}`;

/** Runs `f` as a request answers: its result resolves, its throw rejects (never a synchronous throw). */
function request<T>(f: () => T): Promise<T> {
  try {
    return Promise.resolve(f());
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

/** The tags of the cloud shape of `default/foo` (uid `uid-foo`) in a world with owner id `k8s`. */
export const ours = { owner: "k8s", "k8s-uid": "uid-foo", "k8s-name": "default/foo" };
/**
 * `shape` converged: its cloud shape (c1 unless given) and its ShapeRef in `world` — with a Created status, as
 * a controller running with --record-cloud-id (or an older version) leaves it; the default writes none.
 */
export const converged = (
  world: FakeWorld,
  shape: Shape,
  cloud = aCloudShape({ name: "default.foo", id: "c1", tags: ours }),
) => {
  world.cloud.set(cloud.id, cloud);
  world.shapeRefs.set("default.foo", {
    metadata: { name: "default.foo" },
    spec: {
      shape: { namespace: "default", name: "foo", uid: "uid-foo" },
      cloudName: "default.foo",
      owner: "k8s",
    },
    status: { phase: "Created", cloudId: cloud.id },
  });
  return shape;
};
/** The status of a converged `default/foo`. */
export const readyStatus = {
  observedGeneration: 1,
  cloudId: "c1",
  cloudName: "default.foo",
  driftRepairs: 0,
  lastSyncTime: "2026-01-01T00:00:00Z",
  conditions: [
    {
      type: "Ready",
      status: "True" as const,
      observedGeneration: 1,
      reason: "Available",
      message: "Cloud shape default.foo matches the spec",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    },
    {
      type: "Synced",
      status: "True" as const,
      observedGeneration: 1,
      reason: "ReconcileSuccess",
      // Was "The cloud matches the spec": the library names the external kind (design change 4).
      message: "The cloud shape matches the spec",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    },
  ],
};

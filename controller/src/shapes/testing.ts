/**
 * In-memory fakes for the table tests of the Shapes plugin over the external-resource library: a tiny
 * "world" holding Shapes, ShapeRefs and cloud shapes. Its Kubernetes side is the library's in-memory one
 * (reconcile-kit/testing's `InMemoryWorld`: a ResourceWriter of Shapes, the caches as listers); here is a
 * fake cloud API that the real plugin (`shapesPlugin`) and the real cloud client adapter (`cloudShapesClient`)
 * wrap, so the plugin's code runs in every test. Every write, on either side, is recorded in `calls`.
 */
import { deletionPolicyOf, type DeletionPolicy, type ExternalCache } from "reconcile-kit";
import { InMemoryWorld, asRequest, kubeError } from "reconcile-kit/testing";
import { TAG_OWNER, TAG_UID, type Shape, type ShapeRef, type ShapeStatus } from "./api.ts";
import {
  CloudError,
  type CloudClient,
  type CloudShape,
  type CloudShapeInput,
  type CloudShapePatch,
} from "./cloud/client.ts";
import { cloudShapesClient, shapesPlugin } from "./plugin.ts";

export { kubeError };

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

/** The cloud calls the fake cloud answers: those the plugin, the client adapter and the observer make. */
export type FakeCloudApi = Pick<
  CloudClient,
  "get" | "getByName" | "list" | "watch" | "create" | "patch" | "delete"
>;

/**
 * The fake world. `calls` lists every write, in the order made, e.g. `cloud.create default.foo`,
 * `kube.addFinalizer`, and every cloud read (`cloud.getByName default.foo`, `cloud.get c1`, `cloud.list
 * {...}`); the Kubernetes live reads (readResource, readIntent) are not listed. The intent-record writes are
 * named after the ShapeRef they write: `kube.createShapeRef <name>`, `kube.updateShapeRefSpec <name> <spec>`,
 * `kube.deleteShapeRef <name>`.
 */
export class FakeWorld extends InMemoryWorld<Shape, CloudShape, ShapeRef> {
  /** Cloud shapes by id. */
  readonly cloud = new Map<string, CloudShape>();
  /** Cloud shapes (by id) the cache does NOT show yet (a lagging list-watch). */
  readonly hiddenFromCache = new Set<string>();
  /** Make the next cloud call of this verb (get, getByName, list, create, patch, delete) fail with this error. */
  readonly cloudFailures = new Map<string, CloudError>();
  #revision = 10;
  #nextId = 1;

  /** The fake cloud API; the plugin and the client adapter below wrap it. */
  readonly cloudApi: FakeCloudApi;
  /** The real Shape plugin, its list-watch over the fake cloud. */
  readonly plugin: ReturnType<typeof shapesPlugin>;
  /** The real client adapter (`cloudShapesClient`) over the fake cloud. */
  readonly client: ReturnType<typeof cloudShapesClient>;

  constructor(ownerId = "k8s") {
    super(ownerId);
    this.cloudApi = this.#fakeCloud();
    this.plugin = shapesPlugin(this.cloudApi);
    this.client = cloudShapesClient(this.cloudApi);
  }

  /** The Shapes the API server holds (and the cache shows), by `namespace/name`. */
  get shapes(): Map<string, Shape> {
    return this.resourceObjects;
  }

  /** The ShapeRefs the API server holds (and the cache shows), by name. */
  get shapeRefs(): Map<string, ShapeRef> {
    return this.intentObjects;
  }

  /** The list-watch cache: the cloud shapes carrying our owner tag, by cloud name, less the hidden ones. */
  get cache(): ExternalCache<CloudShape> {
    const visible = () =>
      [...this.cloud.values()].filter(
        (s) => s.tags[TAG_OWNER] === this.ownerId && !this.hiddenFromCache.has(s.id),
      );
    return {
      get: (name) => visible().find((s) => s.name === name),
      list: visible,
      withUid: (uid) => visible().filter((s) => s.tags[TAG_UID] === uid),
    };
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
        asRequest(() => {
          this.calls.push(`cloud.get ${id}`);
          this.#failCloud("get");
          const shape = this.cloud.get(id);
          if (!shape) throw new CloudError("not found", 404);
          return shape;
        }),
      getByName: (name: string) =>
        asRequest(() => {
          this.calls.push(`cloud.getByName ${name}`);
          this.#failCloud("getByName");
          // Reads the cloud itself, not the cache: hiddenFromCache does not hide a shape from it.
          return [...this.cloud.values()].find((s) => s.name === name);
        }),
      list: (query: { tags?: Record<string, string> }) =>
        asRequest(() => {
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
        asRequest(() => {
          this.calls.push(`cloud.create ${input.name}`);
          this.#failCloud("create");
          const holder = [...this.cloud.values()].find((s) => s.name === input.name);
          if (holder) throw new CloudError("cannot create: name taken", 409, { existingId: holder.id });
          const shape = aCloudShape({ ...input, id: `cloud-${this.#nextId++}`, revision: ++this.#revision });
          this.cloud.set(shape.id, shape);
          return shape;
        }),
      patch: (id: string, patch: CloudShapePatch, ifMatch?: number) =>
        asRequest(() => {
          this.calls.push(`cloud.patch ${id} ${JSON.stringify(patch)}`);
          this.#failCloud("patch");
          const shape = this.cloud.get(id);
          if (!shape) throw new CloudError("not found", 404);
          if (ifMatch !== undefined && ifMatch !== shape.revision) throw new CloudError("precondition", 412);
          const holder = [...this.cloud.values()].find((s) => s.name === patch.name && s.id !== id);
          if (holder) throw new CloudError("cannot rename: name taken", 409, { existingId: holder.id });
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
        asRequest(() => {
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

/** The tags of the cloud shape of `default/foo` (uid `uid-foo`) in a world with owner id `k8s`. */
export const ours = { owner: "k8s", "k8s-uid": "uid-foo", "k8s-name": "default/foo" };
/**
 * `shape` converged: its cloud shape (c1 unless given) and its ShapeRef in `world` — with a Created status, as
 * an older controller version left it (today's writes none). The ShapeRef says the Shape's deletion policy, as
 * its reconciles kept it, unless `recorded` says another: the policy changed since.
 */
export const converged = (
  world: FakeWorld,
  shape: Shape,
  cloud = aCloudShape({ name: "default.foo", id: "c1", tags: ours }),
  recorded: DeletionPolicy = deletionPolicyOf(shape),
) => {
  world.cloud.set(cloud.id, cloud);
  world.shapeRefs.set("default.foo", {
    metadata: { name: "default.foo" },
    spec: {
      shape: { namespace: "default", name: "foo", uid: "uid-foo" },
      cloudName: "default.foo",
      // Absent reads as Delete, as a ShapeRef from before the field does.
      ...(recorded === "Orphan" ? { deletionPolicy: recorded } : {}),
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

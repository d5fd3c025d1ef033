/**
 * In-memory fakes of the reconcilers' ports, for table tests: a tiny "world" holding Shapes, ShapeRefs
 * and cloud shapes, whose writers change the world and record every call.
 */
import { silentLogger } from "../core/logger.ts";
import type { Shape, ShapeRef, ShapeRefPhase, ShapeRefSpec, ShapeStatus } from "./api.ts";
import { CloudError, type CloudShape, type CloudShapeInput, type CloudShapePatch } from "./cloud/client.ts";
import type { CloudCache, CloudWriter, EventSink, Lister, ShapeCounters, ShapeWriter } from "./ports.ts";

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

/** The fake world. `calls` lists every write, e.g. `cloud.create default.foo`, `kube.addFinalizer`. */
export class FakeWorld {
  readonly shapes = new Map<string, Shape>();
  readonly shapeRefs = new Map<string, ShapeRef>();
  readonly cloud = new Map<string, CloudShape>();
  /** Cloud shapes the cache does NOT show yet (a lagging list-watch). */
  readonly hiddenFromCache = new Set<string>();
  readonly calls: string[] = [];
  readonly events: { type: string; reason: string; message: string }[] = [];
  readonly counts = { driftRepaired: 0, leaksRemoved: 0, foreignSeen: 0, adopted: 0 };
  /** Make the next cloud call of this verb fail with this error. */
  readonly cloudFailures = new Map<string, CloudError>();
  #revision = 10;
  #nextId = 1;

  readonly ownerId: string;

  constructor(ownerId = "k8s") {
    this.ownerId = ownerId;
  }

  lister<T>(map: Map<string, T>): Lister<T> {
    return { get: (key) => map.get(key), list: () => [...map.values()] };
  }

  get cloudCache(): CloudCache {
    const visible = () =>
      [...this.cloud.values()].filter(
        (s) => s.tags.owner === this.ownerId && !this.hiddenFromCache.has(s.id),
      );
    return { byName: (name) => visible().find((s) => s.name === name), list: visible };
  }

  #fail(verb: string): void {
    const err = this.cloudFailures.get(verb);
    if (err) {
      this.cloudFailures.delete(verb);
      throw err;
    }
  }

  get cloudWriter(): CloudWriter {
    return {
      create: (input: CloudShapeInput) => {
        this.calls.push(`cloud.create ${input.name}`);
        this.#fail("create");
        const holder = [...this.cloud.values()].find((s) => s.name === input.name);
        if (holder)
          return Promise.reject(new CloudError("cannot create: name taken", 409, { existingId: holder.id }));
        const shape = aCloudShape({ ...input, id: `cloud-${this.#nextId++}`, revision: ++this.#revision });
        this.cloud.set(shape.id, shape);
        return Promise.resolve(shape);
      },
      get: (id: string) => {
        this.calls.push(`cloud.get ${id}`);
        this.#fail("get");
        const shape = this.cloud.get(id);
        return shape ? Promise.resolve(shape) : Promise.reject(new CloudError("not found", 404));
      },
      getByName: (name: string) => {
        this.calls.push(`cloud.getByName ${name}`);
        this.#fail("getByName");
        // Reads the cloud itself, not the cache: hiddenFromCache does not hide a shape from it.
        return Promise.resolve([...this.cloud.values()].find((s) => s.name === name));
      },
      patch: (id: string, patch: CloudShapePatch, ifMatch?: number) => {
        this.calls.push(`cloud.patch ${id} ${JSON.stringify(patch)}`);
        this.#fail("patch");
        const shape = this.cloud.get(id);
        if (!shape) return Promise.reject(new CloudError("not found", 404));
        if (ifMatch !== undefined && ifMatch !== shape.revision)
          return Promise.reject(new CloudError("precondition", 412));
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
        return Promise.resolve(sized);
      },
      delete: (id: string) => {
        this.calls.push(`cloud.delete ${id}`);
        this.#fail("delete");
        if (!this.cloud.delete(id)) return Promise.reject(new CloudError("not found", 404));
        return Promise.resolve();
      },
    };
  }

  get kube(): ShapeWriter {
    const key = (s: Shape) => `${s.metadata.namespace}/${s.metadata.name}`;
    const update = (s: Shape, f: (cur: Shape) => Shape) => {
      const cur = this.shapes.get(key(s));
      if (!cur) throw Object.assign(new Error("not found"), { code: 404 });
      this.shapes.set(key(s), f(cur));
    };
    return {
      addFinalizer: (s) => {
        this.calls.push("kube.addFinalizer");
        update(s, (c) => ({
          ...c,
          metadata: {
            ...c.metadata,
            finalizers: [...(c.metadata.finalizers ?? []), "shapes.example.com/cloud-shape"],
          },
        }));
        return Promise.resolve();
      },
      removeFinalizer: (s) => {
        this.calls.push("kube.removeFinalizer");
        update(s, (c) => ({
          ...c,
          metadata: {
            ...c.metadata,
            finalizers: (c.metadata.finalizers ?? []).filter((f) => f !== "shapes.example.com/cloud-shape"),
          },
        }));
        const cur = this.shapes.get(key(s));
        if (cur?.metadata.deletionTimestamp && !cur.metadata.finalizers?.length) this.shapes.delete(key(s));
        return Promise.resolve();
      },
      updateStatus: (s, status) => {
        this.calls.push("kube.updateStatus");
        update(s, (c) => ({ ...c, status }));
        return Promise.resolve();
      },
      createShapeRef: (ref) => {
        this.calls.push(`kube.createShapeRef ${ref.metadata.name}`);
        if (this.shapeRefs.has(ref.metadata.name))
          return Promise.reject(Object.assign(new Error("exists"), { code: 409 }));
        this.shapeRefs.set(ref.metadata.name, {
          apiVersion: "shapes.example.com/v1alpha1",
          kind: "ShapeRef",
          ...ref, // like the API server: status is not taken on create (no phase yet means Pending)
        });
        return Promise.resolve();
      },
      updateShapeRefSpec: (name: string, fields: Pick<ShapeRefSpec, "deletionPolicy" | "owner">) => {
        this.calls.push(`kube.updateShapeRefSpec ${name} ${JSON.stringify(fields)}`);
        const ref = this.shapeRefs.get(name);
        if (!ref) return Promise.reject(Object.assign(new Error("not found"), { code: 404 }));
        this.shapeRefs.set(name, { ...ref, spec: { ...ref.spec, ...fields } });
        return Promise.resolve();
      },
      setShapeRefPhase: (name: string, phase: ShapeRefPhase, cloudId?: string) => {
        this.calls.push(`kube.setShapeRefPhase ${name} ${phase}`);
        const ref = this.shapeRefs.get(name);
        if (!ref) return Promise.reject(Object.assign(new Error("not found"), { code: 404 }));
        this.shapeRefs.set(name, {
          ...ref,
          status: { ...ref.status, phase, ...(cloudId ? { cloudId } : {}) },
        });
        return Promise.resolve();
      },
      deleteShapeRef: (name, uid) => {
        this.calls.push(`kube.deleteShapeRef ${name}`);
        // Like the API server's delete precondition: only the object with this uid.
        if (uid !== undefined && this.shapeRefs.get(name)?.metadata.uid !== uid) return Promise.resolve();
        this.shapeRefs.delete(name);
        return Promise.resolve();
      },
      readShape: (namespace, name) => Promise.resolve(this.shapes.get(`${namespace}/${name}`)),
      readShapeRef: (name) => Promise.resolve(this.shapeRefs.get(name)),
    };
  }

  get eventSink(): EventSink {
    return { record: (_o, type, reason, message) => this.events.push({ type, reason, message }) };
  }

  get counters(): ShapeCounters {
    return {
      driftRepaired: () => this.counts.driftRepaired++,
      leakRemoved: () => this.counts.leaksRemoved++,
      foreignSeen: () => this.counts.foreignSeen++,
      adopted: () => this.counts.adopted++,
    };
  }

  /** The dependencies every shapes reconciler takes, wired to this world. */
  deps() {
    return {
      shapes: this.lister(this.shapes),
      shapeRefs: this.lister(this.shapeRefs),
      cloudCache: this.cloudCache,
      cloud: this.cloudWriter,
      kube: this.kube,
      events: this.eventSink,
      counters: this.counters,
      ownerId: this.ownerId,
      now: () => new Date("2026-02-02T00:00:00Z"),
      log: silentLogger(),
    };
  }
}

/**
 * The Kubernetes side of a plugin's table tests, in memory: a {@link ResourceWriter} over maps of resources
 * and intent records, the caches as {@link Lister}s (the intent records read through the plugin's
 * `readIntent`, as the real intent lister does), the event sink and the counters. A plugin's test world
 * extends it with its external API (the Shapes' fake cloud in controller/src/shapes/testing.ts; the
 * library's own fake plugin in fake-plugin.ts). Every write, on either side, is recorded in `calls`.
 */
import type { KubernetesObject, V1ObjectMeta } from "@kubernetes/client-node";
import { definitionNameOf, type ResourceDefinition, type ResourceWriter } from "../reconcile/kube-writer.ts";
import { silentLogger } from "../observability/logger.ts";
import type {
  ExternalClient,
  ExternalResourcePlugin,
  IntentRecord,
  ManagedResource,
  ManagedStatus,
} from "../reconcile/contract.ts";
import type { Json } from "../reconcile/diff.ts";
import type { Counters, EventRecorder, ExternalCache, Lister } from "../reconcile/ports.ts";
import type { ReconcilerDeps } from "../reconcile/reconciler.ts";
import type { ReconcileResult } from "../queue/result.ts";
import { OwnWrites } from "../source/own-writes.ts";

/** An intent record as the API server keeps it: a cluster-scoped object with a spec and a status. */
export type IntentObject = KubernetesObject & { metadata: V1ObjectMeta & { name: string }; spec: object };

/** An error as client-node's ApiException carries it: an HTTP status in `code`. */
export function kubeError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** A result as a table row writes it: `done`, `requeueAfter:5000`, `failed`, `failed:3000` (a Retry-After). */
export function resultSummary(got: ReconcileResult): string {
  if (got.kind === "requeueAfter") return `requeueAfter:${got.afterMs}`;
  if (got.kind === "failed" && got.retryAfterMs !== undefined) return `failed:${got.retryAfterMs}`;
  return got.kind;
}

/** Runs `f` as a request answers: its result resolves, its throw rejects (never a synchronous throw). */
export function asRequest<T>(f: () => T): Promise<T> {
  try {
    return Promise.resolve(f());
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

/**
 * The Kubernetes side of a plugin's table tests, in memory: a ResourceWriter over maps of resources and
 * intent records, the caches as Listers (the intent records read through the plugin's `readIntent`), the
 * event sink and the counters; a plugin's test world extends it with its external API. `calls` lists every write, in the order made, e.g. `kube.addFinalizer`; the
 * intent-record writes are named after the plugin's intent kind, e.g. for ShapeRef: `kube.createShapeRef
 * <name>`, `kube.updateShapeRefSpec <name> <spec>`, `kube.deleteShapeRef <name>`; the live reads
 * (readResource, readIntent, readDefinition) are not listed.
 */
export abstract class InMemoryWorld<
  R extends ManagedResource,
  E,
  I extends IntentObject,
> implements ResourceWriter<R> {
  /** The resources the API server holds, by `namespace/name`; also the resource cache. */
  readonly resourceObjects = new Map<string, R>();
  /** The intent records the API server holds, by name; also the intent cache. */
  readonly intentObjects = new Map<string, I>();
  /** Every write in order, on either side (see the class comment). */
  readonly calls: string[] = [];
  /** The Kubernetes Events the reconcilers recorded, in order. */
  readonly events: { type: string; reason: string; message: string }[] = [];
  /** What the reconcilers counted through {@link InMemoryWorld.counters}. */
  readonly counts = {
    driftRepaired: 0,
    leaksRemoved: { intent: 0, sweep: 0 },
    foreignSeen: 0,
    adopted: 0,
  };
  /**
   * The resource's CustomResourceDefinition as the API server holds it (`readDefinition`): present and not
   * being deleted by default. Set `deletingSince` for an uninstall, or undefined for a CRD that is gone.
   */
  definition: Omit<ResourceDefinition, "name"> | undefined;
  /** How many times the CRD was read (`readDefinition`): the live reads are not in `calls`. */
  definitionReads = 0;
  /** Make the next call of this ResourceWriter method fail with this error (see {@link kubeError}). */
  readonly kubeFailures = new Map<keyof ResourceWriter<R>, Error>();
  /** The owner id the reconcilers stamp and look for. */
  readonly ownerId: string;
  /** The plugin under test. */
  abstract readonly plugin: ExternalResourcePlugin<R, E>;
  /** Its external client, over the world's fake external API. */
  abstract readonly client: ExternalClient<E>;
  /** The list-watch cache of the external objects that carry our owner mark. */
  abstract get cache(): ExternalCache<E>;
  #nextIntentUid = 1;

  constructor(ownerId: string) {
    this.ownerId = ownerId;
    this.definition = { uid: "crd-uid", createdAt: "2026-01-01T00:00:00Z" };
  }

  /** The resource cache, keyed `namespace/name`. */
  get resources(): Lister<R> {
    return { get: (key) => this.resourceObjects.get(key), list: () => [...this.resourceObjects.values()] };
  }

  /** The intent cache as the library reads it: every record through the plugin's `readIntent`. */
  get intents(): Lister<IntentRecord> {
    const read = (obj: I) => this.plugin.resource.readIntent(obj);
    return {
      get: (name) => {
        const obj = this.intentObjects.get(name);
        return obj && read(obj);
      },
      list: () => [...this.intentObjects.values()].map(read),
    };
  }

  /** The event recorder of the reconcilers: into {@link InMemoryWorld.events}. */
  get eventSink(): EventRecorder {
    return { record: (_o, type, reason, message) => this.events.push({ type, reason, message }) };
  }

  /** The counters of the reconcilers: into {@link InMemoryWorld.counts}. */
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
  deps(): ReconcilerDeps<R, E> & { now: () => Date } {
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
      echoes: { resources: new OwnWrites(), external: new OwnWrites() },
      now: () => new Date("2026-02-02T00:00:00Z"),
      log: silentLogger(),
    };
  }

  // The ResourceWriter. Every method fails like the API server does (a rejected promise with `code`), and
  // only once per injected failure.

  /** Adds the plugin's finalizer to the stored resource (`kube.addFinalizer`); 404 when it is gone. */
  addFinalizer(resource: R): Promise<string | undefined> {
    return asRequest(() => {
      this.#kube("addFinalizer", "kube.addFinalizer");
      const finalizer = this.plugin.resource.finalizer;
      this.#updateResource(resource, (c) => ({
        ...c,
        metadata: { ...c.metadata, finalizers: [...(c.metadata.finalizers ?? []), finalizer] },
      }));
      return undefined;
    });
  }

  /**
   * Removes the plugin's finalizer (`kube.removeFinalizer`); a resource being deleted with no finalizer left
   * is gone, as the API server deletes it.
   */
  removeFinalizer(resource: R): Promise<void> {
    return asRequest(() => {
      this.#kube("removeFinalizer", "kube.removeFinalizer");
      const finalizer = this.plugin.resource.finalizer;
      this.#updateResource(resource, (c) => ({
        ...c,
        metadata: { ...c.metadata, finalizers: (c.metadata.finalizers ?? []).filter((f) => f !== finalizer) },
      }));
      // The last finalizer of a resource being deleted: the API server deletes it.
      const cur = this.resourceObjects.get(keyOf(resource));
      if (cur?.metadata.deletionTimestamp && !cur.metadata.finalizers?.length)
        this.resourceObjects.delete(keyOf(resource));
    });
  }

  /** Replaces the stored resource's status (`kube.updateStatus`); 404 when it is gone. */
  updateStatus(resource: R, status: ManagedStatus): Promise<void> {
    return asRequest(() => {
      this.#kube("updateStatus", "kube.updateStatus");
      this.#updateResource(resource, (c) => ({ ...c, status }));
    });
  }

  /** Creates the intent record `name` with a uid and no status; 409 when it exists. */
  createIntent(name: string, spec: Record<string, Json>): Promise<void> {
    return asRequest(() => {
      const { group, version, intentKind, intentPlural } = this.plugin.resource;
      this.#kube("createIntent", `kube.create${intentKind} ${name}`);
      if (this.intentObjects.has(name)) throw kubeError(409, `${intentPlural} "${name}" already exists`);
      // Like the API server: it gives a uid, and takes no status on create (no phase yet means Pending).
      const created: IntentObject = {
        apiVersion: `${group}/${version}`,
        kind: intentKind,
        metadata: { name, uid: `ref-uid-${this.#nextIntentUid++}` },
        spec,
      };
      this.intentObjects.set(name, created as I);
    });
  }

  /** Merges `spec` into the intent record's spec; 404 when it is gone. */
  updateIntentSpec(name: string, spec: Record<string, Json>): Promise<void> {
    return asRequest(() => {
      this.#kube(
        "updateIntentSpec",
        `kube.update${this.plugin.resource.intentKind}Spec ${name} ${JSON.stringify(spec)}`,
      );
      const obj = this.#intent(name);
      this.intentObjects.set(name, { ...obj, spec: { ...obj.spec, ...spec } });
    });
  }

  /** Deletes the intent record `name` (only the one with `uid`, when given); none is done, not an error. */
  deleteIntent(name: string, uid?: string): Promise<void> {
    return asRequest(() => {
      this.#kube("deleteIntent", `kube.delete${this.plugin.resource.intentKind} ${name}`);
      // Like the API server's delete precondition: only the object with this uid (a fixture without one
      // reads as "", as a plugin's readIntent gives it). A newer record, or none, counts as done.
      if (uid !== undefined && (this.intentObjects.get(name)?.metadata.uid ?? "") !== uid) return;
      this.intentObjects.delete(name);
    });
  }

  /** The stored resource, a live read (not in `calls`); undefined when gone. */
  readResource(namespace: string, name: string): Promise<R | undefined> {
    return asRequest(() => {
      this.#kube("readResource");
      return this.resourceObjects.get(`${namespace}/${name}`);
    });
  }

  /** The intent record through the plugin's `readIntent`, with its creation time when it has one. */
  readIntent(name: string): Promise<IntentRecord | undefined> {
    return asRequest(() => {
      this.#kube("readIntent");
      const obj = this.intentObjects.get(name);
      if (!obj) return undefined;
      // As the real live read: the creation time the API server gave (a fixture's, here), when it has one.
      const created: unknown = obj.metadata.creationTimestamp;
      const createdAt = created instanceof Date ? created.toISOString() : (created as string | undefined);
      return { ...this.plugin.resource.readIntent(obj), ...(createdAt === undefined ? {} : { createdAt }) };
    });
  }

  /** The CRD as {@link InMemoryWorld.definition} says (counted in `definitionReads`). */
  readDefinition(): Promise<ResourceDefinition | undefined> {
    return asRequest(() => {
      this.#kube("readDefinition");
      this.definitionReads++;
      return this.definition && { ...this.definition, name: definitionNameOf(this.plugin.resource) };
    });
  }

  /** Records `call` (writes only), then fails if a failure was injected for `method`. */
  #kube(method: keyof ResourceWriter<R>, call?: string): void {
    if (call) this.calls.push(call);
    const err = this.kubeFailures.get(method);
    if (err) {
      this.kubeFailures.delete(method);
      throw err;
    }
  }

  #intent(name: string): I {
    const obj = this.intentObjects.get(name);
    if (!obj) throw kubeError(404, `${this.plugin.resource.intentPlural} "${name}" not found`);
    return obj;
  }

  #updateResource(resource: R, f: (cur: R) => R): void {
    const cur = this.resourceObjects.get(keyOf(resource));
    if (!cur) throw kubeError(404, `${this.plugin.resource.plural} "${resource.metadata.name}" not found`);
    this.resourceObjects.set(keyOf(resource), f(cur));
  }
}

const keyOf = (r: ManagedResource) => `${r.metadata.namespace}/${r.metadata.name}`;

/**
 * The ports of the shapes reconcilers: what they read (caches) and what they write (Kubernetes, cloud,
 * events). Real adapters live in kube.ts and cloud/; the table tests use in-memory fakes.
 */
import type { CloudShape, CloudShapeInput, CloudShapePatch } from "./cloud/client.ts";
import type { Shape, ShapeRef, ShapeRefPhase, ShapeRefSpec, ShapeStatus } from "./api.ts";

/** Read-only view of an informer cache. Objects are frozen: never mutate them. */
export interface Lister<T> {
  /** The cached object with this key (`namespace/name`, or `name` when cluster-scoped), if any. */
  get(key: string): T | undefined;
  /** Every cached object. */
  list(): readonly T[];
}

/** Read-only view of the cloud cache: the shapes that carry OUR owner tag, by cloud name. */
export interface CloudCache {
  /** The owned cloud shape with this name, as last seen by the list-watch. */
  byName(name: string): CloudShape | undefined;
  /** Every owned cloud shape. */
  list(): readonly CloudShape[];
}

/**
 * How the Shape reconciler observes ITS cloud shape. Called once per reconcile, before any cloud write.
 * Never writes. The default reads the list-watch cache (no request at all); the per-object variant makes one
 * GET per reconcile, as most external-resource controllers do (a benchmark ablation: see cloud/observers.ts).
 */
export interface CloudObserver {
  /** The cloud shape named `name` that carries our owner tag, as far as this observer knows, or undefined. */
  observe(shape: Shape, name: string, signal: AbortSignal): Promise<CloudShape | undefined>;
}

/** The cloud calls the reconcilers make. Each is one request; errors are `CloudError`. */
export interface CloudWriter {
  create(input: CloudShapeInput, signal?: AbortSignal): Promise<CloudShape>;
  get(id: string, signal?: AbortSignal): Promise<CloudShape>;
  /**
   * The cloud shape holding `name` (any owner), or undefined when none does. One request, and a consistent
   * read that never trails (unlike the list-watch cache): for deciding whether a create whose answer was
   * lost (a crash before the id was recorded) took place.
   */
  getByName(name: string, signal?: AbortSignal): Promise<CloudShape | undefined>;
  patch(
    id: string,
    patch: CloudShapePatch,
    ifMatchRevision?: number,
    signal?: AbortSignal,
  ): Promise<CloudShape>;
  delete(id: string, ifMatchRevision?: number, signal?: AbortSignal): Promise<void>;
}

/**
 * The Kubernetes writes of the shapes reconcilers. Every method is one API call that either succeeds
 * or throws (a `KubeError`-like error with `code`); none retries by itself.
 */
export interface ShapeWriter {
  /** Adds our finalizer; fails with 409 when the Shape changed since `shape` was read. */
  addFinalizer(shape: Shape): Promise<void>;
  /** Removes our finalizer, guarded by resourceVersion (409 when it changed). */
  removeFinalizer(shape: Shape): Promise<void>;
  /** Replaces `status` through the status subresource. */
  updateStatus(shape: Shape, status: ShapeStatus): Promise<void>;
  /** Creates a ShapeRef in phase Pending; 409 when one with the same name exists. */
  createShapeRef(ref: Pick<ShapeRef, "metadata" | "spec">): Promise<void>;
  /**
   * Sets the fields a ShapeRef keeps current for its Shape (its deletionPolicy, our owner id), by merge patch
   * of exactly the fields given. Called only when they differ from the ShapeRef's, so a converged Shape costs
   * no write.
   */
  updateShapeRefSpec(name: string, fields: Pick<ShapeRefSpec, "deletionPolicy" | "owner">): Promise<void>;
  /** Sets a ShapeRef's phase (and cloud id in spec when given). */
  setShapeRefPhase(name: string, phase: ShapeRefPhase, cloudId?: string): Promise<void>;
  /**
   * Deletes a ShapeRef; an absent one counts as done. With `uid` (the ShapeRef's own metadata.uid, as it was
   * read) only that object is deleted, atomically (a delete precondition): a newer ShapeRef that took the
   * name since is left alone, which also counts as done. A decision made on a stale cache then cannot
   * delete another Shape's intent record.
   */
  deleteShapeRef(name: string, uid?: string): Promise<void>;
  /** A live read of a Shape (not the cache), for the last check before a destructive action. */
  readShape(namespace: string, name: string): Promise<Shape | undefined>;
  /** A live read of a ShapeRef. */
  readShapeRef(name: string): Promise<ShapeRef | undefined>;
}

/** Events come through the core recorder (fire-and-forget, deduplicated). */
export type { EventRecorder as EventSink } from "../core/events.ts";

/** What the reconcilers count (metrics); every method is cheap and never throws. */
export interface ShapeCounters {
  driftRepaired(): void;
  leakRemoved(kind: "shaperef" | "sweep"): void;
  /** A foreign cloud shape was met where we needed one (it holds our name); it was left untouched. */
  foreignSeen(): void;
  /** A cloud shape of ours under an earlier owner id (`from`) was retagged to our current one. */
  adopted(from: string): void;
}

/**
 * The ShapeRef reconciler: finds the leaks a missed deletion leaves behind.
 *
 * Every cloud shape we create has a ShapeRef, written BEFORE the create. When a Shape disappears without
 * our finalizer running (the controller was down and someone stripped the finalizer), its ShapeRef is
 * left dangling: the one durable trace that a cloud shape of ours may still exist. This reconciler
 * deletes that cloud shape — or, when the Shape's deletionPolicy (which the ShapeRef keeps) was Orphan,
 * strips our owner tags and leaves it — then the ShapeRef.
 */
import type { Logger } from "../core/logger.ts";
import { done, failed, type ReconcileResult, type Reconciler } from "../core/result.ts";
import { RELEASE_PATCH, type Shape, type ShapeRef } from "./api.ts";
import { CloudError } from "./cloud/client.ts";
import { asError, retryAfterOf } from "./errors.ts";
import { findOwnedCloudShape } from "./shape-reconciler.ts";
import type { CloudCache, CloudWriter, Lister, ShapeCounters, ShapeWriter } from "./ports.ts";

/** Everything the ShapeRef reconciler reads and writes. */
export interface ShapeRefReconcilerDeps {
  shapes: Lister<Shape>;
  shapeRefs: Lister<ShapeRef>;
  cloudCache: CloudCache;
  cloud: CloudWriter;
  kube: ShapeWriter;
  counters: ShapeCounters;
  /**
   * Our owner id (the `owner` tag): a cloud shape that only a live read finds (the cache trails its create)
   * is taken as ours only when it carries this tag, or one of `adoptOwnerIds`, and the ShapeRef's uid.
   */
  ownerId: string;
  /** Owner ids we used before (an upgrade): their shapes with the ShapeRef's uid are ours too. */
  adoptOwnerIds?: readonly string[];
  log: Logger;
}

/** Reconciles one ShapeRef, keyed by its name. */
export class ShapeRefReconciler implements Reconciler {
  readonly #d: ShapeRefReconcilerDeps;

  constructor(deps: ShapeRefReconcilerDeps) {
    this.#d = deps;
  }

  async reconcile(name: string, signal: AbortSignal): Promise<ReconcileResult> {
    const ref = this.#d.shapeRefs.get(name);
    // Already gone: nothing left to guard.
    if (!ref) return done();

    // Its Shape is alive (same uid): the Shape reconciler owns this ShapeRef.
    const { namespace, name: shapeName, uid } = ref.spec.shape;
    if (this.#d.shapes.get(`${namespace}/${shapeName}`)?.metadata.uid === uid) return done();

    // It looks dangling, but caches trail: confirm both sides with live reads before anything destructive.
    const live = await this.#d.kube.readShape(namespace, shapeName);
    if (live?.metadata.uid === uid) return done();
    const liveRef = await this.#d.kube.readShapeRef(name);
    // Already deleted (the finalizer did it, faster than our cache saw), or the name now holds a newer
    // ShapeRef: either way this one is no leak, and the newer one is not ours to judge from this key's past.
    if (!liveRef || liveRef.metadata.uid !== ref.metadata.uid) return done();

    // A leak: the Shape was deleted (or replaced by a new one with another uid) without our finalizer.
    // Do what its finalizer would have done: delete the cloud shape, or — deletionPolicy Orphan — strip
    // our owner tags and leave it. (Phase Orphaned: the finalizer already let it go.)
    const orphan = liveRef.spec.deletionPolicy === "Orphan";
    if (liveRef.status?.phase !== "Orphaned") {
      try {
        const cloud = await findOwnedCloudShape(
          this.#d,
          liveRef.spec.cloudName,
          liveRef.spec.shape.uid,
          signal,
        );
        if (cloud && orphan) {
          await this.#d.cloud.patch(cloud.id, RELEASE_PATCH, cloud.revision, signal);
        } else if (cloud) {
          await this.#d.cloud.delete(cloud.id, cloud.revision, signal);
        }
      } catch (err) {
        // 404: someone deleted it first: nothing left to delete or to let go.
        if (!(err instanceof CloudError && err.isNotFound)) {
          const action = orphan ? "orphan" : "delete";
          return failed(
            asError(err, `cannot ${action} leaked cloud shape ${ref.spec.cloudName}`),
            retryAfterOf(err),
          );
        }
      }
    }
    await this.#d.kube.deleteShapeRef(name, liveRef.metadata.uid);
    this.#d.counters.leakRemoved("shaperef");
    this.#d.log.info(
      {
        shapeRef: name,
        shape: `${namespace}/${shapeName}`,
        uid,
        deletionPolicy: orphan ? "Orphan" : "Delete",
      },
      orphan
        ? "let go of a cloud shape left by a missed deletion (deletionPolicy Orphan)"
        : "removed a leak left by a missed deletion",
    );
    return done();
  }
}

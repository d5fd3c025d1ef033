/**
 * The cloud sweep: the last safety net against leaks.
 *
 * A cloud shape carrying OUR owner tag, claimed by neither a live Shape (same uid) nor a ShapeRef, is a
 * leak (e.g. a crash between the cloud create and any bookkeeping, then the Shape deleted by hand). After a
 * grace period, and a live re-check, it is deleted. A shape whose owner tag is not EXACTLY our owner id is
 * never deleted here, whatever else it carries (our uid tag, our name): the cloud cache only holds ours, and
 * the sweep checks the tag again, because an owner id shared by two clusters is how one cluster's sweep
 * deletes the other's shapes.
 */
import type { Logger } from "../core/logger.ts";
import { done, failed, requeueAfter, type ReconcileResult, type Reconciler } from "../core/result.ts";
import { TAG_OWNER, TAG_UID, shapeOfCloudName, type Shape, type ShapeName, type ShapeRef } from "./api.ts";
import { CloudError } from "./cloud/client.ts";
import { asError, retryAfterOf } from "./errors.ts";
import type { CloudCache, CloudWriter, Lister, ShapeCounters, ShapeWriter } from "./ports.ts";

/** Everything the sweep reads and writes. */
export interface CloudSweepDeps {
  shapes: Lister<Shape>;
  shapeRefs: Lister<ShapeRef>;
  cloudCache: CloudCache;
  cloud: CloudWriter;
  kube: ShapeWriter;
  counters: ShapeCounters;
  /** Our owner id: only a shape whose `owner` tag is exactly this is ever swept. */
  ownerId: string;
  /** How long an unclaimed shape must stay unclaimed before it is deleted (default 60 s). */
  graceMs?: number;
  now?: () => Date;
  log: Logger;
}

/** Reconciles one owned cloud shape, keyed by its cloud name. */
export class CloudSweep implements Reconciler {
  readonly #d: CloudSweepDeps;
  readonly #now: () => number;
  /** When we first saw each name unclaimed (our own clock: no trust in the cloud's timestamps). */
  readonly #unclaimedSince = new Map<string, number>();

  constructor(deps: CloudSweepDeps) {
    this.#d = deps;
    const now = deps.now;
    this.#now = now ? () => now().getTime() : Date.now;
  }

  async reconcile(name: string, signal: AbortSignal): Promise<ReconcileResult> {
    const cloud = this.#d.cloudCache.byName(name);
    // Gone, or not ours (exactly our owner id; an earlier id of ours is adopted, never swept): nothing to sweep.
    if (cloud?.tags[TAG_OWNER] !== this.#d.ownerId) return this.#forget(name);

    const uid = cloud.tags[TAG_UID];
    // The Shape it would belong to, by the deterministic name (the k8s-name tag is anyone's to edit).
    const owner = shapeOfCloudName(name);
    // Claimed by a live Shape or by a ShapeRef (whose own reconciler decides): not a leak.
    if (this.#claimed(owner, name, uid)) return this.#forget(name);

    // Unclaimed. A create may be in flight (its bookkeeping not yet in our caches): wait out the grace period.
    const grace = this.#d.graceMs ?? 60_000;
    const since = this.#unclaimedSince.get(name) ?? this.#now();
    this.#unclaimedSince.set(name, since);
    const waited = this.#now() - since;
    if (waited < grace) return requeueAfter(grace - waited);

    // Still unclaimed: confirm with live reads, then delete, guarded by revision (a concurrent adopt wins).
    if (await this.#claimedLive(owner, name, uid)) return this.#forget(name);
    try {
      await this.#d.cloud.delete(cloud.id, cloud.revision, signal);
    } catch (err) {
      if (!(err instanceof CloudError && (err.isNotFound || err.isPreconditionFailed))) {
        return failed(asError(err, `cannot delete leaked cloud shape ${name}`), retryAfterOf(err));
      }
      // 404: already gone. 412: it changed meanwhile; the change feed brings it back for another look.
      return this.#forget(name);
    }
    this.#d.counters.leakRemoved("sweep");
    this.#d.log.info({ cloudName: name, id: cloud.id, uid }, "removed a leaked cloud shape nothing claims");
    return this.#forget(name);
  }

  #claimed(owner: ShapeName | undefined, name: string, uid: string | undefined): boolean {
    if (uid === undefined) return false;
    const shape = owner && this.#d.shapes.get(`${owner.namespace}/${owner.name}`);
    return shape?.metadata.uid === uid || this.#d.shapeRefs.get(name)?.spec.shape.uid === uid;
  }

  async #claimedLive(owner: ShapeName | undefined, name: string, uid: string | undefined): Promise<boolean> {
    if (uid === undefined) return false;
    const shape = owner && (await this.#d.kube.readShape(owner.namespace, owner.name));
    if (shape?.metadata.uid === uid) return true;
    const ref = await this.#d.kube.readShapeRef(name);
    return ref?.spec.shape.uid === uid;
  }

  #forget(name: string): ReconcileResult {
    this.#unclaimedSince.delete(name);
    return done();
  }
}

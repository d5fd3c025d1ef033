/**
 * The Shape reconciler: makes the cloud hold exactly the shape a Shape describes, and reports what it saw.
 *
 * It reads as the story (../shared/seeds/004): finalizer first, intent record (ShapeRef) before the cloud
 * create, observe by deterministic name, create or adopt what is ours, never touch what is not, repair
 * drift, report status only when it changed. Deletion runs the same story backwards.
 */
import type { Logger } from "../core/logger.ts";
import { done, failed, requeueAfter, type ReconcileResult, type Reconciler } from "../core/result.ts";
import { deepEqual, diffManaged, mergePatchFor, type Json } from "../core/diff.ts";
import {
  FINALIZER,
  PAUSED_ANNOTATION,
  RELEASE_PATCH,
  TAG_NAME,
  TAG_OWNER,
  TAG_UID,
  cloudNameOf,
  shapeRefNameOf,
  type DeletionPolicy,
  type Shape,
  type ShapeRef,
  type ShapeStatus,
} from "./api.ts";
import { CloudError, type CloudShape, type CloudShapeInput } from "./cloud/client.ts";
import { Reason, ready, rfc3339, setCondition, synced } from "./conditions.ts";
import { cacheObserver } from "./cloud/observers.ts";
import type {
  CloudCache,
  CloudObserver,
  CloudWriter,
  EventSink,
  Lister,
  ShapeCounters,
  ShapeWriter,
} from "./ports.ts";
import { asError, errorMessage, retryAfterOf, statusCodeOf } from "./errors.ts";

/** Everything the Shape reconciler reads and writes. */
export interface ShapeReconcilerDeps {
  shapes: Lister<Shape>;
  shapeRefs: Lister<ShapeRef>;
  cloudCache: CloudCache;
  /** How to observe a Shape's cloud shape. Default: the list-watch cache (`cacheObserver`). */
  observer?: CloudObserver;
  cloud: CloudWriter;
  kube: ShapeWriter;
  events: EventSink;
  counters: ShapeCounters;
  /** Our owner id, stamped in the `owner` tag (by default one per cluster: see core/cluster-identity.ts). */
  ownerId: string;
  /**
   * Owner ids we used before (an upgrade from the old constant default `k8s`): a cloud shape carrying one of
   * them AND this Shape's uid is ours from before, and is retagged to `ownerId` (adopted) in one PATCH.
   */
  adoptOwnerIds?: readonly string[];
  /** How long to wait before looking again while an earlier Shape's cloud shape is being cleaned up. */
  cleanupWaitMs?: number;
  /**
   * How often a Shape in NameConflict looks (one read by name, no write) whether the name was freed. The
   * holder is not ours, so our owner-filtered watch never sees it go. Default 5 s.
   */
  conflictRecheckMs?: number;
  now?: () => Date;
  log: Logger;
}

/** The cloud shape a Shape asks for: name, spec, and our owner tags. */
export function desiredCloudShape(shape: Shape, ownerId: string): CloudShapeInput {
  const { namespace, name, uid } = shape.metadata;
  return {
    name: cloudNameOf(namespace, name),
    type: shape.spec.type,
    color: shape.spec.color,
    ...(shape.spec.size === undefined ? {} : { size: shape.spec.size }),
    tags: { [TAG_OWNER]: ownerId, [TAG_UID]: uid, [TAG_NAME]: `${namespace}/${name}` },
  };
}

/** The managed fields of a desired shape, as compared with the observed one (`null`: must be absent). */
function managedFields(input: CloudShapeInput): Json {
  return { type: input.type, color: input.color, size: input.size ?? null, tags: input.tags };
}

/** The Shape's deletionPolicy, Delete when unset. */
export function policyOf(shape: Shape): DeletionPolicy {
  return shape.spec.deletionPolicy ?? "Delete";
}

/** True when a cloud shape carries our owner tag AND this Shape's uid. */
export function isOwnedBy(cloud: CloudShape, shape: Shape, ownerId: string): boolean {
  return cloud.tags[TAG_OWNER] === ownerId && cloud.tags[TAG_UID] === shape.metadata.uid;
}

/**
 * The earlier owner id of ours a cloud shape carries, when it also carries `uid` (the Shape's, or the one
 * its ShapeRef records): ours from before an upgrade, to adopt. Undefined otherwise. A uid is unique per
 * cluster, so another cluster's shape under the same old id never matches.
 */
export function adoptableFrom(
  cloud: CloudShape,
  uid: string,
  adoptOwnerIds: readonly string[] = [],
): string | undefined {
  const owner = cloud.tags[TAG_OWNER];
  return owner !== undefined && adoptOwnerIds.includes(owner) && cloud.tags[TAG_UID] === uid
    ? owner
    : undefined;
}

/**
 * The cloud shape named `name` that is ours for `uid`, for a deletion to delete or release (the finalizer's, or
 * the ShapeRef reconciler's after a missed one): from the owner-filtered cache with `uid`, else — the cache may
 * trail, and a Pending ShapeRef has no id to read — read live BY NAME and taken only if it carries `uid` and our
 * owner id, or an earlier one of ours (a shape from before an upgrade goes as ours would). A `k8s-uid` tag alone
 * proves nothing: anyone can copy it. Undefined: nothing of ours to delete or release.
 */
export async function findOwnedCloudShape(
  d: { cloudCache: CloudCache; cloud: CloudWriter; ownerId: string; adoptOwnerIds?: readonly string[] },
  name: string,
  uid: string,
  signal: AbortSignal,
): Promise<CloudShape | undefined> {
  const cached = d.cloudCache.byName(name);
  if (cached) return cached.tags[TAG_UID] === uid ? cached : undefined;
  const live = await d.cloud.getByName(name, signal);
  if (!live) return undefined; // never created, or already gone
  const ours =
    (live.tags[TAG_OWNER] === d.ownerId && live.tags[TAG_UID] === uid) ||
    adoptableFrom(live, uid, d.adoptOwnerIds) !== undefined;
  return ours ? live : undefined;
}

/** Reconciles one Shape, keyed `namespace/name`. */
export class ShapeReconciler implements Reconciler {
  readonly #d: ShapeReconcilerDeps;
  readonly #now: () => Date;
  readonly #observer: CloudObserver;
  /** Shapes whose name a foreign shape holds, with the holder's id: looked at again every few seconds. */
  readonly #conflicts = new Map<string, string>();

  constructor(deps: ShapeReconcilerDeps) {
    this.#d = deps;
    this.#observer = deps.observer ?? cacheObserver(deps.cloudCache);
    this.#now = deps.now ?? (() => new Date());
  }

  async reconcile(key: string, signal: AbortSignal): Promise<ReconcileResult> {
    const shape = this.#d.shapes.get(key);
    // Gone from the cache: nothing to do here. A normal deletion went through our finalizer; a missed one
    // is caught by the ShapeRef reconciler (its ShapeRef now dangles).
    if (!shape) {
      this.#conflicts.delete(key);
      return done();
    }

    // Paused: a person asked us to keep our hands off. Observe nothing, write nothing but the condition.
    // This holds for deletion too (as in Crossplane): the finalizer stays, so the cloud shape cannot be
    // forgotten; deletion proceeds as soon as the annotation is removed.
    if (shape.metadata.annotations?.[PAUSED_ANNOTATION] === "true") return this.#paused(shape);

    // Being deleted: run the story backwards (cloud shape, ShapeRef, then our finalizer).
    if (shape.metadata.deletionTimestamp) {
      this.#conflicts.delete(key);
      return this.#finalize(shape, signal);
    }

    // 1. Finalizer before anything exists in the cloud, or a deletion could slip by unseen.
    if (!shape.metadata.finalizers?.includes(FINALIZER)) {
      await this.#d.kube.addFinalizer(shape);
    }

    // 2. The intent record before the cloud create: if we crash right after the create, the ShapeRef
    //    still says a cloud shape may exist, so nothing leaks and nothing is created twice.
    const refName = shapeRefNameOf(shape.metadata.namespace, shape.metadata.name);
    let ref = this.#d.shapeRefs.get(refName);
    if (!ref) {
      try {
        await this.#d.kube.createShapeRef({
          metadata: { name: refName },
          spec: {
            shape: {
              namespace: shape.metadata.namespace,
              name: shape.metadata.name,
              uid: shape.metadata.uid,
            },
            cloudName: refName,
            deletionPolicy: policyOf(shape),
            owner: this.#d.ownerId,
          },
        });
      } catch (err) {
        // 409: it exists, and our cache has not seen it yet (its informer may be catching up after a
        // restart). Read it and go on, instead of failing until the cache catches up.
        if (statusCodeOf(err) !== 409) throw err;
        ref = await this.#d.kube.readShapeRef(refName);
        if (!ref) return failed(new Error(`cannot create ShapeRef ${refName}: it existed, then it did not`));
      }
    }
    if (ref && ref.spec.shape.uid !== shape.metadata.uid) {
      // An earlier Shape with the same name left its ShapeRef: the ShapeRef reconciler cleans it up first.
      return this.#waitForCleanup(shape, `ShapeRef ${refName} still belongs to an earlier Shape`);
    }
    if (
      ref &&
      ((ref.spec.deletionPolicy ?? "Delete") !== policyOf(shape) || ref.spec.owner !== this.#d.ownerId)
    ) {
      // The policy changed (or the record predates a field): the ShapeRef keeps it current, so a deletion we
      // miss still honours the policy, and a person sees whose record it is.
      await this.#d.kube.updateShapeRefSpec(refName, {
        deletionPolicy: policyOf(shape),
        owner: this.#d.ownerId,
      });
    }

    // 3. Observe by the deterministic name, from the list-watch cache (no per-object GET by default).
    const desired = desiredCloudShape(shape, this.#d.ownerId);
    let observed: CloudShape | undefined;
    try {
      observed = await this.#observer.observe(shape, desired.name, signal);
    } catch (err) {
      // Only a per-object observer makes a request here; the cache never fails.
      return this.#fail(shape, Reason.CannotObserve, `cannot read cloud shape ${desired.name}`, err);
    }
    if (observed && !isOwnedBy(observed, shape, this.#d.ownerId)) {
      // Ours by owner tag but another uid: left by an earlier Shape of the same name. Not this Shape's to
      // adopt; the ShapeRef reconciler or the cloud sweep removes it, then we create ours.
      return this.#waitForCleanup(shape, `cloud shape ${desired.name} belongs to an earlier Shape`);
    }

    // 4. Absent: create it, with our owner tags.
    let created = false;
    if (!observed) {
      const outcome = await this.#createOrAdopt(key, shape, ref, desired, signal);
      if (outcome.kind === "result") return outcome.result;
      observed = outcome.shape;
      created = outcome.created;
    }

    // 5. Present and ours: compare the whole desired state with the observed one; write only on a diff.
    let driftRepairs = shape.status?.driftRepairs ?? 0;
    const patch = mergePatchFor(managedFields(desired), observed as unknown as Json);
    if (patch) {
      const drift = diffManaged(managedFields(desired), observed as unknown as Json);
      const specChanged = shape.metadata.generation !== shape.status?.observedGeneration;
      try {
        observed = await this.#d.cloud.patch(observed.id, patch, observed.revision, signal);
      } catch (err) {
        // 412: the cloud changed since our cache saw it; the change feed brings the new state, then we retry.
        return this.#fail(shape, Reason.CannotUpdate, `cannot update cloud shape ${desired.name}`, err);
      }
      const fields = drift.map(
        (d) => `${d.path}: ${JSON.stringify(d.observed)} → ${JSON.stringify(d.desired)}`,
      );
      if (specChanged) {
        this.#d.events.record(
          shape,
          "Normal",
          "UpdatedCloudShape",
          `Updated ${desired.name}: ${fields.join(", ")}`,
        );
      } else {
        // Nobody changed the spec, yet the cloud differs: a human or another system changed it.
        driftRepairs += 1;
        this.#d.counters.driftRepaired();
        this.#d.events.record(
          shape,
          "Normal",
          "RepairedCloudDrift",
          `Repaired ${desired.name}: ${fields.join(", ")}`,
        );
      }
    }

    // 6. Bookkeeping: the ShapeRef now records a created cloud shape.
    if (ref?.status?.phase !== "Created" || ref.status?.cloudId !== observed.id) {
      await this.#d.kube.setShapeRefPhase(refName, "Created", observed.id);
    }

    // 7. Status, written only when it changed: zero writes in steady state.
    const wrote = created || patch !== undefined;
    return this.#writeStatus(shape, {
      observedGeneration: shape.metadata.generation,
      cloudId: observed.id,
      cloudName: observed.name,
      driftRepairs,
      conditions: [
        ready({
          status: "True",
          reason: Reason.Available,
          message: `Cloud shape ${observed.name} matches the spec`,
        }),
        synced({ status: "True", reason: Reason.ReconcileSuccess, message: "The cloud matches the spec" }),
      ],
      touched: wrote,
    });
  }

  /**
   * Creates the cloud shape; when the name is taken, looks at the holder: adopts it if it is ours (this Shape's,
   * under our owner id or an earlier one), waits if an earlier Shape's is being cleaned up, and otherwise
   * reports the conflict and looks again in a few seconds.
   */
  async #createOrAdopt(
    key: string,
    shape: Shape,
    ref: ShapeRef | undefined,
    desired: CloudShapeInput,
    signal: AbortSignal,
  ): Promise<
    { kind: "shape"; shape: CloudShape; created: boolean } | { kind: "result"; result: ReconcileResult }
  > {
    let holder: CloudShape | undefined;
    try {
      // A foreign shape held the name last time. Our watch never sees it go (it is not ours), so read by
      // name: a consistent point read, no write. Still there: nothing to create.
      if (this.#conflicts.has(key)) holder = await this.#d.cloud.getByName(desired.name, signal);
    } catch (err) {
      const what = `cannot read cloud shape ${desired.name}`;
      return { kind: "result", result: await this.#fail(shape, Reason.CannotObserve, what, err) };
    }
    if (!holder) {
      try {
        const created = await this.#d.cloud.create(desired, signal);
        this.#conflicts.delete(key);
        this.#d.events.record(
          shape,
          "Normal",
          "CreatedCloudShape",
          `Created cloud shape ${created.name} (${created.id})`,
        );
        return { kind: "shape", shape: created, created: true };
      } catch (err) {
        if (!(err instanceof CloudError && err.isConflict)) {
          const what = `cannot create cloud shape ${desired.name}`;
          return { kind: "result", result: await this.#fail(shape, Reason.CannotCreate, what, err) };
        }
        // 409: the name is taken. One live read of the holder it names settles whose it is.
        try {
          holder = await this.#readHolder(err, signal);
        } catch (readErr) {
          const what = `cannot read cloud shape ${desired.name}`;
          return { kind: "result", result: await this.#fail(shape, Reason.CannotObserve, what, readErr) };
        }
      }
    }
    if (!holder) {
      // Deleted between our create and our read: simply try again.
      const error = new Error(`cannot create cloud shape ${desired.name}: the name was taken, then freed`);
      return { kind: "result", result: failed(error) };
    }

    // Ours from an earlier attempt (a crash after the create, or a cache that has not caught up yet): adopt.
    // News for a person only when our record did not know it yet: a cache trailing our own write is not.
    if (isOwnedBy(holder, shape, this.#d.ownerId)) {
      this.#conflicts.delete(key);
      if (ref?.status?.cloudId !== holder.id) {
        const message = `Adopted cloud shape ${holder.name} (${holder.id}), created earlier for this Shape`;
        this.#d.events.record(shape, "Normal", "AdoptedCloudShape", message);
      }
      return { kind: "shape", shape: holder, created: false };
    }
    // Ours under an earlier owner id (created before an upgrade): retag it to ours, with any drift, in one PATCH.
    const from = adoptableFrom(holder, shape.metadata.uid, this.#d.adoptOwnerIds);
    if (from !== undefined) {
      const patch = mergePatchFor(managedFields(desired), holder as unknown as Json) ?? {};
      let adopted: CloudShape;
      try {
        adopted = await this.#d.cloud.patch(holder.id, patch, holder.revision, signal);
      } catch (err) {
        const what = `cannot adopt cloud shape ${desired.name} from owner ${JSON.stringify(from)}`;
        return { kind: "result", result: await this.#fail(shape, Reason.CannotUpdate, what, err) };
      }
      this.#conflicts.delete(key);
      this.#d.counters.adopted(from);
      const message = `Adopted cloud shape ${holder.name} (${holder.id}): retagged from owner ${JSON.stringify(from)} to ours`;
      this.#d.events.record(shape, "Normal", "AdoptedCloudShape", message);
      return { kind: "shape", shape: adopted, created: false };
    }
    // Ours by owner tag, another uid: an earlier Shape of the same name left it; its cleanup comes first.
    if (holder.tags[TAG_OWNER] === this.#d.ownerId) {
      const result = await this.#waitForCleanup(
        shape,
        `cloud shape ${desired.name} belongs to an earlier Shape`,
      );
      return { kind: "result", result };
    }
    // Someone else's shape holds our deterministic name. Leave it alone, tell a person (once per holder), and
    // look again in a few seconds: when they free the name, we take it.
    const owner = JSON.stringify(holder.tags[TAG_OWNER] ?? null);
    const message = `cannot create cloud shape ${desired.name}: the name is held by ${holder.id}, which is not ours (owner tag ${owner}); rename the Shape or free the name`;
    if (this.#conflicts.get(key) !== holder.id) {
      this.#conflicts.set(key, holder.id);
      this.#d.counters.foreignSeen();
      this.#d.log.warn({ key, holder: holder.id, owner: holder.tags[TAG_OWNER] }, message);
      this.#d.events.record(shape, "Warning", Reason.NameConflict, message);
    }
    await this.#writeStatus(shape, {
      observedGeneration: shape.metadata.generation,
      conditions: [
        ready({ status: "False", reason: Reason.NameConflict, message }),
        synced({ status: "False", reason: Reason.NameConflict, message }),
      ],
    });
    return { kind: "result", result: requeueAfter(this.#d.conflictRecheckMs ?? 5_000) };
  }

  /** The shape a 409 names as the holder of our name (read live), or undefined when it is already gone. */
  async #readHolder(conflict: CloudError, signal: AbortSignal): Promise<CloudShape | undefined> {
    const holderId = conflict.problem?.existingId;
    if (typeof holderId !== "string") return undefined;
    try {
      return await this.#d.cloud.get(holderId, signal);
    } catch (err) {
      if (err instanceof CloudError && err.isNotFound) return undefined;
      throw err;
    }
  }

  /** Deletion: remove (or orphan) the cloud shape, then the ShapeRef, then our finalizer. */
  async #finalize(shape: Shape, signal: AbortSignal): Promise<ReconcileResult> {
    // Not ours to hold: another finalizer is pending, or we already let go.
    if (!shape.metadata.finalizers?.includes(FINALIZER)) return done();

    const name = cloudNameOf(shape.metadata.namespace, shape.metadata.name);
    const refName = shapeRefNameOf(shape.metadata.namespace, shape.metadata.name);
    const ref = this.#d.shapeRefs.get(refName);
    let observed: CloudShape | undefined;
    try {
      observed = await findOwnedCloudShape(this.#d, name, shape.metadata.uid, signal);
    } catch (err) {
      return failed(asError(err, `cannot read cloud shape ${name}`), retryAfterOf(err));
    }

    if (shape.spec.deletionPolicy === "Orphan") {
      // Orphan: leave the cloud shape, but strip our owner tags so we never touch it again.
      if (observed) {
        try {
          await this.#d.cloud.patch(observed.id, RELEASE_PATCH, observed.revision, signal);
        } catch (err) {
          if (!(err instanceof CloudError && err.isNotFound))
            return failed(asError(err, `cannot orphan cloud shape ${name}`), retryAfterOf(err));
        }
        this.#d.events.record(
          shape,
          "Normal",
          "OrphanedCloudShape",
          `Left cloud shape ${name} (${observed.id}) in place without our owner tags`,
        );
      }
    } else if (observed) {
      const { id } = observed;
      try {
        // If-Match: only the shape as we saw it; if it changed meanwhile (412), look again first.
        await this.#d.cloud.delete(id, observed.revision, signal);
        this.#d.events.record(shape, "Normal", "DeletedCloudShape", `Deleted cloud shape ${name} (${id})`);
      } catch (err) {
        // 404: already gone, which is what we wanted.
        if (!(err instanceof CloudError && err.isNotFound))
          return failed(asError(err, `cannot delete cloud shape ${name}`), retryAfterOf(err));
      }
    }

    // The cloud side is settled: the intent record has nothing left to guard.
    if (ref && ref.spec.shape.uid === shape.metadata.uid) {
      await this.#d.kube.deleteShapeRef(refName, ref.metadata.uid);
    }
    // Last: let Kubernetes delete the Shape (resourceVersion-guarded, so a concurrent change is not lost).
    try {
      await this.#d.kube.removeFinalizer(shape);
    } catch (err) {
      // 404: the Shape is already gone — our cache still showed it after an earlier pass let it go.
      // Gone is what this whole branch is for, so it is done, not a failure to retry.
      if (statusCodeOf(err) !== 404) throw err;
    }
    return done();
  }

  /** Paused: report it, write nothing else. */
  async #paused(shape: Shape): Promise<ReconcileResult> {
    const message = shape.metadata.deletionTimestamp
      ? `Reconciliation is paused by the ${PAUSED_ANNOTATION} annotation; the deletion waits until it is removed`
      : `Reconciliation is paused by the ${PAUSED_ANNOTATION} annotation`;
    return this.#writeStatus(shape, {
      observedGeneration: shape.status?.observedGeneration,
      conditions: [synced({ status: "False", reason: Reason.ReconcilePaused, message })],
    });
  }

  async #waitForCleanup(shape: Shape, why: string): Promise<ReconcileResult> {
    const message = `Waiting: ${why}`;
    await this.#writeStatus(shape, {
      observedGeneration: shape.metadata.generation,
      conditions: [
        ready({ status: "False", reason: Reason.WaitingForCleanup, message }),
        synced({ status: "False", reason: Reason.WaitingForCleanup, message }),
      ],
    });
    return requeueAfter(this.#d.cleanupWaitMs ?? 5_000);
  }

  /** A failed step: record it in Synced (keeping Ready as it was), then retry with backoff. */
  async #fail(shape: Shape, reason: string, what: string, err: unknown): Promise<ReconcileResult> {
    const error = asError(err, what);
    try {
      await this.#writeStatus(shape, {
        observedGeneration: shape.status?.observedGeneration,
        conditions: [synced({ status: "False", reason, message: error.message })],
      });
    } catch (statusErr) {
      this.#d.log.warn({ err: errorMessage(statusErr) }, "cannot record the failure in status");
    }
    return failed(error, retryAfterOf(err));
  }

  /** Merges `next` into the Shape's status and writes it only if anything changed. */
  async #writeStatus(
    shape: Shape,
    next: Omit<ShapeStatus, "conditions" | "lastSyncTime"> & {
      conditions: ReturnType<typeof ready>[];
      touched?: boolean;
    },
  ): Promise<ReconcileResult> {
    const now = this.#now();
    const current = shape.status ?? {};
    let conditions = current.conditions ?? [];
    // Each condition says which generation of the spec it speaks about.
    for (const c of next.conditions) {
      conditions = setCondition(conditions, { ...c, observedGeneration: shape.metadata.generation }, now);
    }
    const { touched, conditions: _c, ...fields } = next;
    const status: ShapeStatus = { ...current, ...stripUndefined(fields), conditions };
    const changed = !deepEqual(normalize(status) as Json, normalize(current) as Json);
    if (!changed && !touched) return done();
    // lastSyncTime moves only when something happened, so steady state costs no write.
    status.lastSyncTime = rfc3339(now);
    await this.#d.kube.updateStatus(shape, status);
    return done();
  }
}

function stripUndefined<T extends object>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function normalize(status: ShapeStatus): ShapeStatus {
  const { lastSyncTime: _t, ...rest } = status;
  return rest;
}

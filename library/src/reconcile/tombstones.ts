/**
 * Tombstones: the deletion policy a resource had when the resource informer last saw it, kept for a short
 * while after it was deleted, for the intent reconciler (intent-reconciler.ts).
 *
 * Why: the intent record keeps a copy of the resource's deletion policy, and a reconcile of the resource
 * keeps that copy current (intent-record.ts). A person who switches a resource to `Orphan` and deletes it at
 * once, its finalizer removed by hand, can be faster than that reconcile: the resource is gone, and its
 * record still says `Delete`. The informer saw the switch, though: a watch's DELETED event carries the
 * resource's final state. The controllers (controllers.ts) note it here when the resource leaves the cache,
 * and the intent reconciler obeys it: a record that says `Delete` is written `Orphan` first (durable from
 * then on: a restart or a failed release cannot lose it), then the object is released, not deleted.
 *
 * Only `Orphan` is kept. A last sight can only turn a missed deletion's `Delete` into `Orphan`, never the
 * reverse: when the record and the last sight disagree, the one that destroys nothing wins. A delete cannot
 * be undone, a release can (the object stays; a person can delete it). And a `delete` event does not always
 * carry the final state: after a watch break the informer relists, and a resource gone meanwhile leaves the
 * cache as it was last seen, possibly before a later switch back to `Delete`.
 *
 * What it cannot do: a switch no running controller saw (made while the controller was down, or while its
 * watch was broken and before it relisted) is in no tombstone, and the record decides.
 *
 * Memory: nothing is kept while no resource with policy `Orphan` is deleted. Each tombstone (about 200 bytes:
 * the resource's uid, its policy, a time) lives until the intent reconciler has settled its record (deleted
 * it, or found it gone by a live read), or {@link TombstoneOptions.ttlMs} at most: an ordinary Orphan
 * deletion, whose finalizer deleted the record, leaves one that expires. At most
 * {@link TombstoneOptions.max} are kept, the oldest dropped first. Expiry is lazy (on each call): no timer.
 */
import type { DeletionPolicy, ManagedResource } from "./contract.ts";
import { deletionPolicyOf } from "./policies.ts";
import type { LastSeenPolicies } from "./intent-reconciler.ts";

/** Options of {@link Tombstones}. */
export interface TombstoneOptions {
  /**
   * How long a tombstone is kept at most. Default 10 min: the intent reconciler, enqueued by the same
   * deletion, reads it at once; ten minutes also covers its retries (at most a minute apart) while the API
   * server fails its live reads, before the record is written.
   */
  ttlMs?: number;
  /** How many tombstones are kept at most; the oldest goes first. Default 10,000. */
  max?: number;
  /** A clock in milliseconds. Default `Date.now`. */
  now?: () => number;
}

/** The last-seen deletion policies of resources just deleted, keyed by the resource's uid. */
export class Tombstones implements LastSeenPolicies {
  readonly #ttlMs: number;
  readonly #max: number;
  readonly #now: () => number;
  /** uid → its policy and when it was noted, in the order noted: the oldest first. */
  readonly #byUid = new Map<string, { readonly deletionPolicy: DeletionPolicy; readonly at: number }>();

  constructor(options: TombstoneOptions = {}) {
    this.#ttlMs = options.ttlMs ?? 600_000;
    this.#max = options.max ?? 10_000;
    this.#now = options.now ?? Date.now;
    if (!(this.#max > 0)) throw new Error(`cannot keep at most ${this.#max} tombstones`);
  }

  /**
   * Called when `resource` left the resource cache (its informer's `delete` event, with the state last seen):
   * keeps its deletion policy when that is `Orphan`; a policy of `Delete` is not kept.
   */
  noteDeleted(resource: ManagedResource): void {
    this.#expire();
    const deletionPolicy = deletionPolicyOf(resource);
    if (deletionPolicy !== "Orphan") return;
    const { uid } = resource.metadata;
    this.#byUid.delete(uid);
    this.#byUid.set(uid, { deletionPolicy, at: this.#now() });
    if (this.#byUid.size > this.#max) this.#byUid.delete(this.#byUid.keys().next().value as string);
  }

  /** The deletion policy the resource with `uid` had when last seen, when its tombstone is kept: `Orphan`. */
  deletionPolicyOf(uid: string): DeletionPolicy | undefined {
    this.#expire();
    return this.#byUid.get(uid)?.deletionPolicy;
  }

  /** Called once the intent record of the resource with `uid` is settled (deleted, or found gone). */
  forget(uid: string): void {
    this.#byUid.delete(uid);
  }

  /** How many tombstones are kept. */
  get size(): number {
    this.#expire();
    return this.#byUid.size;
  }

  /** Drops the tombstones older than the ttl: from the front, the oldest first. */
  #expire(): void {
    const oldest = this.#now() - this.#ttlMs;
    for (const [uid, tombstone] of this.#byUid) {
      if (tombstone.at > oldest) return;
      this.#byUid.delete(uid);
    }
  }
}

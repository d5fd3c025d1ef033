/**
 * The intent reconciler: finds the leaks a missed deletion leaves behind, through the intent record every
 * external object of ours has from before its create, and does what the resource's finalizer would have done.
 */
import { asError } from "../support/errors.ts";
import { noteDecision, noteObserved } from "../observability/reconcile-scope.ts";
import { done, failed, type ReconcileResult, type Reconciler } from "../queue/result.ts";
import type { DeletionPolicy, IntentRecord, ManagedResource } from "./contract.ts";
import { findOwned } from "./ownership.ts";
import { uninstallOf } from "./uninstall.ts";
import type { SharedDeps } from "./ports.ts";
import { attempt } from "./step.ts";

/** Everything the intent reconciler reads and writes. */
export interface IntentReconcilerDeps<R extends ManagedResource, E> extends SharedDeps<R, E> {
  /** Owner ids we used before (an upgrade): an object with one of them and the record's uid is ours too. */
  adoptOwnerIds?: readonly string[];
  /**
   * The deletion policies resources had when last seen, after they were deleted (tombstones.ts): a record
   * that says Delete of a resource last seen with Orphan is written Orphan, and its object released. None:
   * the record alone decides.
   */
  tombstones?: LastSeenPolicies;
}

/**
 * The deletion policies of deleted resources as last seen, by resource uid (the library's own is kept by the
 * resource informer's delete handler: tombstones.ts). Both calls are cheap and never throw.
 */
export interface LastSeenPolicies {
  /** The policy the resource of `uid` had when last seen, if it is still kept. */
  deletionPolicyOf(uid: string): DeletionPolicy | undefined;
  /** Drops what is kept for `uid`: its record is settled. */
  forget(uid: string): void;
}

/**
 * Reconciles one intent record, keyed by its name (the external name).
 *
 * Every external object we create has an intent record, written BEFORE the create. When a resource
 * disappears without our finalizer running (the controller was down and someone stripped the finalizer),
 * its record is left dangling: the one durable trace that an external object of ours may still exist. This
 * reconciler deletes that object — or, when the resource's deletionPolicy (which the record keeps) was
 * Orphan, or when its CRD is being deleted or was deleted since (an uninstall: uninstall.ts), removes our
 * owner marks and leaves it — then the record.
 *
 * # Guarantees
 * - Nothing destructive on a cache's word: a record that looks dangling is confirmed by live reads of its
 *   resource and of itself first; a live resource of the record's uid, or a newer record under the name,
 *   leaves it alone.
 * - Only ours: the object is looked up by name, then by uid mark (a renamed object), and acted on only when
 *   it carries our owner id (or one of `adoptOwnerIds`) and the record's uid.
 * - The deletion policy is honoured, and a switch to Orphan the record trails is not lost: when the resource
 *   informer last saw the resource say Orphan ({@link LastSeenPolicies}), the record is written Orphan first,
 *   then the object released. The last sight only ever turns a Delete into an Orphan (tombstones.ts says why).
 * - During an uninstall nothing is deleted outside (released instead), unless `deleteOnUninstall`; the CRD is
 *   read live before a delete, and nothing is deleted on a guess when that read fails.
 * - The record is deleted last, only once the object is deleted or released (or found gone).
 *
 * # Errors
 * `reconcile` never throws: every exit is a `return` where it happens. A step that fails returns
 * `failed(...)` at its call site (an external failure with the API's Retry-After), and anything no step
 * foresaw is caught once around the whole reconcile and returned the same way. There is no resource to write
 * a condition on here: the log and the metrics tell.
 */
export class IntentReconciler<R extends ManagedResource, E> implements Reconciler {
  readonly #d: IntentReconcilerDeps<R, E>;

  constructor(deps: IntentReconcilerDeps<R, E>) {
    this.#d = deps;
  }

  /** Reconciles the intent record `name` once. Never throws: a failure is returned as `failed`. */
  async reconcile(name: string, signal: AbortSignal): Promise<ReconcileResult> {
    try {
      return await this.#reconcile(name, signal);
    } catch (err) {
      // Nothing foresaw this one (every step returns its own failure): still a result, never a throw.
      return failed(asError(err, `cannot reconcile ${this.#d.plugin.resource.intentKind} ${name}`));
    }
  }

  async #reconcile(name: string, signal: AbortSignal): Promise<ReconcileResult> {
    const { plugin, client, kube } = this.#d;
    const intent = this.#d.intents.get(name);
    const kind = plugin.resource.intentKind;
    // Already gone: nothing left to guard.
    if (!intent) {
      noteDecision("forget", `${kind} ${name} is gone: nothing left to guard`);
      return done();
    }
    noteObserved(`${kind} ${name} ${intent.phase}, for ${plugin.resource.kind} uid ${intent.resource.uid}`);

    // Its resource is alive (same uid): the resource's reconciler owns this record.
    const { namespace, name: resourceName, uid } = intent.resource;
    if (this.#d.resources.get(`${namespace}/${resourceName}`)?.metadata.uid === uid) {
      noteDecision("resource-alive", `its ${plugin.resource.kind} lives: the record is its reconciler's`);
      return done();
    }

    // It looks dangling, but caches trail: confirm both sides with live reads before anything destructive.
    let live: IntentRecord | undefined;
    try {
      if ((await kube.readResource(namespace, resourceName))?.metadata.uid === uid) {
        noteDecision("resource-alive", `a live read finds its ${plugin.resource.kind}: the cache trailed`);
        return done();
      }
      live = await kube.readIntent(name);
    } catch (err) {
      return failed(asError(err, `cannot confirm that ${plugin.resource.intentKind} ${name} dangles`));
    }
    // Already deleted (the finalizer did it, faster than our cache saw), or the name now holds a newer
    // record: either way this one is no leak, and the newer one is not ours to judge from this key's past.
    if (!live || live.uid !== intent.uid) {
      noteDecision("forget", `a live read finds no such ${kind} any more: no leak`);
      this.#d.tombstones?.forget(uid);
      return done();
    }

    // The record says Delete, but the resource said Orphan when the informer last saw it (tombstones.ts): a
    // switch and a deletion faster than the reconcile that would have recorded it. The record is written
    // first, so that from here on (a failed release, a restart, the tombstone gone) it says Orphan too.
    let policy = live.deletionPolicy;
    if (policy === "Delete" && this.#d.tombstones?.deletionPolicyOf(uid) === "Orphan") {
      noteDecision(
        "update-intent",
        `the ${kind} says deletionPolicy Delete, but its ${plugin.resource.kind} said Orphan when last seen: record Orphan first`,
      );
      const recorded = await attempt(
        () => kube.updateIntentSpec(name, plugin.resource.intentSpec({ ...live, deletionPolicy: "Orphan" })),
        (err) => failed(asError(err, `cannot record deletionPolicy Orphan in ${kind} ${name}`)),
      );
      if (recorded.stop) return recorded.result;
      policy = "Orphan";
    }

    // A leak: the resource was deleted (or replaced by a new one with another uid) without our finalizer.
    // Do what its finalizer would have done: delete the object, or — deletionPolicy Orphan, or its CRD being
    // deleted (an uninstall: uninstall.ts) — remove our owner marks and leave it.
    const noun = plugin.external.noun.text;
    const found = await attempt(
      () => findOwned({ ...this.#d, kind: plugin.external }, live.externalName, uid, signal),
      (err) => this.#failedExternal(err, `cannot read leaked ${noun} ${live.externalName}`),
    );
    if (found.stop) return found.result;
    const obj = found.value;
    // Only a delete asks whether this is an uninstall: one live read of the CRD, and none on a guess when
    // it fails. A record older than the CRD counts too: its resource went with an earlier CRD.
    let uninstall: string | undefined;
    if (obj && policy === "Delete") {
      const checked = await attempt(
        () => uninstallOf(this.#d, live.createdAt),
        (err) =>
          failed(asError(err, `cannot check for an uninstall before deleting ${noun} ${live.externalName}`)),
      );
      if (checked.stop) return checked.result;
      uninstall = checked.value;
    }
    const release = policy === "Orphan" || uninstall !== undefined;
    noteDecision(
      uninstall !== undefined ? "release-on-uninstall" : release ? "orphan-leak" : "delete-leak",
      `its ${plugin.resource.kind} ${namespace}/${resourceName} was deleted without our finalizer (deletionPolicy ${policy})${uninstall === undefined ? "" : `; released, not deleted: ${uninstall}`}`,
    );
    try {
      if (obj && release) await client.release(obj, signal);
      else if (obj) await client.delete(obj, signal);
    } catch (err) {
      // Not found: someone deleted it first: nothing left to delete or to let go.
      if (client.classify(err).failure !== "notFound") {
        const verb = uninstall !== undefined ? "release" : release ? "orphan" : "delete";
        const what = `cannot ${verb} leaked ${noun} ${live.externalName}`;
        return this.#failedExternal(err, what);
      }
    }
    const forgotten = await attempt(
      () => kube.deleteIntent(name, live.uid),
      (err) => failed(asError(err, `cannot delete ${plugin.resource.intentKind} ${name}`)),
    );
    if (forgotten.stop) return forgotten.result;
    this.#d.tombstones?.forget(uid);
    // A leak is an object: a record whose object was never created, or is not ours, settles no leak.
    if (obj) this.#d.counters.leakRemoved("intent");
    // Log fields named after the kinds (`shapeRef`, `shape`), so a person can grep for their own words.
    this.#d.log.info(
      {
        [lowerFirst(plugin.resource.intentKind)]: name,
        [lowerFirst(plugin.resource.kind)]: `${namespace}/${resourceName}`,
        uid,
        deletionPolicy: policy,
      },
      !obj
        ? `forgot the record of a missed deletion: no ${noun} of ours is left to act on`
        : uninstall !== undefined
          ? `released a ${noun} left by a missed deletion, not deleted: ${uninstall}`
          : release
            ? `let go of a ${noun} left by a missed deletion (deletionPolicy Orphan)`
            : "removed a leak left by a missed deletion",
    );
    return done();
  }

  /** A failed external call, returned with the API's Retry-After when it gave one. */
  #failedExternal(err: unknown, what: string): ReconcileResult {
    return failed(asError(err, what), this.#d.client.classify(err).retryAfterMs);
  }
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

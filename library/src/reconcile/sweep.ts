/**
 * The sweep: the last safety net against leaks — an external object of ours that nothing claims, after a
 * grace period and live re-checks, is deleted.
 */
import { asError } from "../support/errors.ts";
import { noteDecision, noteObserved } from "../observability/reconcile-scope.ts";
import { done, failed, requeueAfter, type ReconcileResult, type Reconciler } from "../queue/result.ts";
import type { ManagedResource } from "./contract.ts";
import type { SharedDeps } from "./ports.ts";
import { uninstallOf } from "./uninstall.ts";
import { attempt } from "./step.ts";

/** Everything the sweep reads and writes. */
export interface SweepDeps<R extends ManagedResource, E> extends SharedDeps<R, E> {
  /** How long an unclaimed object must stay unclaimed before it is deleted (default 60 s). */
  graceMs?: number;
  /** The clock of the grace period. Default the wall clock. */
  now?: () => Date;
}

/** The resources and intent records that may claim an object, and whether the caches show one that does. */
interface Claimants {
  cached: boolean;
  resources: { namespace: string; name: string }[];
  intents: string[];
}

/**
 * Reconciles one owned external object, keyed by its external name.
 *
 * An external object carrying OUR owner mark, claimed by neither a live resource (same uid) nor an intent
 * record (of that uid), is a leak (e.g. a crash between the create and any bookkeeping, then the resource
 * deleted by hand). After a grace period, and a live re-check, it is deleted.
 *
 * # Guarantees
 * - Only exactly ours: an object whose owner mark is not EXACTLY our owner id is never deleted here, whatever
 *   else it carries (our uid mark, our name): the cache only holds ours, and the sweep checks the mark again,
 *   because an owner id shared by two clusters is how one cluster's sweep deletes the other's objects. An
 *   earlier owner id of ours is adopted by the resource's reconciler, never swept. (An object with our
 *   owner mark and no uid mark IS swept: the owner mark alone says it is ours, and with no uid nothing can
 *   claim it.)
 * - A renamed object is never a leak: a claimant is looked for by the object's name first (the deterministic
 *   name), then by its uid mark whatever the name; its resource renames it back or reports it.
 * - A create in flight is never swept: an object is deleted only after it stayed unclaimed for `graceMs`
 *   (measured on our own clock, not the external API's timestamps) and live reads of every claimant confirm
 *   it; the delete is guarded by the revision we saw, so a concurrent adoption wins.
 * - During an uninstall (the resource's CRD being deleted, or gone: uninstall.ts) nothing is deleted: a leak
 *   found then stays as it is.
 *
 * # Errors
 * `reconcile` never throws: every exit is a `return` where it happens. A step that fails returns
 * `failed(...)` at its call site (a delete with the API's Retry-After), and anything no step foresaw is
 * caught once around the whole reconcile and returned the same way.
 */
export class Sweep<R extends ManagedResource, E> implements Reconciler {
  readonly #d: SweepDeps<R, E>;
  readonly #now: () => number;
  /** When we first saw each name unclaimed (our own clock: no trust in the external API's timestamps). */
  readonly #unclaimedSince = new Map<string, number>();

  constructor(deps: SweepDeps<R, E>) {
    this.#d = deps;
    const now = deps.now;
    this.#now = now ? () => now().getTime() : Date.now;
  }

  /** Looks at the external object `name` once. Never throws: a failure is returned as `failed`. */
  async reconcile(name: string, signal: AbortSignal): Promise<ReconcileResult> {
    try {
      return await this.#reconcile(name, signal);
    } catch (err) {
      // Nothing foresaw this one (every step returns its own failure): still a result, never a throw.
      return failed(asError(err, `cannot sweep ${this.#d.plugin.external.noun.text} ${name}`));
    }
  }

  async #reconcile(name: string, signal: AbortSignal): Promise<ReconcileResult> {
    const { plugin, client } = this.#d;
    const noun = plugin.external.noun.text;
    const obj = this.#d.cache.get(name);
    // Gone, or not ours (exactly our owner id; an earlier id of ours is adopted, never swept): nothing to do.
    if (!obj || plugin.external.marksOf(obj).owner !== this.#d.ownerId) {
      noteDecision("forget", obj ? `${noun} ${name} is not ours: never swept` : `${noun} ${name} is gone`);
      return this.#forget(name);
    }

    const uid = plugin.external.marksOf(obj).uid;
    noteObserved(`${noun} ${name}: ${plugin.external.idOf(obj)}, uid mark ${uid ?? "none"}`);
    // Claimed by a live resource or by an intent record (whose own reconciler decides): not a leak.
    const claimants = this.#claimants(name, uid);
    if (claimants.cached) {
      noteDecision(
        "claimed",
        `a live ${plugin.resource.kind} or its ${plugin.resource.intentKind} claims it`,
      );
      return this.#forget(name);
    }

    // Unclaimed. A create may be in flight (its bookkeeping not yet in our caches): wait out the grace period.
    const grace = this.#d.graceMs ?? 60_000;
    const since = this.#unclaimedSince.get(name) ?? this.#now();
    this.#unclaimedSince.set(name, since);
    const waited = this.#now() - since;
    if (waited < grace) {
      noteDecision(
        "grace",
        `unclaimed for ${waited} ms: a create may be in flight; look again after ${grace} ms`,
      );
      return requeueAfter(grace - waited);
    }

    // Still unclaimed: confirm with live reads, then delete, guarded by revision (a concurrent adopt wins).
    const claimed = await attempt(
      () => this.#claimedLive(claimants, uid),
      (err) => failed(asError(err, `cannot confirm that ${plugin.external.noun.text} ${name} is unclaimed`)),
    );
    if (claimed.stop) return claimed.result;
    if (claimed.value) {
      noteDecision("claimed", "a live read finds its claimant: the cache trailed");
      return this.#forget(name);
    }
    // An uninstall deletes nothing outside (uninstall.ts): while the CRD is being deleted, or gone, a leak
    // stays as it is. One live read of the CRD; when it fails, nothing is deleted on a guess.
    const checked = await attempt(
      () => uninstallOf(this.#d),
      (err) => failed(asError(err, `cannot check for an uninstall before deleting ${noun} ${name}`)),
    );
    if (checked.stop) return checked.result;
    const uninstall = checked.value;
    if (uninstall !== undefined) {
      noteDecision("keep-on-uninstall", `unclaimed for ${waited} ms, but not deleted: ${uninstall}`);
      this.#d.log.info(
        { externalName: name, id: plugin.external.idOf(obj), uid },
        `left a ${noun} nothing claims in place, not deleted: ${uninstall}`,
      );
      return this.#forget(name);
    }
    noteDecision("delete-leak", `unclaimed for ${waited} ms, confirmed by live reads: a leak`);
    try {
      await client.delete(obj, signal);
    } catch (err) {
      const { failure, retryAfterMs } = client.classify(err);
      if (failure !== "notFound" && failure !== "stale") {
        return failed(
          asError(err, `cannot delete leaked ${plugin.external.noun.text} ${name}`),
          retryAfterMs,
        );
      }
      // Not found: already gone. Stale: it changed meanwhile; the change feed brings it back for another look.
      return this.#forget(name);
    }
    this.#d.counters.leakRemoved("sweep");
    this.#d.log.info(
      { externalName: name, id: plugin.external.idOf(obj), uid },
      `removed a leaked ${plugin.external.noun.text} nothing claims`,
    );
    return this.#forget(name);
  }

  /**
   * Who may claim the object named `name` with uid mark `uid`: the resource and the intent record its name maps
   * to, and — when neither of those claims it in the caches — any cached resource or intent record of that uid
   * (a renamed object: its name maps elsewhere). `cached`: a claimant in the caches holds that uid. Scans the
   * caches only for an object its name does not explain (a leak, or a renamed object: rare).
   */
  #claimants(name: string, uid: string | undefined): Claimants {
    const { plugin, resources, intents } = this.#d;
    const byName = plugin.resource.resourceOf(name);
    const found: Claimants = {
      cached: false,
      resources: byName ? [byName] : [],
      intents: [name],
    };
    if (uid === undefined) return found;
    const resource = byName && resources.get(`${byName.namespace}/${byName.name}`);
    if (resource?.metadata.uid === uid || intents.get(name)?.resource.uid === uid) {
      return { ...found, cached: true };
    }
    for (const r of resources.list()) {
      if (r.metadata.uid !== uid) continue;
      found.resources.push({ namespace: r.metadata.namespace, name: r.metadata.name });
      found.cached = true;
    }
    for (const record of intents.list()) {
      if (record.resource.uid !== uid) continue;
      found.intents.push(record.name);
      found.cached = true;
    }
    return found;
  }

  /** True when a live read of one of `claimants` finds it holding `uid`: the caches trailed. */
  async #claimedLive(claimants: Claimants, uid: string | undefined): Promise<boolean> {
    if (uid === undefined) return false;
    for (const { namespace, name } of claimants.resources) {
      if ((await this.#d.kube.readResource(namespace, name))?.metadata.uid === uid) return true;
    }
    for (const name of claimants.intents) {
      if ((await this.#d.kube.readIntent(name))?.resource.uid === uid) return true;
    }
    return false;
  }

  #forget(name: string): ReconcileResult {
    this.#unclaimedSince.delete(name);
    return done();
  }
}

/**
 * The external-resource reconciler: makes an external API hold exactly the object a custom resource
 * describes, and reports what it saw. One reconcile reads as the story (docs/scenarios/):
 *
 *   deletion policy recorded → paused? → being deleted? → observe only? → adoption policy valid? →
 *   finalizer → intent record → observe by name → not ours? wait → renamed? rename back (or report) →
 *   absent? create (or adopt what is ours, or on request an untagged one) → drift? update → status
 *
 * and deletion runs it backwards. Each story is a file of its own: intent-record.ts, create-or-adopt.ts,
 * drift.ts, finalize.ts, observe-only.ts, rejected-specs.ts; the steps they share are resource-steps.ts, the
 * step's verdict step.ts. Nothing about one kind of external object lives here: that is the plugin's
 * (contract.ts).
 */
import type { OwnWrites } from "../source/own-writes.ts";
import { noteDecision, noteObserved, noteSubject } from "../observability/reconcile-scope.ts";
import { done, type ReconcileResult, type Reconciler } from "../queue/result.ts";
import type { ManagedResource } from "./contract.ts";
import { isOwnedBy, renamedAway } from "./ownership.ts";
import { adoptionRequestOf } from "./adoption.ts";
import { deletionPolicyOf, policiesOf } from "./policies.ts";
import type { EventRecorder, SharedDeps } from "./ports.ts";
import { Reason, ready, synced } from "./status.ts";
import { proceed, stop, type Verdict } from "./step.ts";
import { ResourceSteps, type Run } from "./resource-steps.ts";
import { ensureIntent, recordPolicy } from "./intent-record.ts";
import { createOrAdopt } from "./create-or-adopt.ts";
import { renamedBehindOurBack, repairDrift } from "./drift.ts";
import { finalize } from "./finalize.ts";
import { observeOnly, paused } from "./observe-only.ts";
import { invalidAdoptionPolicy } from "./rejected-specs.ts";

/**
 * Everything the {@link ExternalResourceReconciler} reads and writes: the {@link SharedDeps} of the three
 * reconcilers (the plugin, the caches, the Kubernetes writer, the external client, our owner id), the event
 * recorder, the echo registries, and the waits between looks.
 *
 * # Assumptions
 * - `resources`, `intents` and `cache` are caches that may trail the writes, never run ahead of them; `cache`
 *   holds only external objects that carry our owner mark (`withUid` finds one by its uid mark).
 * - `kube`, `client` and `events` are the ports as `composePorts` (controllers.ts) gives them: each call
 *   may be refused by the write fence with a `FencedError`, which the reconciler takes as "stop writing";
 *   `events` never throws (an Event that cannot be recorded is dropped).
 * - `echoes` are the registries the event handlers consult, so the echo of our own write reconciles nothing.
 *
 * # Guarantees
 * The reconciler never writes through anything but these ports, and keeps no state beyond one process's
 * memory of what it did (dropped when the resource leaves the cache): a restart loses nothing the status,
 * the intent record and the owner marks do not hold.
 */
export interface ReconcilerDeps<R extends ManagedResource, E> extends SharedDeps<R, E> {
  /** Where the reconciler records the Events a user reads with `kubectl describe`; recording never throws. */
  events: EventRecorder;
  /**
   * Owner ids we used before (an upgrade): an object carrying one of them AND this resource's uid is ours
   * from before, and is re-marked to `ownerId` (adopted) in one update, which also brings it to the spec
   * unless the resource's management policies leave out Update (then the owner marks alone: adoption.ts).
   */
  adoptOwnerIds?: readonly string[];
  /**
   * Where the revisions of our own writes are noted, so the handlers can drop their echoes (own-writes.ts):
   * `resources` by resource key (the finalizer), `external` by external name (create, update). Reconciling
   * every echo instead costs about half again as many reconciles per resource (docs/benchmarks.md).
   */
  echoes: { resources: OwnWrites; external: OwnWrites };
  /** How long to wait before looking again while an earlier namesake's object is cleaned up. Default 5 s. */
  cleanupWaitMs?: number;
  /**
   * How often a resource whose name a foreign object holds looks again (one read by name, no write). The
   * holder is not ours, so our owner-filtered watch never sees it go. Default 5 s.
   */
  conflictRecheckMs?: number;
  /**
   * How often an observe-only resource (management policies without Create, policies.ts) reads its external
   * object again (one read by name, no write): it need not be ours, so our owner-filtered watch may not see
   * it change. Default 30 s.
   */
  observeRecheckMs?: number;
  /** The clock of the status's times (`lastSyncTime`, a condition's `lastTransitionTime`). Default: the system clock. */
  now?: () => Date;
}

/**
 * Reconciles one managed resource, keyed `namespace/name`: the external API holds exactly the object the
 * resource describes, or — being deleted — none (or one released), and the resource's status says what the
 * reconcile saw and did.
 *
 * # Guarantees
 * - Ownership is the owner marks, never the name: an object that does not carry our owner id (or one of
 *   {@link ReconcilerDeps.adoptOwnerIds}) and this resource's uid is never written or deleted; on request
 *   (the adoption-policy annotation) one with no owner mark at all is adopted, never another's.
 * - Nothing leaks and nothing is created twice: the finalizer is on the resource and the intent record
 *   written before the external create; an object of ours found under the name (or renamed away) is adopted
 *   (or renamed back), never duplicated.
 * - Steady state costs no write: the external object is updated only when a managed field differs, the
 *   status only when it changed.
 * - Deletion honours the deletion policy (Delete, or Orphan: released, our owner marks removed); while the
 *   resource's CRD is being deleted (an uninstall) nothing is deleted outside unless `deleteOnUninstall`.
 * - A paused resource (the paused annotation) is neither observed nor written, its deletion included; only
 *   its conditions and its intent record's policy are kept current.
 * - `Ready` never keeps an earlier `True` the reconcile cannot vouch for: every exit reports what this
 *   reconcile saw of the external object.
 *
 * # Errors
 * `reconcile` never throws. Every exit is a `return` where it happens: a step returns a {@link Verdict},
 * and a stop is returned at once. A step that fails — on either side — returns `failed` after reporting it
 * in `Synced=False` with the step's reason (a 404 on the resource itself: `done`); anything no step foresaw
 * (a bug, a plugin that throws, a failed status write) is caught once around the whole reconcile and
 * returned the same way, with {@link Reason.ReconcileError}. Only the reconciler can report a failure where
 * a person looks (the resource's conditions), and a result is what the loop acts on.
 * - The write fence closed mid-reconcile (a `FencedError`: leadership lost, or stopping): `failed`,
 *   no condition written, whichever step met it. Recording an Event never throws, so an Event dropped by
 *   the closed fence never turns a step that succeeded (a create) into a failure.
 * - The external API refused the spec for good (a create or an update classified "rejected"): `terminal`
 *   (no requeue, no backoff) after `Synced=False` {@link Reason.SpecRejected} with the API's words and one
 *   Warning event; that spec is sent again only on a new generation or a changed annotation (the refresh).
 * - An adoption-policy annotation that holds no policy: `terminal`, nothing written outside.
 *
 * # Assumptions
 * The caches (resources, intent records, external objects) may trail the writes, never run ahead of them;
 * one reconcile of a key runs at a time (the controller's queue).
 */
export class ExternalResourceReconciler<R extends ManagedResource, E extends object> implements Reconciler {
  readonly #s: ResourceSteps<R, E>;

  constructor(deps: ReconcilerDeps<R, E>) {
    this.#s = new ResourceSteps(deps);
  }

  /**
   * Reconciles the resource `key` once. Never throws: every failure is reported in `Synced=False` and
   * returned as `failed`, or as `terminal` when the external API refused the spec for good.
   */
  async reconcile(key: string, signal: AbortSignal): Promise<ReconcileResult> {
    const s = this.#s;
    const resource = s.d.resources.get(key);
    // Gone from the cache: nothing to do. A normal deletion went through our finalizer; a missed one is
    // caught by the intent reconciler (its record now dangles).
    if (!resource) {
      s.letGo.delete(key);
      s.forgetObject(key);
      noteSubject("gone");
      noteDecision("forget", `${s.kind} ${key} is gone: nothing left to do here`);
      return done();
    }
    noteSubject("present");
    const run: Run<R> = { key, resource, sight: s.unobserved() };
    try {
      return await this.#reconcile(run, signal);
    } catch (err) {
      // Nothing foresaw this one (every step returns its own failure). Still a failure to report, returned.
      return s.failUnforeseen(run, err);
    }
  }

  async #reconcile(run: Run<R>, signal: AbortSignal): Promise<ReconcileResult> {
    const s = this.#s;
    const { plugin } = s.d;
    const { key, resource } = run;
    const { namespace, name, uid } = resource.metadata;
    const generation = resource.metadata.generation ?? 0;
    noteObserved(
      `${s.kind} generation ${generation}${resource.metadata.deletionTimestamp ? ", being deleted" : ""}`,
      { "k8s.resource.generation": generation, "k8s.resource.uid": uid },
    );

    // 0. The deletion policy in the intent record, before anything else: after a deletion we miss, the record
    //    is all that says what the person asked for (recordPolicy).
    const recorded = await recordPolicy(s, run);
    if (recorded.stop) return recorded.result;

    // Paused: a person asked us to keep our hands off. Observe nothing, write nothing but the condition (and
    // the record's policy, above: the record is ours, and keeping it current changes nothing they look at).
    // This holds for deletion too (as in Crossplane): the finalizer stays, so the external object cannot be
    // forgotten; deletion proceeds as soon as the annotation is removed.
    if (resource.metadata.annotations?.[plugin.resource.pausedAnnotation] === "true") {
      noteDecision("paused", `the ${plugin.resource.pausedAnnotation} annotation is set: hands off`);
      return paused(s, run);
    }

    // Being deleted: run the story backwards (external object, intent record, then our finalizer).
    if (resource.metadata.deletionTimestamp) {
      s.forgetObject(key);
      noteDecision(
        "finalize",
        `the ${s.kind} is being deleted (deletionPolicy ${deletionPolicyOf(resource)})`,
      );
      return finalize(s, run, signal);
    }

    // Observe only (management policies without Create): read and report, never write (policies.ts).
    if (!policiesOf(resource).create) return observeOnly(s, run, signal);
    // The adoption-policy annotation (adoption.ts): a value that is no policy stops here, before any write.
    const adoption = adoptionRequestOf(plugin.resource, resource);
    if (adoption.kind === "invalid") return invalidAdoptionPolicy(s, run, adoption.message);
    const policy = adoption.kind === "policy" ? adoption.policy : undefined;

    // 1. Finalizer before anything exists outside, or a deletion could slip by unseen.
    const finalizer = await this.#addFinalizer(run);
    if (finalizer.stop) return finalizer.result;

    // 2. The intent record before the external create: if we crash right after the create, the record still
    //    says an object may exist, so nothing leaks and nothing is created twice.
    const externalName = plugin.resource.externalNameOf(namespace, name);
    const ensured = await ensureIntent(s, run, externalName);
    if (ensured.stop) return ensured.result;
    const intent = ensured.value;

    // 3. Observe by the deterministic name, from the list-watch cache (no request); our object renamed away
    //    from it is given its name back (or reported).
    const desired = plugin.resource.desired(resource, { owner: s.d.ownerId, uid, resourceKey: key });
    const seen = await this.#observe(run, externalName, signal);
    if (seen.stop) return seen.result;
    let { observed } = seen.value;
    const { renamedBack } = seen.value;

    // 4. Absent: create it with our owner marks (or adopt it, if the name turns out to hold ours, or — on
    //    request, adoption.ts — an object with no owner mark at all).
    let created = false;
    if (!observed) {
      const made = await createOrAdopt(s, run, externalName, intent, desired, policy, signal);
      if (made.stop) return made.result;
      ({ observed, created } = made.value);
    }

    // 5. Present and ours: compare the managed fields with the observed ones; write only on a difference.
    const repaired = await repairDrift(s, run, observed, desired, signal);
    if (repaired.stop) return repaired.result;
    const patched = repaired.value;

    // 6. Status, written only when it changed: zero writes in steady state.
    return this.#reportSynced(run, patched, { created, renamedBack });
  }

  /** Step 1: our finalizer on the resource, added (resourceVersion-guarded) when it is not there yet. */
  async #addFinalizer(run: Run<R>): Promise<Verdict<void>> {
    const s = this.#s;
    const { resource, key } = run;
    if (resource.metadata.finalizers?.includes(s.d.plugin.resource.finalizer)) return proceed(undefined);
    noteDecision("add-finalizer", "no finalizer yet: add it before anything exists outside");
    const added = await s.kube(
      run,
      Reason.CannotAddFinalizer,
      "cannot add our finalizer",
      () =>
        s.ownWrite(
          "resources",
          key,
          () => s.d.kube.addFinalizer(resource),
          (rv) => rv,
        ),
      { onResource: true },
    );
    if (added.stop) return added;
    return proceed(undefined);
  }

  /**
   * Step 3: this resource's object under `externalName`, from the cache: undefined when none of ours holds
   * the name. Stops while an earlier namesake's object holds it (cleaned up first); our object of this uid
   * renamed away from it is renamed back — `renamedBack`, drift repaired — or left and reported (a stop).
   */
  async #observe(
    run: Run<R>,
    externalName: string,
    signal: AbortSignal,
  ): Promise<Verdict<{ observed: E | undefined; renamedBack: boolean }>> {
    const s = this.#s;
    const { plugin } = s.d;
    const { key, resource } = run;
    const { uid } = resource.metadata;
    const observed: E | undefined = s.d.cache.get(externalName);
    noteObserved(s.describe(externalName, observed), {
      "external.name": externalName,
      "external.present": observed !== undefined,
    });
    if (observed && !isOwnedBy(plugin.external, observed, uid, s.d.ownerId)) {
      // Ours by owner mark but another uid: left by an earlier resource of the same name. Not this one's to
      // adopt; the intent reconciler or the sweep removes it, then we create ours.
      return stop(await s.waitForCleanup(run, `${s.noun} ${externalName} belongs to an earlier ${s.kind}`));
    }
    // The cache shows what we created: nothing left to tell apart from someone else's create.
    if (observed) s.created.delete(key);

    // Nothing of ours under the name, but our object of this uid under another: a person renamed it. It is
    // still this resource's (never a second one beside it): renamed back, or left and reported.
    const renamed = observed ? undefined : renamedAway({ ...s.d, kind: plugin.external }, externalName, uid);
    if (!renamed) {
      s.renamed.delete(key);
      return proceed({ observed, renamedBack: false });
    }
    const back = await renamedBehindOurBack(s, run, renamed, externalName, signal);
    if (back.stop) return back;
    return proceed({ observed: back.value, renamedBack: true });
  }

  /**
   * Step 6: the status of a resource whose object is present and ours: its id and name, `atProvider`,
   * `driftRepairs` (a rename given back counts), `Ready` as seen, `Synced=True` (or `DriftLeftAlone`). Written
   * only when it changed, or when this reconcile wrote outside (`lastSyncTime` says when).
   */
  #reportSynced(
    run: Run<R>,
    patched: { observed: E; wrote: boolean; drift: boolean; leftAlone?: string },
    moved: { created: boolean; renamedBack: boolean },
  ): Promise<ReconcileResult> {
    const s = this.#s;
    const { plugin } = s.d;
    const { resource } = run;
    const { observed } = patched;
    const id = plugin.external.idOf(observed);
    return s.writeStatus(run, {
      fields: {
        observedGeneration: resource.metadata.generation ?? null,
        driftRepairs:
          (resource.status?.driftRepairs ?? 0) + (patched.drift ? 1 : 0) + (moved.renamedBack ? 1 : 0),
        ...plugin.resource.statusOf({ id, name: plugin.external.nameOf(observed) }),
        ...s.atProvider(resource, observed),
      },
      conditions: [
        ready(run.sight),
        synced(
          patched.leftAlone === undefined
            ? { status: "True", reason: Reason.ReconcileSuccess, message: `The ${s.noun} matches the spec` }
            : { status: "True", reason: Reason.DriftLeftAlone, message: patched.leftAlone },
        ),
      ],
      touched: moved.created || patched.wrote || moved.renamedBack,
    });
  }
}

/**
 * The external-resource reconciler: makes an external API hold exactly the object a custom resource
 * describes, and reports what it saw. One reconcile reads as the story (docs/scenarios/):
 *
 *   deletion policy recorded → paused? → being deleted? → adoption policy valid? → finalizer → intent record →
 *   observe by name → not ours? wait → renamed? rename back (or report) → absent? create (or adopt what is
 *   ours, or on request an untagged one) → drift? update → status
 *
 * and deletion runs it backwards. Nothing about one kind of external object lives here: that is the
 * plugin's (contract.ts).
 *
 * Every exit is a `return` where it happens (as kube-rs's finalizer() and Crossplane's managed Reconcile do):
 * a step that may end the reconcile returns a {@link Verdict} — go on with a value, or stop with a result —
 * and its caller returns the result at once (`if (v.stop) return v.result`). Nothing is thrown to leave early.
 *
 * Errors, the same in all three reconcilers (this one, intent-reconciler.ts, sweep.ts): never thrown to the
 * controller loop, always RETURNED as `failed(...)` (or `done()` when the resource turns out to be gone). A
 * step that fails — on either side — returns `failed` at its call site, after reporting it in
 * `Synced=False` with the step's reason, and in `Ready` what the reconcile knew of the external object when
 * it stopped (status.ts defines both; never an earlier `Ready=True` kept); anything no step foresaw (a bug,
 * a plugin that throws) is caught once around the whole reconcile and returned the same way, with
 * {@link Reason.ReconcileError}. Why returned, not
 * thrown: only the reconciler can report a failure where a person looks (the resource's conditions), and a
 * result is what the loop (queue/controller.ts) acts on; a throw would reach it with no condition written.
 * One failure writes no condition: the write fence closed mid-reconcile (a {@link FencedError}: leadership
 * lost, or stopping). Every write after it would be refused too, so the reconcile stops where it was and
 * returns `failed` with it, whichever step met it; recording an Event never throws, so an Event dropped by
 * the closed fence never turns a step that succeeded (a create) into a failure.
 *
 * One failure is not retried: a create or an update the external API refused for good (classify says
 * "rejected", e.g. a 422 for a rule of its own). Retrying the same spec cannot help, so it returns
 * `terminal(...)` (no requeue, no backoff) after `Synced=False` {@link Reason.SpecRejected} with the API's
 * words and one Warning event, and sends that spec again only when a person asks: a new generation, or a
 * changed annotation (the refresh). A resync, a restart or an external event finds the refusal in the
 * status and does not call the API for it (`#stillRejected`).
 */
import { deepEqual, diffManaged, mergePatchFor, type Json } from "./diff.ts";
import { asError, errorMessage, FencedError, statusCodeOf } from "../support/errors.ts";
import type { OwnWrites } from "../source/own-writes.ts";
import { noteDecision, noteObserved, noteSubject } from "../observability/reconcile-scope.ts";
import {
  done,
  failed,
  requeueAfter,
  terminal,
  type ReconcileResult,
  type Reconciler,
} from "../queue/result.ts";
import type {
  Condition,
  DeletionPolicy,
  Desired,
  IntentRecord,
  JsonObject,
  ManagedResource,
  ManagedStatus,
} from "./contract.ts";
import { adoptableFrom, findOwned, isOwnedBy, renamedAway } from "./ownership.ts";
import {
  adoptionAnnotation,
  adoptionRequestOf,
  adoptionVerdictFor,
  markFieldsOf,
  type AdoptionPolicy,
} from "./adoption.ts";
import { uninstallOf } from "./uninstall.ts";
import { deletionPolicyOf, policiesOf } from "./policies.ts";
import { definitionNameOf } from "./kube-writer.ts";
import type { EventRecorder, SharedDeps } from "./ports.ts";
import {
  Reason,
  ready,
  reasonsFor,
  rfc3339,
  setCondition,
  synced,
  type ConditionInput,
  type ConditionReason,
  type ConditionUpdate,
  type KindReasons,
} from "./status.ts";

/** Everything the reconciler reads and writes. */
export interface ReconcilerDeps<R extends ManagedResource, E> extends SharedDeps<R, E> {
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
  now?: () => Date;
}

/**
 * What a step of the reconcile says: go on with `value`, or stop the reconcile with `result` (a failure
 * already reported, a wait, a conflict). The caller returns a stop at once: `if (v.stop) return v.result`.
 */
type Verdict<T> =
  { readonly stop: false; readonly value: T } | { readonly stop: true; readonly result: ReconcileResult };

const proceed = <T>(value: T): Verdict<T> => ({ stop: false, value });
const stop = (result: ReconcileResult): Verdict<never> => ({ stop: true, result });

/** A step failed: `reason` goes into `Synced=False`, `error` into the `failed` result. */
interface StepFailure {
  readonly reason: ConditionReason;
  readonly error: Error;
  readonly retryAfterMs?: number | undefined;
  /** True when the failure says the resource itself is gone (a 404 on it): nothing left to report on. */
  readonly resourceGone?: boolean;
}

/** What one reconcile knows of the external object so far: the `Ready` it reports (status.ts). */
type Sight = Omit<ConditionInput, "observedGeneration">;

/**
 * One reconcile of one resource: its key, the resource as the cache showed it, and what the reconcile has
 * seen of its external object so far: the `Ready` any exit reports, a failure's too (`#fail`). It starts
 * Unknown (nothing seen yet) and each step that learns more moves it, so no exit keeps an earlier Ready=True
 * it cannot vouch for.
 */
interface Run<R> {
  readonly key: string;
  readonly resource: R;
  sight: Sight;
  /** The intent record as this reconcile wrote it ({@link #recordPolicy}): the cache trails our own write. */
  recorded?: IntentRecord;
}

/**
 * Whether an external call sends the spec (a create, an update): only then does a "rejected" answer mean
 * the spec must change ({@link Reason.SpecRejected}); any other call so refused is retried like a failure.
 */
type Input = "spec" | "other";

/**
 * The deletion policy of a resource: Delete when unset; Orphan when its management policies leave out
 * Delete (policies.ts).
 */
export function policyOf(resource: ManagedResource): DeletionPolicy {
  return deletionPolicyOf(resource);
}

/** Status fields to merge, and conditions to set; `touched` forces a write (lastSyncTime moves). */
interface StatusUpdate {
  fields?: Record<string, Json>;
  conditions: ConditionUpdate[];
  touched?: boolean;
}

/** Reconciles one managed resource, keyed `namespace/name`. */
export class ExternalResourceReconciler<R extends ManagedResource, E extends object> implements Reconciler {
  readonly #d: ReconcilerDeps<R, E>;
  readonly #now: () => Date;
  readonly #reasons: KindReasons;
  /** The external noun in messages ("cloud shape"). */
  readonly #noun: string;
  /** The resource's kind in messages ("Shape"). */
  readonly #kind: string;
  /** Resources whose name a foreign object holds, with the holder's id: looked at again every few seconds. */
  readonly #conflicts = new Map<string, string>();
  /**
   * Resources whose object was renamed behind our back and is left under its new name, with that object's id
   * and name: the Warning event is recorded once per new name, not at every look.
   */
  readonly #renamed = new Map<string, string>();
  /**
   * External ids this process created, by resource key, until the cache shows them: an adoption of one of
   * these is our own create seen late (the cache trailing our write), not news for a person.
   */
  readonly #created = new Map<string, string>();
  /**
   * Resources whose spec the external API refused for good, with their annotations when it did (JSON): that
   * generation is not sent again while they stay the same. A changed annotation (the refresh) sends it again.
   */
  readonly #rejected = new Map<string, string>();
  /**
   * Resources whose deletion this process finished (our finalizer removed), with the resourceVersion it let
   * go, until the cache drops them: a reconcile of that same version (the cache trailing our own write, while
   * the external delete's event brought the key back) has nothing left to do, and reads nothing.
   */
  readonly #letGo = new Map<string, string>();

  constructor(deps: ReconcilerDeps<R, E>) {
    this.#d = deps;
    this.#now = deps.now ?? (() => new Date());
    this.#reasons = reasonsFor(deps.plugin.external.noun.reason);
    this.#noun = deps.plugin.external.noun.text;
    this.#kind = deps.plugin.resource.kind;
  }

  /**
   * Never throws: every failure is reported in `Synced=False` and returned as `failed`, or as `terminal` when
   * the external API refused the spec for good.
   */
  async reconcile(key: string, signal: AbortSignal): Promise<ReconcileResult> {
    const resource = this.#d.resources.get(key);
    // Gone from the cache: nothing to do. A normal deletion went through our finalizer; a missed one is
    // caught by the intent reconciler (its record now dangles).
    if (!resource) {
      this.#letGo.delete(key);
      this.#conflicts.delete(key);
      this.#renamed.delete(key);
      this.#created.delete(key);
      this.#rejected.delete(key);
      noteSubject("gone");
      noteDecision("forget", `${this.#kind} ${key} is gone: nothing left to do here`);
      return done();
    }
    noteSubject("present");
    const run: Run<R> = { key, resource, sight: this.#unobserved() };
    try {
      return await this.#reconcile(key, run, signal);
    } catch (err) {
      // Nothing foresaw this one (every step returns its own failure). Still a failure to report, returned.
      return this.#failUnforeseen(run, err);
    }
  }

  async #reconcile(key: string, run: Run<R>, signal: AbortSignal): Promise<ReconcileResult> {
    const { plugin, kube } = this.#d;
    const { resource } = run;
    const { namespace, name, uid } = resource.metadata;
    const generation = resource.metadata.generation ?? 0;
    noteObserved(
      `${this.#kind} generation ${generation}${resource.metadata.deletionTimestamp ? ", being deleted" : ""}`,
      { "k8s.resource.generation": generation, "k8s.resource.uid": uid },
    );

    // 0. The deletion policy in the intent record, before anything else: after a deletion we miss, the record
    //    is all that says what the person asked for (#recordPolicy).
    const recorded = await this.#recordPolicy(run);
    if (recorded.stop) return recorded.result;

    // Paused: a person asked us to keep our hands off. Observe nothing, write nothing but the condition (and
    // the record's policy, above: the record is ours, and keeping it current changes nothing they look at).
    // This holds for deletion too (as in Crossplane): the finalizer stays, so the external object cannot be
    // forgotten; deletion proceeds as soon as the annotation is removed.
    if (resource.metadata.annotations?.[plugin.resource.pausedAnnotation] === "true") {
      noteDecision("paused", `the ${plugin.resource.pausedAnnotation} annotation is set: hands off`);
      return this.#paused(run);
    }

    // Being deleted: run the story backwards (external object, intent record, then our finalizer).
    if (resource.metadata.deletionTimestamp) {
      this.#conflicts.delete(key);
      this.#renamed.delete(key);
      this.#created.delete(key);
      this.#rejected.delete(key);
      noteDecision("finalize", `the ${this.#kind} is being deleted (deletionPolicy ${policyOf(resource)})`);
      return this.#finalize(run, signal);
    }

    // Observe only (management policies without Create): read and report, never write (policies.ts).
    if (!policiesOf(resource).create) return this.#observeOnly(run, signal);
    // The adoption-policy annotation (adoption.ts): a value that is no policy stops here, before any write.
    const adoption = adoptionRequestOf(plugin.resource, resource);
    if (adoption.kind === "invalid") return this.#invalidAdoptionPolicy(run, adoption.message);
    const policy = adoption.kind === "policy" ? adoption.policy : undefined;

    // 1. Finalizer before anything exists outside, or a deletion could slip by unseen.
    if (!resource.metadata.finalizers?.includes(plugin.resource.finalizer)) {
      noteDecision("add-finalizer", "no finalizer yet: add it before anything exists outside");
      const added = await this.#kube(
        run,
        Reason.CannotAddFinalizer,
        "cannot add our finalizer",
        () =>
          this.#ownWrite(
            "resources",
            key,
            () => kube.addFinalizer(resource),
            (rv) => rv,
          ),
        { onResource: true },
      );
      if (added.stop) return added.result;
    }

    // 2. The intent record before the external create: if we crash right after the create, the record still
    //    says an object may exist, so nothing leaks and nothing is created twice.
    const externalName = plugin.resource.externalNameOf(namespace, name);
    const ensured = await this.#ensureIntent(run, externalName);
    if (ensured.stop) return ensured.result;
    const intent = ensured.value;

    // 3. Observe by the deterministic name, from the list-watch cache (no request).
    const desired = plugin.resource.desired(resource, {
      owner: this.#d.ownerId,
      uid,
      resourceKey: key,
    });
    let observed: E | undefined = this.#d.cache.get(externalName);
    noteObserved(this.#describe(externalName, observed), {
      "external.name": externalName,
      "external.present": observed !== undefined,
    });
    if (observed && !isOwnedBy(plugin.external, observed, uid, this.#d.ownerId)) {
      // Ours by owner mark but another uid: left by an earlier resource of the same name. Not this one's to
      // adopt; the intent reconciler or the sweep removes it, then we create ours.
      return this.#waitForCleanup(run, `${this.#noun} ${externalName} belongs to an earlier ${this.#kind}`);
    }

    // The cache shows what we created: nothing left to tell apart from someone else's create.
    if (observed) this.#created.delete(key);

    // Nothing of ours under the name, but our object of this uid under another: a person renamed it. It is
    // still this resource's (never a second one beside it): renamed back, or left and reported.
    const renamed = observed
      ? undefined
      : renamedAway({ ...this.#d, kind: plugin.external }, externalName, uid);
    // A rename given back is drift repaired: the status counts it (driftRepairs) and says when (lastSyncTime).
    let renamedBack = false;
    if (renamed) {
      const back = await this.#renamedBehindOurBack(run, renamed, externalName, signal);
      if (back.stop) return back.result;
      observed = back.value;
      renamedBack = true;
    } else this.#renamed.delete(key);

    // 4. Absent: create it with our owner marks (or adopt it, if the name turns out to hold ours, or — on
    //    request, adoption.ts — an object with no owner mark at all).
    let created = false;
    if (!observed) {
      if (policy === "adopt") {
        noteDecision(
          "look-to-adopt",
          `no ${this.#noun} of ours is named ${externalName}; ${adoptionAnnotation(plugin.resource)}: adopt takes over one with no owner tag, never creates`,
        );
      } else noteDecision("create", `no ${this.#noun} of ours is named ${externalName}`);
      run.sight = {
        status: "False",
        reason: Reason.Absent,
        message: `No ${this.#noun} of this ${this.#kind} exists: none of ours is named ${externalName}`,
      };
      const made = await this.#createOrAdopt(key, run, intent, desired, policy, signal);
      if (made.stop) return made.result;
      ({ observed, created } = made.value);
    }

    // 5. Present and ours: compare the managed fields with the observed ones; write only on a difference.
    const repaired = await this.#repairDrift(run, observed, desired, signal);
    if (repaired.stop) return repaired.result;
    const patched = repaired.value;
    observed = patched.observed;

    // 6. Status, written only when it changed: zero writes in steady state.
    const id = plugin.external.idOf(observed);
    return this.#writeStatus(run, {
      fields: {
        observedGeneration: resource.metadata.generation ?? null,
        driftRepairs: (resource.status?.driftRepairs ?? 0) + (patched.drift ? 1 : 0) + (renamedBack ? 1 : 0),
        ...plugin.resource.statusOf({ id, name: plugin.external.nameOf(observed) }),
        ...this.#atProvider(resource, observed),
      },
      conditions: [
        ready(run.sight),
        synced(
          patched.leftAlone === undefined
            ? {
                status: "True",
                reason: Reason.ReconcileSuccess,
                message: `The ${this.#noun} matches the spec`,
              }
            : { status: "True", reason: Reason.DriftLeftAlone, message: patched.leftAlone },
        ),
      ],
      touched: created || patched.wrote || renamedBack,
    });
  }

  /**
   * Step 0: an intent record of this resource that says another deletion policy than the resource is brought
   * up to date (our owner id too, while at it), before any exit: paused, being deleted, observe only, an
   * invalid adoption policy. A person who switches to Orphan and then deletes the resource with its finalizer
   * removed by hand, or while it is paused, or stuck in deletion, finds the switch kept by any reconcile that
   * came between (intent-reconciler.ts reads it; a switch no reconcile saw is the tombstones' part:
   * tombstones.ts). Writing it while paused is deliberate: the record is the controller's own bookkeeping,
   * neither the person's resource nor the external object a pause protects. No record yet (step 2 writes
   * one), one of an earlier namesake, or one that agrees: nothing to do.
   */
  async #recordPolicy(run: Run<R>): Promise<Verdict<void>> {
    const { plugin, kube, ownerId } = this.#d;
    const { resource } = run;
    const { namespace, name, uid } = resource.metadata;
    const externalName = plugin.resource.externalNameOf(namespace, name);
    const intent = this.#d.intents.get(externalName);
    const deletionPolicy = policyOf(resource);
    if (!intent || intent.resource.uid !== uid || intent.deletionPolicy === deletionPolicy) {
      return proceed(undefined);
    }
    noteDecision(
      "update-intent",
      `the record says deletionPolicy ${intent.deletionPolicy}, the ${this.#kind} ${deletionPolicy}: the record first`,
    );
    const recorded: IntentRecord = { ...intent, deletionPolicy, owner: ownerId };
    const updated = await this.#kube(
      run,
      Reason.CannotRecordIntent,
      `cannot record the intent ${externalName}`,
      () => kube.updateIntentSpec(externalName, plugin.resource.intentSpec(recorded)),
    );
    if (updated.stop) return updated;
    run.recorded = recorded;
    return proceed(undefined);
  }

  /**
   * The intent record of `resource`: created (Pending) when missing, its deletion policy and owner kept
   * current. Stops the reconcile while the name still holds an earlier namesake's record.
   */
  async #ensureIntent(run: Run<R>, externalName: string): Promise<Verdict<IntentRecord>> {
    const { plugin, kube, ownerId } = this.#d;
    const { resource } = run;
    const { namespace, name, uid } = resource.metadata;
    const what = `cannot record the intent ${externalName}`;
    // What the record must say: whose it is, its object's name, the deletion policy, our owner id.
    const wanted = {
      resource: { namespace, name, uid },
      externalName,
      deletionPolicy: policyOf(resource),
      owner: ownerId,
    };
    let intent = run.recorded ?? this.#d.intents.get(externalName);
    noteObserved(
      intent
        ? `${plugin.resource.intentKind} ${externalName} ${intent.phase}${intent.externalId ? ` (${intent.externalId})` : ""}`
        : `${plugin.resource.intentKind} ${externalName}: absent`,
    );
    if (!intent) {
      noteDecision(
        "record-intent",
        `no ${plugin.resource.intentKind} yet: write it (Pending) before any create`,
      );
      const spec = plugin.resource.intentSpec(wanted);
      const made = await this.#kube(run, Reason.CannotRecordIntent, what, async () => {
        try {
          await kube.createIntent(externalName, spec);
          return undefined;
        } catch (err) {
          // 409: it exists and our cache has not seen it yet (its informer may be catching up after a
          // restart). Read it and go on, instead of failing until the cache catches up.
          if (statusCodeOf(err) !== 409) throw err;
          const live = await kube.readIntent(externalName);
          if (!live) throw new Error(`${what}: it existed, then it did not`, { cause: err });
          return live;
        }
      });
      if (made.stop) return made;
      // Just created: a Pending record of ours, as the next informer event will show it.
      intent = made.value ?? { ...wanted, name: externalName, uid: "", phase: "Pending" };
    }
    if (intent.resource.uid !== uid) {
      // An earlier resource of the same name left its record: the intent reconciler cleans it up first.
      return stop(
        await this.#waitForCleanup(
          run,
          `${plugin.resource.intentKind} ${externalName} still belongs to an earlier ${this.#kind}`,
        ),
      );
    }
    if (intent.deletionPolicy !== wanted.deletionPolicy || intent.owner !== wanted.owner) {
      // The policy changed (or the record predates a field): the record keeps it current, so a deletion we
      // miss still honours the policy, and a person sees whose record it is.
      noteDecision(
        "update-intent",
        `the record says ${intent.deletionPolicy}, owner ${intent.owner ?? "none"}`,
      );
      const spec = plugin.resource.intentSpec({ ...intent, ...wanted });
      const updated = await this.#kube(run, Reason.CannotRecordIntent, what, () =>
        kube.updateIntentSpec(externalName, spec),
      );
      if (updated.stop) return updated;
    }
    return proceed(intent);
  }

  /**
   * Creates the external object; when the name is taken, reads the holder: adopts it if it is ours (this
   * resource's, under our owner id or an earlier one), or — when `policy` asks (adoption.ts) — if it carries
   * no owner mark at all, and otherwise stops the reconcile: a wait while an earlier namesake's is cleaned up,
   * or the conflict reported and a look again in a few seconds. With `policy` "adopt" it never creates: it
   * reads the name first, and stops when nothing holds it.
   */
  async #createOrAdopt(
    key: string,
    run: Run<R>,
    intent: IntentRecord,
    desired: Desired,
    policy: AdoptionPolicy | undefined,
    signal: AbortSignal,
  ): Promise<Verdict<{ observed: E; created: boolean }>> {
    const { plugin, client, events } = this.#d;
    const { external } = plugin;
    const { resource } = run;
    const uid = resource.metadata.uid;
    const readHolder = () =>
      this.#external(run, this.#reasons.CannotObserve, `cannot read ${this.#noun} ${desired.name}`, () =>
        client.getByName(desired.name, signal),
      );

    // A foreign object held the name last time. Our watch never sees it go (it is not ours), so read by
    // name: a consistent point read, no write. Still there: nothing to create.
    // With "adopt" (adoption.ts) nothing is created: read the name, and stop when nothing holds it.
    let holder: E | undefined;
    if (this.#conflicts.has(key) || policy === "adopt") {
      const read = await readHolder();
      if (read.stop) return read;
      holder = read.value;
    }
    if (!holder && policy === "adopt") return stop(await this.#nothingToAdopt(run, desired.name));
    if (!holder) {
      // The API refused this very spec before: not sent again until the spec changes or a refresh asks.
      const refused = this.#stillRejected(run);
      if (refused) return stop(await this.#keepRejected(run, refused));
      try {
        const created = await this.#ownWrite(
          "external",
          desired.name,
          () => client.create(desired, signal),
          (obj) => String(external.revisionOf(obj)),
        );
        this.#conflicts.delete(key);
        this.#created.set(key, external.idOf(created));
        const message = `Created ${this.#noun} ${external.nameOf(created)} (${external.idOf(created)})`;
        events.record(resource, "Normal", this.#reasons.Created, message);
        return proceed({ observed: created, created: true });
      } catch (err) {
        if (client.classify(err).failure !== "conflict") {
          const what = `cannot create ${this.#noun} ${desired.name}`;
          return stop(await this.#failExternal(run, this.#reasons.CannotCreate, what, err, "spec"));
        }
      }
      // The name is taken. One live read of the holder settles whose it is; until then, whose is not known.
      run.sight = {
        status: "Unknown",
        reason: Reason.Unobserved,
        message: `${capitalized(this.#noun)} ${desired.name} exists, and whose it is has not been read yet`,
      };
      const read = await readHolder();
      if (read.stop) return read;
      holder = read.value;
      // Deleted between our create and our read: simply try again (a failure like any other: Synced says so).
      if (!holder) {
        const error = new Error(
          `cannot create ${this.#noun} ${desired.name}: the name was taken, then freed`,
        );
        run.sight = {
          status: "False",
          reason: Reason.Absent,
          message: `No ${this.#noun} of this ${this.#kind} exists: the name ${desired.name} was taken, then freed`,
        };
        return stop(await this.#fail(run, { reason: this.#reasons.CannotCreate, error }));
      }
    }

    // Ours from an earlier attempt (a crash after the create, or a cache that has not caught up yet): adopt.
    // News for a person only when our record did not know it yet: a cache trailing our own write is not.
    if (isOwnedBy(external, holder, uid, this.#d.ownerId)) {
      noteDecision(
        "adopt",
        `the name is held by ${external.idOf(holder)}, ours: created earlier for this ${this.#kind}`,
      );
      this.#conflicts.delete(key);
      if (!this.#knows(key, resource, intent, external.idOf(holder))) {
        const message = `Adopted ${this.#noun} ${desired.name} (${external.idOf(holder)}), created earlier for this ${this.#kind}`;
        events.record(resource, "Normal", this.#reasons.Adopted, message);
      }
      return proceed({ observed: holder, created: false });
    }
    // Ours under an earlier owner id (created before an upgrade): re-mark it as ours, with any drift, in one
    // update; without Update in the management policies, re-mark it only (adoption.ts).
    const from = adoptableFrom(external, holder, uid, this.#d.adoptOwnerIds);
    if (from !== undefined) {
      const { patch, marksOnly } = this.#adoptionPatch(run, desired, holder);
      noteDecision(
        "adopt",
        `the name is held by ${external.idOf(holder)}, ours under the earlier owner id ${from}${marksOnly ? `: retag it only, ${this.#noUpdate(run)}` : ""}`,
      );
      const current = holder;
      run.sight = {
        status: "False",
        reason: Reason.SpecMismatch,
        message: `${capitalized(this.#noun)} ${desired.name} (${external.idOf(holder)}) is this ${this.#kind}'s under the earlier owner id ${JSON.stringify(from)}, not retagged to ours yet`,
      };
      const refused = this.#stillRejected(run);
      if (refused) return stop(await this.#keepRejected(run, refused));
      const adopted = await this.#external(
        run,
        this.#reasons.CannotUpdate,
        `cannot adopt ${this.#noun} ${desired.name} from owner ${JSON.stringify(from)}`,
        () => client.update(current, patch, signal),
        "spec",
      );
      if (adopted.stop) return adopted;
      this.#conflicts.delete(key);
      this.#d.counters.adopted(from);
      const message = `Adopted ${this.#noun} ${desired.name} (${external.idOf(holder)}): retagged from owner ${JSON.stringify(from)} to ours${marksOnly ? `, nothing else written (${this.#noUpdate(run)})` : ""}`;
      events.record(resource, "Normal", this.#reasons.Adopted, message);
      return proceed({ observed: adopted.value, created: false });
    }
    // Ours by owner mark, another uid: an earlier namesake left it; its cleanup comes first.
    const owner = external.marksOf(holder).owner;
    if (owner === this.#d.ownerId) {
      noteDecision(
        "wait-for-cleanup",
        `the name is held by ${external.idOf(holder)}, an earlier ${this.#kind}'s`,
      );
      return stop(
        await this.#waitForCleanup(run, `${this.#noun} ${desired.name} belongs to an earlier ${this.#kind}`),
      );
    }
    // Adoption on request (adoption.ts): an object with no owner mark at all is taken over; one with
    // another's owner mark is refused below, naming that owner.
    const verdict = policy === undefined ? undefined : adoptionVerdictFor(external, holder);
    if (policy !== undefined && verdict?.act === "adopt") {
      return this.#adoptOnRequest(key, run, holder, desired, policy, signal);
    }
    // Someone else's object holds our deterministic name. Leave it alone, tell a person (once per holder),
    // and look again in a few seconds: when they free the name, we take it.
    const holderId = external.idOf(holder);
    noteDecision(
      verdict ? "refuse-adoption" : "leave-foreign",
      `the name is held by ${holderId}, not ours (owner ${JSON.stringify(owner ?? null)}): never touch it`,
    );
    const reason = verdict ? Reason.OwnedByAnother : Reason.NameConflict;
    const message = verdict
      ? `cannot adopt ${this.#noun} ${desired.name} (${holderId}): it is owned by owner id ${JSON.stringify(owner ?? null)}, not ours, and another's object is never adopted; rename the ${this.#kind} or have that owner release it`
      : `cannot create ${this.#noun} ${desired.name}: the name is held by ${holderId}, which is not ours (owner tag ${JSON.stringify(owner ?? null)}); rename the ${this.#kind} or free the name`;
    if (this.#conflicts.get(key) !== holderId) {
      this.#conflicts.set(key, holderId);
      this.#d.counters.foreignSeen();
      this.#d.log.warn({ key, holder: holderId, owner }, message);
      events.record(resource, "Warning", reason, message);
    }
    const recheck = requeueAfter(this.#d.conflictRecheckMs ?? 5_000);
    return stop(
      await this.#writeStatus(
        run,
        {
          fields: { observedGeneration: resource.metadata.generation ?? null },
          conditions: [
            ready({ status: "False", reason, message }),
            synced({ status: "False", reason, message }),
          ],
        },
        recheck,
      ),
    );
  }

  /**
   * Adoption on request (adoption.ts): `holder` holds the name and carries no owner mark. One conditional
   * update sets our owner marks and the spec's managed fields together (our owner marks only, when the
   * management policies leave out Update), the intent record written before it (in step 2), and one Normal
   * event says so; a refusal of the spec, a stale revision or any failure is handled as for any update.
   */
  async #adoptOnRequest(
    key: string,
    run: Run<R>,
    holder: E,
    desired: Desired,
    policy: AdoptionPolicy,
    signal: AbortSignal,
  ): Promise<Verdict<{ observed: E; created: boolean }>> {
    const { plugin, client, events } = this.#d;
    const { external } = plugin;
    const id = external.idOf(holder);
    const annotation = `${adoptionAnnotation(plugin.resource)}: ${policy}`;
    const { patch, marksOnly } = this.#adoptionPatch(run, desired, holder);
    const what = marksOnly
      ? `retag it as ours, nothing else (${this.#noUpdate(run)})`
      : "retag it as ours and bring it to the spec in one update";
    noteDecision(
      "adopt-on-request",
      `the name is held by ${id}, which carries no owner tag, and ${annotation} asks: ${what}`,
    );
    run.sight = {
      status: "False",
      reason: Reason.Absent,
      message: `No ${this.#noun} of this ${this.#kind} exists yet: ${desired.name} (${id}) carries no owner tag and is not adopted yet`,
    };
    const refused = this.#stillRejected(run);
    if (refused) return stop(await this.#keepRejected(run, refused));
    const adopted = await this.#external(
      run,
      this.#reasons.CannotUpdate,
      `cannot adopt ${this.#noun} ${desired.name}`,
      () =>
        this.#ownWrite(
          "external",
          desired.name,
          () => client.update(holder, patch, signal),
          (obj) => String(external.revisionOf(obj)),
        ),
      "spec",
    );
    if (adopted.stop) return adopted;
    this.#conflicts.delete(key);
    const done = marksOnly
      ? `retagged as ours, nothing else written (${this.#noUpdate(run)})`
      : "retagged as ours and brought to the spec in one update";
    const message = `Adopted ${this.#noun} ${desired.name} (${id}) on request (${annotation}): it carried no owner tag; ${done}`;
    events.record(run.resource, "Normal", this.#reasons.Adopted, message);
    return proceed({ observed: adopted.value, created: false });
  }

  /**
   * `renamed` is this resource's object (our owner id, its uid), renamed behind our back away from `name`.
   * With Update in the management policies and a client that can rename ({@link ExternalClient.rename}), one
   * conditional rename gives it its name back, and a Warning event names the name it was given. Otherwise —
   * no Update, no rename call, or another object took the name meanwhile ("conflict") — it is left under the
   * new name: `Ready=False` and `Synced=False` {@link Reason.Renamed} name it, one Warning event per new name,
   * and a look again in a few seconds. Either way no second object is created: the uid mark says this one is
   * the resource's, and the sweep never takes it for a leak (sweep.ts).
   */
  async #renamedBehindOurBack(
    run: Run<R>,
    renamed: E,
    name: string,
    signal: AbortSignal,
  ): Promise<Verdict<E>> {
    const { plugin, client, events } = this.#d;
    const { external } = plugin;
    const { resource, key } = run;
    const id = external.idOf(renamed);
    const now = external.nameOf(renamed);
    const policies = policiesOf(resource);
    const rename = client.rename?.bind(client);
    run.sight = {
      status: "False",
      reason: Reason.Renamed,
      message: `${capitalized(this.#noun)} ${id} of this ${this.#kind} was renamed from ${name} to ${now} behind our back`,
    };
    let leftBecause: string;
    if (!policies.update) leftBecause = `spec.managementPolicies ${policies.text} has no Update`;
    else if (!rename) leftBecause = `this controller cannot rename a ${this.#noun}`;
    else {
      noteDecision(
        "rename-back",
        `${this.#noun} ${id} of this ${this.#kind} is named ${now}, not ${name}: give its name back`,
      );
      try {
        const back = await this.#ownWrite(
          "external",
          name,
          () => rename(renamed, name, signal),
          (obj) => String(external.revisionOf(obj)),
        );
        this.#renamed.delete(key);
        this.#d.counters.driftRepaired();
        events.record(
          resource,
          "Warning",
          this.#reasons.Renamed,
          `${capitalized(this.#noun)} ${name} (${id}) was renamed to ${now} behind our back; renamed it back to ${name}`,
        );
        return proceed(back);
      } catch (err) {
        if (client.classify(err).failure !== "conflict") {
          return stop(
            await this.#failExternal(
              run,
              this.#reasons.CannotUpdate,
              `cannot rename ${this.#noun} ${now} back to ${name}`,
              err,
            ),
          );
        }
        leftBecause = `another object holds ${name} now`;
      }
    }
    const message = `${capitalized(this.#noun)} ${name} (${id}) of this ${this.#kind} was renamed to ${now} behind our back; left under that name, not deleted and not created again: ${leftBecause}`;
    noteDecision("leave-renamed", message);
    if (this.#renamed.get(key) !== `${id} ${now}`) {
      this.#renamed.set(key, `${id} ${now}`);
      this.#d.log.warn({ key, id, name: now }, message);
      events.record(resource, "Warning", this.#reasons.Renamed, message);
    }
    return stop(
      await this.#writeStatus(
        run,
        {
          fields: {
            observedGeneration: resource.metadata.generation ?? null,
            ...plugin.resource.statusOf({ id, name: now }),
            ...this.#atProvider(resource, renamed),
          },
          conditions: [
            ready({ status: "False", reason: Reason.Renamed, message }),
            synced({ status: "False", reason: Reason.Renamed, message }),
          ],
        },
        requeueAfter(this.#d.conflictRecheckMs ?? 5_000),
      ),
    );
  }

  /**
   * The merge patch that adopts `holder` (adoption.ts): our owner marks with every managed field of the
   * spec; or, when the management policies leave out Update (`marksOnly`), our owner marks alone
   * ({@link markFieldsOf}), the rest left as it is (the next step reports the difference: DriftLeftAlone).
   */
  #adoptionPatch(run: Run<R>, desired: Desired, holder: E): { patch: JsonObject; marksOnly: boolean } {
    const { plugin, ownerId } = this.#d;
    const { resource } = run;
    const marksOnly = !policiesOf(resource).update;
    const fields = marksOnly
      ? markFieldsOf(plugin.resource, resource, {
          owner: ownerId,
          uid: resource.metadata.uid,
          resourceKey: run.key,
        })
      : desired.fields;
    return { patch: mergePatchFor(fields, plugin.external.fieldsOf(holder)) ?? {}, marksOnly };
  }

  /** Why an adoption writes our owner marks only: `spec.managementPolicies [...] has no Update`. */
  #noUpdate(run: Run<R>): string {
    return `spec.managementPolicies ${policiesOf(run.resource).text} has no Update`;
  }

  /** `adopt` and nothing holds the name: nothing to adopt, nothing created; looked at again in a few seconds. */
  async #nothingToAdopt(run: Run<R>, name: string): Promise<ReconcileResult> {
    const annotation = `${adoptionAnnotation(this.#d.plugin.resource)}: adopt`;
    noteDecision("nothing-to-adopt", `no ${this.#noun} is named ${name}, and ${annotation} never creates`);
    const message = `Nothing to adopt: no ${this.#noun} is named ${name}, and ${annotation} never creates one (adopt-or-create would); looked at again every few seconds`;
    return this.#writeStatus(
      run,
      {
        fields: { observedGeneration: run.resource.metadata.generation ?? null },
        conditions: [
          ready({
            status: "False",
            reason: Reason.Absent,
            message: `No ${this.#noun} of this ${this.#kind} exists: none is named ${name}`,
          }),
          synced({ status: "False", reason: Reason.NothingToAdopt, message }),
        ],
      },
      requeueAfter(this.#d.conflictRecheckMs ?? 5_000),
    );
  }

  /**
   * The adoption-policy annotation holds no policy: nothing is written outside (not even the finalizer) until
   * a person fixes it, which changes the annotations and so brings the resource back (no retry meanwhile).
   */
  #invalidAdoptionPolicy(run: Run<R>, message: string): Promise<ReconcileResult> {
    noteDecision("invalid-adoption-policy", message);
    return this.#writeStatus(
      run,
      {
        conditions: [
          ready(run.sight),
          synced({ status: "False", reason: Reason.InvalidAdoptionPolicy, message }),
        ],
      },
      terminal(new Error(message)),
    );
  }

  /**
   * Writes the difference between the desired and the observed managed fields, if any. A difference while
   * the spec did not change is drift (a person or another system changed the object): counted and reported.
   */
  async #repairDrift(
    run: Run<R>,
    observed: E,
    desired: Desired,
    signal: AbortSignal,
  ): Promise<Verdict<{ observed: E; wrote: boolean; drift: boolean; leftAlone?: string }>> {
    const { external } = this.#d.plugin;
    const { resource } = run;
    const fields = external.fieldsOf(observed) as Json;
    const patch = mergePatchFor(desired.fields, fields);
    if (!patch) {
      noteDecision("in-sync", `the ${this.#noun}'s managed fields match the spec: nothing to write`);
      run.sight = this.#available(desired.name);
      return proceed({ observed, wrote: false, drift: false });
    }
    const changes = diffManaged(desired.fields as Json, fields)
      .map((d) => `${d.path}: ${JSON.stringify(d.observed)} → ${JSON.stringify(d.desired)}`)
      .join(", ");
    const policies = policiesOf(resource);
    if (!policies.update) {
      // Management policies without Update: created, then never written; the difference is only reported.
      const leftAlone = `${capitalized(this.#noun)} ${desired.name} differs from the spec (${changes}); left alone: spec.managementPolicies ${policies.text} has no Update`;
      noteDecision("leave-drift", leftAlone);
      run.sight = { status: "True", reason: Reason.Available, message: leftAlone };
      return proceed({ observed, wrote: false, drift: false, leftAlone });
    }
    // Ours, but not as the spec says until the update lands: a failed update leaves it so.
    run.sight = {
      status: "False",
      reason: Reason.SpecMismatch,
      message: `${capitalized(this.#noun)} ${desired.name} differs from the spec: ${changes}`,
    };
    const specChanged = resource.metadata.generation !== resource.status?.observedGeneration;
    noteDecision(
      specChanged ? "update" : "repair-drift",
      specChanged
        ? `the spec changed (generation ${resource.metadata.generation ?? 0}): ${changes}`
        : `someone changed the ${this.#noun}, the spec did not change: ${changes}`,
    );
    // The API refused this very spec before: not sent again until the spec changes or a refresh asks.
    const refused = this.#stillRejected(run);
    if (refused) return stop(await this.#keepRejected(run, refused));
    // A 412 (stale) means the object changed since our cache saw it; the change feed brings the new state.
    const updated = await this.#external(
      run,
      this.#reasons.CannotUpdate,
      `cannot update ${this.#noun} ${desired.name}`,
      () =>
        this.#ownWrite(
          "external",
          desired.name,
          () => this.#d.client.update(observed, patch, signal),
          (obj) => String(external.revisionOf(obj)),
        ),
      "spec",
    );
    if (updated.stop) return updated;
    run.sight = this.#available(desired.name);
    if (specChanged) {
      this.#d.events.record(resource, "Normal", this.#reasons.Updated, `Updated ${desired.name}: ${changes}`);
      return proceed({ observed: updated.value, wrote: true, drift: false });
    }
    // Nobody changed the spec, yet the object differs: someone else changed it.
    this.#d.counters.driftRepaired();
    this.#d.events.record(
      resource,
      "Normal",
      Reason.RepairedCloudDrift,
      `Repaired ${desired.name}: ${changes}`,
    );
    return proceed({ observed: updated.value, wrote: true, drift: true });
  }

  /**
   * Deletion: delete the external object (or release it: deletionPolicy Orphan, or its CRD is being deleted,
   * an uninstall: uninstall.ts), then the intent record, then our finalizer.
   */
  async #finalize(run: Run<R>, signal: AbortSignal): Promise<ReconcileResult> {
    const { plugin, kube, client, events } = this.#d;
    const { resource } = run;
    // Not ours to hold: another finalizer is pending, or we already let go.
    if (!resource.metadata.finalizers?.includes(plugin.resource.finalizer)) return done();
    // We let go of this very version a moment ago; the cache has not seen the deletion yet.
    const version = resource.metadata.resourceVersion;
    if (version !== undefined && this.#letGo.get(run.key) === version) {
      noteDecision("let-go", `our finalizer was removed from version ${version}: the cache trails it`);
      return done();
    }

    const { namespace, name, uid } = resource.metadata;
    const externalName = plugin.resource.externalNameOf(namespace, name);
    // Being deleted, the spec asks for no object (or one let go): whatever exists is not Ready for it.
    const deleting = (what: string): Sight => ({
      status: "False",
      reason: Reason.Deleting,
      message: `The ${this.#kind} is being deleted (deletionPolicy ${policyOf(resource)}): ${what}`,
    });
    run.sight = deleting(`${this.#noun} ${externalName} not looked at yet`);
    const found = await this.#external(
      run,
      this.#reasons.CannotObserve,
      `cannot read ${this.#noun} ${externalName}`,
      () => findOwned({ ...this.#d, kind: plugin.external }, externalName, uid, signal),
    );
    if (found.stop) return found.result;
    const observed = found.value;
    noteObserved(this.#describe(externalName, observed));

    // Delete, unless the resource's CRD is being deleted: an uninstall deletes nothing outside (uninstall.ts).
    // One live read of the CRD; when it fails, nothing is deleted on a guess: the reconcile fails and retries.
    let uninstall: string | undefined;
    if (observed && policyOf(resource) === "Delete") {
      const id = plugin.external.idOf(observed);
      run.sight = deleting(
        `${this.#noun} ${externalName} (${id}) is to be deleted, unless this is an uninstall`,
      );
      const checked = await this.#kube(
        run,
        Reason.CannotCheckUninstall,
        `cannot tell whether the CRD ${definitionNameOf(plugin.resource)} is being deleted`,
        () => uninstallOf(this.#d),
      );
      if (checked.stop) return checked.result;
      uninstall = checked.value;
    }

    if (observed && (policyOf(resource) === "Orphan" || uninstall !== undefined)) {
      // Orphan, or an uninstall: leave the object, but remove our owner marks so we never touch it again.
      const id = plugin.external.idOf(observed);
      const what = `${this.#noun} ${externalName} (${id})`;
      if (uninstall === undefined) {
        noteDecision(
          "orphan",
          `deletionPolicy Orphan: leave ${externalName} in place, without our owner marks`,
        );
        run.sight = deleting(`${what} is to be left in place, not ours any more`);
      } else {
        noteDecision(
          "release-on-uninstall",
          `${externalName} is released, not deleted: ${uninstall}; it stays, without our owner marks`,
        );
        run.sight = deleting(`${what} is to be released, not deleted: ${uninstall}`);
      }
      const released = await this.#externalUnlessGone(
        run,
        this.#reasons.CannotDelete,
        `cannot ${uninstall === undefined ? "orphan" : "release"} ${this.#noun} ${externalName}`,
        () => client.release(observed, signal),
      );
      if (released.stop) return released.result;
      if (uninstall === undefined) {
        run.sight = deleting(`${what} is left in place, not ours any more`);
        const message = `Left ${what} in place without our owner tags`;
        events.record(resource, "Normal", this.#reasons.Orphaned, message);
      } else {
        run.sight = deleting(`${what} is released, not deleted: ${uninstall}`);
        const message = `${capitalized(what)} released, not deleted: ${uninstall}; it stays, without our owner tags`;
        events.record(resource, "Normal", Reason.ReleasedOnUninstall, message);
      }
    } else if (observed) {
      noteDecision("delete", `deletionPolicy Delete: delete ${externalName}, ours`);
      // Only the object as we saw it (a conditional delete): if it changed meanwhile, look again first.
      const id = plugin.external.idOf(observed);
      run.sight = deleting(`${this.#noun} ${externalName} (${id}) is to be deleted`);
      const deleted = await this.#externalUnlessGone(
        run,
        this.#reasons.CannotDelete,
        `cannot delete ${this.#noun} ${externalName}`,
        () => client.delete(observed, signal),
      );
      if (deleted.stop) return deleted.result;
      run.sight = deleting(`${this.#noun} ${externalName} (${id}) is deleted`);
      if (deleted.value)
        events.record(
          resource,
          "Normal",
          this.#reasons.Deleted,
          `Deleted ${this.#noun} ${externalName} (${id})`,
        );
    }

    if (!observed) {
      noteDecision("nothing-outside", `no ${this.#noun} of ours is named ${externalName}`);
      run.sight = deleting(`no ${this.#noun} of ours is named ${externalName}`);
    }
    // The external side is settled: the intent record has nothing left to guard.
    const intent = this.#d.intents.get(externalName);
    if (intent && intent.resource.uid === uid) {
      const forgotten = await this.#kube(
        run,
        Reason.CannotRecordIntent,
        `cannot delete the intent ${externalName}`,
        () => kube.deleteIntent(externalName, intent.uid),
      );
      if (forgotten.stop) return forgotten.result;
    }
    // Last: let Kubernetes delete the resource (resourceVersion-guarded, so a concurrent change is not lost).
    // A 404 means it is already gone (our cache still showed it after an earlier pass let it go): done.
    const letGo = await this.#kube(
      run,
      Reason.CannotRemoveFinalizer,
      "cannot remove our finalizer",
      () => kube.removeFinalizer(resource),
      { onResource: true },
    );
    if (letGo.stop) return letGo.result;
    if (version !== undefined) this.#letGo.set(run.key, version);
    return done();
  }

  /**
   * Observe only (management policies without Create, policies.ts): read the external object by its name and
   * report it — `status.atProvider`, Ready `Available` or `Absent`, Synced `ObserveOnly` — and never write
   * it, whoever's it is. Adds no finalizer and writes no intent record; keeps an existing record of this
   * resource current (its deletion policy is now Orphan: a missed deletion releases ours, deletes nothing).
   * The object need not carry our owner marks, so the cache (ours only) may not hold it: a live read by name,
   * again every {@link ReconcilerDeps.observeRecheckMs}.
   */
  async #observeOnly(run: Run<R>, signal: AbortSignal): Promise<ReconcileResult> {
    const { plugin, client, cache } = this.#d;
    const { resource } = run;
    const { namespace, name } = resource.metadata;
    const externalName = plugin.resource.externalNameOf(namespace, name);
    const policies = policiesOf(resource);
    noteDecision(
      "observe-only",
      `spec.managementPolicies ${policies.text} has no Create: observe ${externalName}, never write it`,
    );
    if (this.#d.intents.get(externalName)) {
      const ensured = await this.#ensureIntent(run, externalName);
      if (ensured.stop) return ensured.result;
    }
    const seen = await this.#external(
      run,
      this.#reasons.CannotObserve,
      `cannot read ${this.#noun} ${externalName}`,
      async () => cache.get(externalName) ?? (await client.getByName(externalName, signal)),
    );
    if (seen.stop) return seen.result;
    const observed = seen.value;
    noteObserved(this.#describe(externalName, observed), {
      "external.name": externalName,
      "external.present": observed !== undefined,
    });
    const recheck = requeueAfter(this.#d.observeRecheckMs ?? 30_000);
    const observing = `Observed only: spec.managementPolicies ${policies.text} has no Create, so the ${this.#noun} is never created, updated or deleted`;
    if (!observed) {
      return this.#writeStatus(
        run,
        {
          fields: { observedGeneration: resource.metadata.generation ?? null, atProvider: {} },
          conditions: [
            ready({
              status: "False",
              reason: Reason.Absent,
              message: `No ${this.#noun} is named ${externalName} (observed only: none is created)`,
            }),
            synced({ status: "True", reason: Reason.ObserveOnly, message: observing }),
          ],
        },
        recheck,
      );
    }
    const id = plugin.external.idOf(observed);
    const owner = plugin.external.marksOf(observed).owner;
    return this.#writeStatus(
      run,
      {
        fields: {
          observedGeneration: resource.metadata.generation ?? null,
          ...plugin.resource.statusOf({ id, name: plugin.external.nameOf(observed) }),
          ...this.#atProvider(resource, observed),
        },
        conditions: [
          ready({
            status: "True",
            reason: Reason.Available,
            message: `${capitalized(this.#noun)} ${externalName} (${id}) exists, owner tag ${JSON.stringify(owner ?? null)} (observed only)`,
          }),
          synced({ status: "True", reason: Reason.ObserveOnly, message: observing }),
        ],
      },
      recheck,
    );
  }

  /** `status.atProvider`, when the plugin has the hook and the management policies are not `["*"]`. */
  #atProvider(resource: R, observed: E): Record<string, Json> {
    const { external } = this.#d.plugin;
    if (!external.atProvider || policiesOf(resource).all) return {};
    return { atProvider: external.atProvider(observed) };
  }

  /**
   * Paused: report it, write nothing else. Nothing is observed, so whether a matching external object exists
   * is not known: Ready=Unknown, never an earlier True kept.
   */
  async #paused(run: Run<R>): Promise<ReconcileResult> {
    const { resource } = run;
    const annotation = this.#d.plugin.resource.pausedAnnotation;
    const message = resource.metadata.deletionTimestamp
      ? `Reconciliation is paused by the ${annotation} annotation; the deletion waits until it is removed`
      : `Reconciliation is paused by the ${annotation} annotation`;
    const unseen = `Not known: the ${this.#noun} is not looked at while the ${annotation} annotation is set`;
    return this.#writeStatus(run, {
      conditions: [
        ready({ status: "Unknown", reason: Reason.ReconcilePaused, message: unseen }),
        synced({ status: "False", reason: Reason.ReconcilePaused, message }),
      ],
    });
  }

  /** Waiting for an earlier namesake's leftovers to go: report it, look again in a few seconds. */
  async #waitForCleanup(run: Run<R>, why: string): Promise<ReconcileResult> {
    const { resource } = run;
    noteDecision("wait-for-cleanup", why);
    const message = `Waiting: ${why}`;
    return this.#writeStatus(
      run,
      {
        fields: { observedGeneration: resource.metadata.generation ?? null },
        conditions: [
          ready({ status: "False", reason: Reason.WaitingForCleanup, message }),
          synced({ status: "False", reason: Reason.WaitingForCleanup, message }),
        ],
      },
      requeueAfter(this.#d.cleanupWaitMs ?? 5_000),
    );
  }

  /** Runs one write whose watch echo the handlers should drop (own-writes.ts). */
  #ownWrite<T>(
    side: "resources" | "external",
    key: string,
    write: () => Promise<T>,
    revisionOf: (answer: T) => string | undefined,
  ): Promise<T> {
    return this.#d.echoes[side].write(key, write, revisionOf);
  }

  /**
   * True when we already knew `id` as this resource's object: its intent record or status says so, or this
   * process created it and the cache has not caught up. An adoption of an object we knew is not news.
   */
  #knows(key: string, resource: R, intent: IntentRecord, id: string): boolean {
    if (intent.externalId === id || this.#created.get(key) === id) return true;
    const status = resource.status as Record<string, unknown> | undefined;
    const said = this.#d.plugin.resource.statusOf({ id, name: "" });
    // The plugin's status names the id in one of its fields (e.g. cloudId): it says so when a field holds it.
    return Object.entries(said).some(([field, value]) => value === id && status?.[field] === id);
  }

  /** What the reconciler saw of its external object, in a few words. */
  #describe(name: string, observed: E | undefined): string {
    if (!observed) return `${this.#noun} ${name}: absent`;
    const { external } = this.#d.plugin;
    const owner = external.marksOf(observed).owner ?? "none";
    return `${this.#noun} ${name}: ${external.idOf(observed)}, revision ${external.revisionOf(observed)}, owner ${owner}`;
  }

  /**
   * Runs one Kubernetes step: its value, or — when it fails — a stop with the failure reported under `reason`
   * ({@link #fail}). With `onResource`, a 404 says the resource itself is gone, which ends the reconcile as done.
   */
  async #kube<T>(
    run: Run<R>,
    reason: ConditionReason,
    what: string,
    step: () => Promise<T>,
    options: { onResource?: boolean } = {},
  ): Promise<Verdict<T>> {
    let value: T;
    try {
      value = await step();
    } catch (err) {
      const resourceGone = options.onResource === true && statusCodeOf(err) === 404;
      return stop(await this.#fail(run, { reason, error: asError(err, what), resourceGone }));
    }
    return proceed(value);
  }

  /**
   * Runs one external step: its value, or a stop with the failure reported under `reason` (and Retry-After),
   * or, for a step that sends the spec (`input`), under {@link Reason.SpecRejected} when the API refused it
   * for good.
   */
  async #external<T>(
    run: Run<R>,
    reason: ConditionReason,
    what: string,
    step: () => Promise<T>,
    input: Input = "other",
  ): Promise<Verdict<T>> {
    let value: T;
    try {
      value = await step();
    } catch (err) {
      return stop(await this.#failExternal(run, reason, what, err, input));
    }
    return proceed(value);
  }

  /**
   * Runs one external delete or release: false when the object was already gone (someone deleted it first,
   * which is what we wanted), true when the step did it; a stop when it failed otherwise.
   */
  async #externalUnlessGone(
    run: Run<R>,
    reason: ConditionReason,
    what: string,
    step: () => Promise<void>,
  ): Promise<Verdict<boolean>> {
    try {
      await step();
    } catch (err) {
      if (this.#d.client.classify(err).failure === "notFound") return proceed(false);
      return stop(await this.#failExternal(run, reason, what, err));
    }
    return proceed(true);
  }

  /**
   * A failed external call, reported under `reason`, retried after the API's Retry-After when it gave one. A
   * call that sent the spec (`input`) and was refused for good is not retried: {@link #rejectSpec}.
   */
  #failExternal(
    run: Run<R>,
    reason: ConditionReason,
    what: string,
    err: unknown,
    input: Input = "other",
  ): Promise<ReconcileResult> {
    const { failure, retryAfterMs } = this.#d.client.classify(err);
    if (failure === "rejected" && input === "spec") return this.#rejectSpec(run, asError(err, what));
    return this.#fail(run, { reason, error: asError(err, what), retryAfterMs });
  }

  /**
   * The external API refused the spec for good (a create or an update, classified "rejected"): retrying it
   * cannot help, a person must change it. Reports `Synced=False` {@link Reason.SpecRejected} with the API's
   * own message, and in `Ready` what this reconcile saw (`Absent`, `SpecMismatch`); records one Warning event
   * (none when the status already says exactly this); remembers the annotations it was refused with (the
   * refresh changes them); and returns `terminal`: no requeue, no backoff. A status write that fails is
   * retried like any failure (the refusal must reach the status, which is what keeps it from being resent).
   */
  async #rejectSpec(run: Run<R>, error: Error): Promise<ReconcileResult> {
    const { key, resource } = run;
    const generation = resource.metadata.generation;
    const message =
      `The ${this.#noun} API refused generation ${generation ?? 0} of the spec for good; change the spec ` +
      `(it is not sent again until it changes, or a refresh asks): ${error.message}`;
    noteDecision("spec-rejected", `the ${this.#noun} API refused the spec for good: ${error.message}`);
    const before = syncedOf(resource);
    const told =
      before?.reason === Reason.SpecRejected &&
      before.observedGeneration === generation &&
      before.message === message;
    if (!told) this.#d.events.record(resource, "Warning", Reason.SpecRejected, message);
    this.#rejected.set(key, annotationsOf(resource));
    const refused = new Error(message, { cause: error });
    try {
      await this.#putStatus(resource, {
        conditions: [ready(run.sight), synced({ status: "False", reason: Reason.SpecRejected, message })],
      });
    } catch (statusErr) {
      if (statusCodeOf(statusErr) === 404) return done();
      this.#d.log.warn({ err: errorMessage(statusErr) }, "cannot record the refusal in status");
      return failed(refused);
    }
    return terminal(refused);
  }

  /**
   * The `Synced=False` {@link Reason.SpecRejected} this resource's status holds for its CURRENT generation,
   * when nothing asked to look again since: then the API already refused this very spec, and sending it again
   * (a resync, a restart's full resync, an external event, a drift to repair) would only be refused again.
   * Undefined — send it — when the status says anything else (a new generation: the spec changed; no such
   * condition: never refused, or the refusal's status write failed) or when the annotations changed since
   * the refusal (the refresh: "look again"). A refusal this process did not see (a restart, another
   * replica's) is taken with the annotations as they are now: a refresh from then on sends it again.
   */
  #stillRejected(run: Run<R>): Condition | undefined {
    const { key, resource } = run;
    const condition = syncedOf(resource);
    if (
      condition?.status !== "False" ||
      condition.reason !== Reason.SpecRejected ||
      condition.observedGeneration !== resource.metadata.generation
    ) {
      this.#rejected.delete(key);
      return undefined;
    }
    const now = annotationsOf(resource);
    const then = this.#rejected.get(key);
    if (then === undefined) this.#rejected.set(key, now);
    else if (then !== now) return undefined;
    return condition;
  }

  /**
   * The spec was refused for good before ({@link #stillRejected}): not sent again. The same `Synced`
   * (no status write when nothing else moved, no event), `Ready` as this reconcile saw it, and `terminal`.
   */
  #keepRejected(run: Run<R>, condition: Condition): Promise<ReconcileResult> {
    noteDecision(
      "keep-rejected",
      `the ${this.#noun} API refused generation ${run.resource.metadata.generation ?? 0} of the spec for good: not sent again until the spec changes or a refresh asks`,
    );
    const { message } = condition;
    return this.#writeStatus(
      run,
      {
        conditions: [ready(run.sight), synced({ status: "False", reason: Reason.SpecRejected, message })],
      },
      terminal(new Error(message)),
    );
  }

  /** Anything no step foresaw (a bug, a plugin that throws, a failed status write): {@link Reason.ReconcileError}. */
  #failUnforeseen(run: Run<R>, err: unknown): Promise<ReconcileResult> {
    const { namespace, name } = run.resource.metadata;
    const error = asError(err, `cannot reconcile ${namespace}/${name}`);
    return this.#fail(run, { reason: Reason.ReconcileError, error });
  }

  /**
   * A failed step: record it in `Synced=False`, and in `Ready` what this reconcile knows of the external
   * object when it stops (`run.sight`: never an earlier True kept, status.ts), then retry with backoff, or
   * after the API's Retry-After. A resource that turns out to be gone (404) is done: nothing to report on.
   */
  async #fail(run: Run<R>, failure: StepFailure): Promise<ReconcileResult> {
    const { resource } = run;
    if (failure.resourceGone === true) {
      noteSubject("gone");
      noteDecision("forget", `the ${this.#kind} is gone (404): nothing left to report on`);
      return done();
    }
    // The fence closed mid-reconcile (leadership lost, or stopping): this process may write nothing more, a
    // status neither. One exit, whichever step met it: failed, for a replica that leads to retry.
    const fenced = fencedIn(failure.error);
    if (fenced) {
      noteDecision("fenced", `${fenced.message}: stopped where it was, nothing more written`);
      return failed(fenced);
    }
    noteDecision("report-failure", `${failure.reason}: ${failure.error.message}`);
    try {
      await this.#putStatus(resource, {
        conditions: [
          ready(run.sight),
          synced({ status: "False", reason: failure.reason, message: failure.error.message }),
        ],
      });
    } catch (statusErr) {
      if (statusCodeOf(statusErr) === 404) return done();
      this.#d.log.warn({ err: errorMessage(statusErr) }, "cannot record the failure in status");
    }
    return failed(failure.error, failure.retryAfterMs);
  }

  /**
   * Merges `next` into the resource's status, writes it only if anything changed, and returns `then` (done by
   * default). The status write is no step of its own: when it fails, that is reported as unforeseen
   * ({@link #failUnforeseen}), by the next write, with the Ready this one meant to write (a failed write
   * changes nothing outside).
   */
  async #writeStatus(
    run: Run<R>,
    next: StatusUpdate,
    then: ReconcileResult = done(),
  ): Promise<ReconcileResult> {
    const meant = next.conditions.find((c) => c.type === "Ready");
    if (meant) run.sight = { status: meant.status, reason: meant.reason, message: meant.message };
    try {
      await this.#putStatus(run.resource, next);
    } catch (err) {
      return this.#failUnforeseen(run, err);
    }
    return then;
  }

  /** Ready=True: the external object `name` was seen (or written) matching the spec. */
  #available(name: string): Sight {
    return {
      status: "True",
      reason: Reason.Available,
      message: `${capitalized(this.#noun)} ${name} matches the spec`,
    };
  }

  /** Ready=Unknown: nothing seen of the external object (the reconcile stopped before, or at, the observe). */
  #unobserved(): Sight {
    return {
      status: "Unknown",
      reason: Reason.Unobserved,
      message: `Not known: the reconcile stopped before it could see the ${this.#noun}`,
    };
  }

  /** Merges `next` into the resource's status and writes it only if anything changed; throws when the write fails. */
  async #putStatus(resource: R, next: StatusUpdate): Promise<void> {
    const now = this.#now();
    const current: ManagedStatus = resource.status ?? {};
    let conditions = current.conditions ?? [];
    // Each condition says which generation of the spec it speaks about.
    for (const c of next.conditions) {
      conditions = setCondition(conditions, { ...c, observedGeneration: resource.metadata.generation }, now);
    }
    const fields = Object.fromEntries(Object.entries(next.fields ?? {}).filter(([, v]) => v !== null));
    const status: ManagedStatus = { ...current, ...fields, conditions };
    const { lastSyncTime: _was, ...before } = current;
    const { lastSyncTime: _is, ...after } = status;
    if (deepEqual(after as Json, before as Json) && !next.touched) return;
    // lastSyncTime moves only when something happened, so steady state costs no write.
    status.lastSyncTime = rfc3339(now);
    await this.#d.kube.updateStatus(resource, status);
  }
}

/** The resource's `Synced` condition, as its status holds it. */
function syncedOf(resource: ManagedResource): Condition | undefined {
  return resource.status?.conditions?.find((c) => c.type === "Synced");
}

/** The resource's annotations, as one comparable string (keys sorted). */
function annotationsOf(resource: ManagedResource): string {
  const annotations = resource.metadata.annotations ?? {};
  return JSON.stringify(
    Object.keys(annotations)
      .sort()
      .map((k) => [k, annotations[k]]),
  );
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The {@link FencedError} `error` is, or was caused by: a step refused by the write fence. */
function fencedIn(error: Error): FencedError | undefined {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof FencedError) return e;
  }
  return undefined;
}

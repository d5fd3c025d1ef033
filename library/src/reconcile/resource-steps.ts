/**
 * What the stories of the external-resource reconciler (reconciler.ts and the files it calls:
 * intent-record.ts, create-or-adopt.ts, drift.ts, finalize.ts, observe-only.ts, rejected-specs.ts) share:
 * one reconcile's {@link Run}, the reconciler's memory between reconciles, and the steps every story is
 * made of — a Kubernetes call, an external call, a failure reported, a status written.
 */
import { deepEqual, type Json } from "./diff.ts";
import { asError, errorMessage, FencedError, statusCodeOf } from "../support/errors.ts";
import { noteDecision, noteSubject } from "../observability/reconcile-scope.ts";
import { done, failed, requeueAfter, type ReconcileResult } from "../queue/result.ts";
import type { ManagedResource, ManagedStatus, IntentRecord } from "./contract.ts";
import { policiesOf } from "./policies.ts";
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
import { attempt, proceed, stop, type Verdict } from "./step.ts";
import { rejectSpec } from "./rejected-specs.ts";
import type { ReconcilerDeps } from "./reconciler.ts";

/** A step failed: `reason` goes into `Synced=False`, `error` into the `failed` result. */
export interface StepFailure {
  readonly reason: ConditionReason;
  readonly error: Error;
  readonly retryAfterMs?: number | undefined;
  /** True when the failure says the resource itself is gone (a 404 on it): nothing left to report on. */
  readonly resourceGone?: boolean;
}

/** What one reconcile knows of the external object so far: the `Ready` it reports (status.ts). */
export type Sight = Omit<ConditionInput, "observedGeneration">;

/**
 * One reconcile of one resource: its key, the resource as the cache showed it, and what the reconcile has
 * seen of its external object so far: the `Ready` any exit reports, a failure's too (`fail`). It starts
 * Unknown (nothing seen yet) and each step that learns more moves it, so no exit keeps an earlier Ready=True
 * it cannot vouch for.
 */
export interface Run<R> {
  readonly key: string;
  readonly resource: R;
  sight: Sight;
  /** The intent record as this reconcile wrote it (`recordPolicy`): the cache trails our own write. */
  recorded?: IntentRecord;
}

/**
 * Whether an external call sends the spec (a create, an update): only then does a "rejected" answer mean
 * the spec must change ({@link Reason.SpecRejected}); any other call so refused is retried like a failure.
 */
export type Input = "spec" | "other";

/** Status fields to merge, and conditions to set; `touched` forces a write (lastSyncTime moves). */
export interface StatusUpdate {
  fields?: Record<string, Json>;
  conditions: ConditionUpdate[];
  touched?: boolean;
}

/**
 * The reconciler's dependencies, its memory between reconciles, and the steps its stories are made of.
 * One per {@link ExternalResourceReconciler}.
 *
 * # Guarantees
 * No step throws what its call throws: each returns a {@link Verdict} whose stop is the reported failure
 * (`fail`), and a status write that fails is returned as an unforeseen failure (`failUnforeseen`). A step
 * refused by the write fence (a {@link FencedError}) writes nothing more, not even a status: `failed`.
 */
export class ResourceSteps<R extends ManagedResource, E extends object> {
  /** Everything the reconciler reads and writes. */
  readonly d: ReconcilerDeps<R, E>;
  /** The clock of the status's times (`lastSyncTime`, a condition's `lastTransitionTime`). */
  readonly now: () => Date;
  /** The condition and event reasons named after the plugin's external noun (`CannotCreateItem`). */
  readonly reasons: KindReasons;
  /** The external noun in messages (the Shapes plugin's "cloud shape"). */
  readonly noun: string;
  /** The resource's kind in messages ("Shape"). */
  readonly kind: string;
  /** Resources whose name a foreign object holds, with the holder's id: looked at again every few seconds. */
  readonly conflicts = new Map<string, string>();
  /**
   * Resources whose object was renamed behind our back and is left under its new name, with that object's id
   * and name: the Warning event is recorded once per new name, not at every look.
   */
  readonly renamed = new Map<string, string>();
  /**
   * External ids this process created, by resource key, until the cache shows them: an adoption of one of
   * these is our own create seen late (the cache trailing our write), not news for a person.
   */
  readonly created = new Map<string, string>();
  /**
   * Resources whose spec the external API refused for good, with their annotations when it did (JSON): that
   * generation is not sent again while they stay the same. A changed annotation (the refresh) sends it again.
   */
  readonly rejected = new Map<string, string>();
  /**
   * Resources whose deletion this process finished (our finalizer removed), with the resourceVersion it let
   * go, until the cache drops them: a reconcile of that same version (the cache trailing our own write, while
   * the external delete's event brought the key back) has nothing left to do, and reads nothing.
   */
  readonly letGo = new Map<string, string>();

  constructor(deps: ReconcilerDeps<R, E>) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
    this.reasons = reasonsFor(deps.plugin.external.noun.reason);
    this.noun = deps.plugin.external.noun.text;
    this.kind = deps.plugin.resource.kind;
  }

  /** Forgets what the reconciles of `key` remembered about its external object (all of it but `letGo`). */
  forgetObject(key: string): void {
    this.conflicts.delete(key);
    this.renamed.delete(key);
    this.created.delete(key);
    this.rejected.delete(key);
  }

  /** `status.atProvider`, when the plugin has the hook and the management policies are not `["*"]`. */
  atProvider(resource: R, observed: E): Record<string, Json> {
    const { external } = this.d.plugin;
    if (!external.atProvider || policiesOf(resource).all) return {};
    return { atProvider: external.atProvider(observed) };
  }

  /** Waiting for an earlier namesake's leftovers to go: report it, look again in a few seconds. */
  async waitForCleanup(run: Run<R>, why: string): Promise<ReconcileResult> {
    const { resource } = run;
    noteDecision("wait-for-cleanup", why);
    const message = `Waiting: ${why}`;
    return this.writeStatus(
      run,
      {
        fields: { observedGeneration: resource.metadata.generation ?? null },
        conditions: [
          ready({ status: "False", reason: Reason.WaitingForCleanup, message }),
          synced({ status: "False", reason: Reason.WaitingForCleanup, message }),
        ],
      },
      requeueAfter(this.d.cleanupWaitMs ?? 5_000),
    );
  }

  /** Runs one write whose watch echo the handlers should drop (own-writes.ts). */
  ownWrite<T>(
    side: "resources" | "external",
    key: string,
    write: () => Promise<T>,
    revisionOf: (answer: T) => string | undefined,
  ): Promise<T> {
    return this.d.echoes[side].write(key, write, revisionOf);
  }

  /** What the reconciler saw of its external object, in a few words. */
  describe(name: string, observed: E | undefined): string {
    if (!observed) return `${this.noun} ${name}: absent`;
    const { external } = this.d.plugin;
    const owner = external.marksOf(observed).owner ?? "none";
    return `${this.noun} ${name}: ${external.idOf(observed)}, revision ${external.revisionOf(observed)}, owner ${owner}`;
  }

  /**
   * Runs one Kubernetes step: its value, or — when it fails — a stop with the failure reported under `reason`
   * (`fail`). With `onResource`, a 404 says the resource itself is gone, which ends the reconcile as done.
   */
  kube<T>(
    run: Run<R>,
    reason: ConditionReason,
    what: string,
    step: () => Promise<T>,
    options: { onResource?: boolean } = {},
  ): Promise<Verdict<T>> {
    return attempt(step, (err) => {
      const resourceGone = options.onResource === true && statusCodeOf(err) === 404;
      return this.fail(run, { reason, error: asError(err, what), resourceGone });
    });
  }

  /**
   * Runs one external step: its value, or a stop with the failure reported under `reason` (and Retry-After),
   * or, for a step that sends the spec (`input`), under {@link Reason.SpecRejected} when the API refused it
   * for good.
   */
  external<T>(
    run: Run<R>,
    reason: ConditionReason,
    what: string,
    step: () => Promise<T>,
    input: Input = "other",
  ): Promise<Verdict<T>> {
    return attempt(step, (err) => this.failExternal(run, reason, what, err, input));
  }

  /**
   * Runs one external delete or release: false when the object was already gone (someone deleted it first,
   * which is what we wanted), true when the step did it; a stop when it failed otherwise.
   */
  async externalUnlessGone(
    run: Run<R>,
    reason: ConditionReason,
    what: string,
    step: () => Promise<void>,
  ): Promise<Verdict<boolean>> {
    try {
      await step();
    } catch (err) {
      if (this.d.client.classify(err).failure === "notFound") return proceed(false);
      return stop(await this.failExternal(run, reason, what, err));
    }
    return proceed(true);
  }

  /**
   * A failed external call, reported under `reason`, retried after the API's Retry-After when it gave one. A
   * call that sent the spec (`input`) and was refused for good is not retried: `rejectSpec`.
   */
  failExternal(
    run: Run<R>,
    reason: ConditionReason,
    what: string,
    err: unknown,
    input: Input = "other",
  ): Promise<ReconcileResult> {
    const { failure, retryAfterMs } = this.d.client.classify(err);
    if (failure === "rejected" && input === "spec") return rejectSpec(this, run, asError(err, what));
    return this.fail(run, { reason, error: asError(err, what), retryAfterMs });
  }

  /** Anything no step foresaw (a bug, a plugin that throws, a failed status write): {@link Reason.ReconcileError}. */
  failUnforeseen(run: Run<R>, err: unknown): Promise<ReconcileResult> {
    const { namespace, name } = run.resource.metadata;
    const error = asError(err, `cannot reconcile ${namespace}/${name}`);
    return this.fail(run, { reason: Reason.ReconcileError, error });
  }

  /**
   * A failed step: record it in `Synced=False`, and in `Ready` what this reconcile knows of the external
   * object when it stops (`run.sight`: never an earlier True kept, status.ts), then retry with backoff, or
   * after the API's Retry-After. A resource that turns out to be gone (404) is done: nothing to report on.
   */
  async fail(run: Run<R>, failure: StepFailure): Promise<ReconcileResult> {
    const { resource } = run;
    if (failure.resourceGone === true) {
      noteSubject("gone");
      noteDecision("forget", `the ${this.kind} is gone (404): nothing left to report on`);
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
      await this.putStatus(resource, {
        conditions: [
          ready(run.sight),
          synced({ status: "False", reason: failure.reason, message: failure.error.message }),
        ],
      });
    } catch (statusErr) {
      if (statusCodeOf(statusErr) === 404) return done();
      this.d.log.warn({ err: errorMessage(statusErr) }, "cannot record the failure in status");
    }
    return failed(failure.error, failure.retryAfterMs);
  }

  /**
   * Merges `next` into the resource's status, writes it only if anything changed, and returns `then` (done by
   * default). The status write is no step of its own: when it fails, that is reported as unforeseen
   * (`failUnforeseen`), by the next write, with the Ready this one meant to write (a failed write
   * changes nothing outside).
   */
  async writeStatus(
    run: Run<R>,
    next: StatusUpdate,
    then: ReconcileResult = done(),
  ): Promise<ReconcileResult> {
    const meant = next.conditions.find((c) => c.type === "Ready");
    if (meant) run.sight = { status: meant.status, reason: meant.reason, message: meant.message };
    try {
      await this.putStatus(run.resource, next);
    } catch (err) {
      return this.failUnforeseen(run, err);
    }
    return then;
  }

  /** Ready=True: the external object `name` was seen (or written) matching the spec. */
  available(name: string): Sight {
    return {
      status: "True",
      reason: Reason.Available,
      message: `${capitalized(this.noun)} ${name} matches the spec`,
    };
  }

  /** Ready=Unknown: nothing seen of the external object (the reconcile stopped before, or at, the observe). */
  unobserved(): Sight {
    return {
      status: "Unknown",
      reason: Reason.Unobserved,
      message: `Not known: the reconcile stopped before it could see the ${this.noun}`,
    };
  }

  /** Merges `next` into the resource's status and writes it only if anything changed; throws when the write fails. */
  async putStatus(resource: R, next: StatusUpdate): Promise<void> {
    const now = this.now();
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
    await this.d.kube.updateStatus(resource, status);
  }
}

/** `text` with its first letter in upper case. */
export function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The {@link FencedError} `error` is, or was caused by: a step refused by the write fence. */
function fencedIn(error: Error): FencedError | undefined {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof FencedError) return e;
  }
  return undefined;
}

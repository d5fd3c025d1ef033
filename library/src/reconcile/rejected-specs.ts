/**
 * Rejected specs: what the external-resource reconciler does with a spec that cannot be acted on, and how it
 * keeps from sending it again. Two kinds: one the external API refused for good (a create or an update
 * classified "rejected", e.g. a 422 for a rule of its own), and an adoption-policy annotation that holds no
 * policy. Retrying the same spec cannot help, so either one returns `terminal` (no requeue, no backoff) and
 * is acted on again only when a person changes something: a new generation, or a changed annotation (the
 * refresh).
 */
import { errorMessage, statusCodeOf } from "../support/errors.ts";
import { noteDecision } from "../observability/reconcile-scope.ts";
import { done, failed, terminal, type ReconcileResult } from "../queue/result.ts";
import type { Condition, ManagedResource } from "./contract.ts";
import { Reason, ready, synced } from "./status.ts";
import type { ResourceSteps, Run } from "./resource-steps.ts";

/**
 * The adoption-policy annotation holds no policy: nothing is written outside (not even the finalizer) until
 * a person fixes it, which changes the annotations and so brings the resource back (no retry meanwhile).
 */
export function invalidAdoptionPolicy<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  message: string,
): Promise<ReconcileResult> {
  noteDecision("invalid-adoption-policy", message);
  return s.writeStatus(
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
 * The external API refused the spec for good (a create or an update, classified "rejected"): retrying it
 * cannot help, a person must change it. Reports `Synced=False` {@link Reason.SpecRejected} with the API's
 * own message, and in `Ready` what this reconcile saw (`Absent`, `SpecMismatch`); records one Warning event
 * (none when the status already says exactly this); remembers the annotations it was refused with (the
 * refresh changes them); and returns `terminal`: no requeue, no backoff. A status write that fails is
 * retried like any failure (the refusal must reach the status, which is what keeps it from being resent).
 */
export async function rejectSpec<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  error: Error,
): Promise<ReconcileResult> {
  const { key, resource } = run;
  const generation = resource.metadata.generation;
  const message =
    `The ${s.noun} API refused generation ${generation ?? 0} of the spec for good; change the spec ` +
    `(it is not sent again until it changes, or a refresh asks): ${error.message}`;
  noteDecision("spec-rejected", `the ${s.noun} API refused the spec for good: ${error.message}`);
  const before = syncedOf(resource);
  const told =
    before?.reason === Reason.SpecRejected &&
    before.observedGeneration === generation &&
    before.message === message;
  if (!told) s.d.events.record(resource, "Warning", Reason.SpecRejected, message);
  s.rejected.set(key, annotationsOf(resource));
  const refused = new Error(message, { cause: error });
  try {
    await s.putStatus(resource, {
      conditions: [ready(run.sight), synced({ status: "False", reason: Reason.SpecRejected, message })],
    });
  } catch (statusErr) {
    if (statusCodeOf(statusErr) === 404) return done();
    s.d.log.warn({ err: errorMessage(statusErr) }, "cannot record the refusal in status");
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
export function stillRejected<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
): Condition | undefined {
  const { key, resource } = run;
  const condition = syncedOf(resource);
  if (
    condition?.status !== "False" ||
    condition.reason !== Reason.SpecRejected ||
    condition.observedGeneration !== resource.metadata.generation
  ) {
    s.rejected.delete(key);
    return undefined;
  }
  const now = annotationsOf(resource);
  const then = s.rejected.get(key);
  if (then === undefined) s.rejected.set(key, now);
  else if (then !== now) return undefined;
  return condition;
}

/**
 * The spec was refused for good before (`stillRejected`): not sent again. The same `Synced`
 * (no status write when nothing else moved, no event), `Ready` as this reconcile saw it, and `terminal`.
 */
export function keepRejected<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  condition: Condition,
): Promise<ReconcileResult> {
  noteDecision(
    "keep-rejected",
    `the ${s.noun} API refused generation ${run.resource.metadata.generation ?? 0} of the spec for good: not sent again until the spec changes or a refresh asks`,
  );
  const { message } = condition;
  return s.writeStatus(
    run,
    {
      conditions: [ready(run.sight), synced({ status: "False", reason: Reason.SpecRejected, message })],
    },
    terminal(new Error(message)),
  );
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

/**
 * Drift: the external-resource reconciler's steps for an object of ours that differs from the spec. A
 * difference in the managed fields is written back in one conditional update (or, without Update in the
 * management policies, reported and left alone); an object renamed behind our back is given its name back
 * (or left under the new one and reported). Neither ever creates a second object.
 */
import { diffManaged, mergePatchFor, type Json } from "./diff.ts";
import { noteDecision } from "../observability/reconcile-scope.ts";
import { requeueAfter } from "../queue/result.ts";
import type { Desired, ManagedResource } from "./contract.ts";
import { policiesOf } from "./policies.ts";
import { Reason, ready, synced } from "./status.ts";
import { proceed, stop, type Verdict } from "./step.ts";
import { keepRejected, stillRejected } from "./rejected-specs.ts";
import { capitalized, type ResourceSteps, type Run } from "./resource-steps.ts";

/**
 * Writes the difference between the desired and the observed managed fields, if any. A difference while
 * the spec did not change is drift (a person or another system changed the object): counted and reported.
 */
export async function repairDrift<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  observed: E,
  desired: Desired,
  signal: AbortSignal,
): Promise<Verdict<{ observed: E; wrote: boolean; drift: boolean; leftAlone?: string }>> {
  const { external } = s.d.plugin;
  const { resource } = run;
  const fields = external.fieldsOf(observed) as Json;
  const patch = mergePatchFor(desired.fields, fields);
  if (!patch) {
    noteDecision("in-sync", `the ${s.noun}'s managed fields match the spec: nothing to write`);
    run.sight = s.available(desired.name);
    return proceed({ observed, wrote: false, drift: false });
  }
  const changes = diffManaged(desired.fields as Json, fields)
    .map((d) => `${d.path}: ${JSON.stringify(d.observed)} → ${JSON.stringify(d.desired)}`)
    .join(", ");
  const policies = policiesOf(resource);
  if (!policies.update) {
    // Management policies without Update: created, then never written; the difference is only reported.
    const leftAlone = `${capitalized(s.noun)} ${desired.name} differs from the spec (${changes}); left alone: spec.managementPolicies ${policies.text} has no Update`;
    noteDecision("leave-drift", leftAlone);
    run.sight = { status: "True", reason: Reason.Available, message: leftAlone };
    return proceed({ observed, wrote: false, drift: false, leftAlone });
  }
  // Ours, but not as the spec says until the update lands: a failed update leaves it so.
  run.sight = {
    status: "False",
    reason: Reason.SpecMismatch,
    message: `${capitalized(s.noun)} ${desired.name} differs from the spec: ${changes}`,
  };
  const specChanged = resource.metadata.generation !== resource.status?.observedGeneration;
  noteDecision(
    specChanged ? "update" : "repair-drift",
    specChanged
      ? `the spec changed (generation ${resource.metadata.generation ?? 0}): ${changes}`
      : `someone changed the ${s.noun}, the spec did not change: ${changes}`,
  );
  // The API refused this very spec before: not sent again until the spec changes or a refresh asks.
  const refused = stillRejected(s, run);
  if (refused) return stop(await keepRejected(s, run, refused));
  // A 412 (stale) means the object changed since our cache saw it; the change feed brings the new state.
  const updated = await s.external(
    run,
    s.reasons.CannotUpdate,
    `cannot update ${s.noun} ${desired.name}`,
    () =>
      s.ownWrite(
        "external",
        desired.name,
        () => s.d.client.update(observed, patch, signal),
        (obj) => String(external.revisionOf(obj)),
      ),
    "spec",
  );
  if (updated.stop) return updated;
  run.sight = s.available(desired.name);
  if (specChanged) {
    s.d.events.record(resource, "Normal", s.reasons.Updated, `Updated ${desired.name}: ${changes}`);
    return proceed({ observed: updated.value, wrote: true, drift: false });
  }
  // Nobody changed the spec, yet the object differs: someone else changed it.
  s.d.counters.driftRepaired();
  s.d.events.record(resource, "Normal", s.reasons.RepairedDrift, `Repaired ${desired.name}: ${changes}`);
  return proceed({ observed: updated.value, wrote: true, drift: true });
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
export async function renamedBehindOurBack<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  renamed: E,
  name: string,
  signal: AbortSignal,
): Promise<Verdict<E>> {
  const { plugin, client, events } = s.d;
  const { external } = plugin;
  const { resource, key } = run;
  const id = external.idOf(renamed);
  const now = external.nameOf(renamed);
  const policies = policiesOf(resource);
  const rename = client.rename?.bind(client);
  run.sight = {
    status: "False",
    reason: Reason.Renamed,
    message: `${capitalized(s.noun)} ${id} of this ${s.kind} was renamed from ${name} to ${now} behind our back`,
  };
  let leftBecause: string;
  if (!policies.update) leftBecause = `spec.managementPolicies ${policies.text} has no Update`;
  else if (!rename) leftBecause = `this controller cannot rename a ${s.noun}`;
  else {
    noteDecision(
      "rename-back",
      `${s.noun} ${id} of this ${s.kind} is named ${now}, not ${name}: give its name back`,
    );
    try {
      const back = await s.ownWrite(
        "external",
        name,
        () => rename(renamed, name, signal),
        (obj) => String(external.revisionOf(obj)),
      );
      s.renamed.delete(key);
      s.d.counters.driftRepaired();
      events.record(
        resource,
        "Warning",
        s.reasons.Renamed,
        `${capitalized(s.noun)} ${name} (${id}) was renamed to ${now} behind our back; renamed it back to ${name}`,
      );
      return proceed(back);
    } catch (err) {
      if (client.classify(err).failure !== "conflict") {
        return stop(
          await s.failExternal(
            run,
            s.reasons.CannotUpdate,
            `cannot rename ${s.noun} ${now} back to ${name}`,
            err,
          ),
        );
      }
      leftBecause = `another object holds ${name} now`;
    }
  }
  const message = `${capitalized(s.noun)} ${name} (${id}) of this ${s.kind} was renamed to ${now} behind our back; left under that name, not deleted and not created again: ${leftBecause}`;
  noteDecision("leave-renamed", message);
  if (s.renamed.get(key) !== `${id} ${now}`) {
    s.renamed.set(key, `${id} ${now}`);
    s.d.log.warn({ key, id, name: now }, message);
    events.record(resource, "Warning", s.reasons.Renamed, message);
  }
  return stop(
    await s.writeStatus(
      run,
      {
        fields: {
          observedGeneration: resource.metadata.generation ?? null,
          ...plugin.resource.statusOf({ id, name: now }),
          ...s.atProvider(resource, renamed),
        },
        conditions: [
          ready({ status: "False", reason: Reason.Renamed, message }),
          synced({ status: "False", reason: Reason.Renamed, message }),
        ],
      },
      requeueAfter(s.d.conflictRecheckMs ?? 5_000),
    ),
  );
}

/**
 * The external-resource reconciler's two stories that write nothing outside: observe only (management
 * policies without Create: read the external object and report it) and paused (the paused annotation: report
 * the pause, look at nothing).
 */
import { noteDecision, noteObserved } from "../observability/reconcile-scope.ts";
import { requeueAfter, type ReconcileResult } from "../queue/result.ts";
import type { ManagedResource } from "./contract.ts";
import { policiesOf } from "./policies.ts";
import { Reason, ready, synced } from "./status.ts";
import { ensureIntent } from "./intent-record.ts";
import { capitalized, type ResourceSteps, type Run } from "./resource-steps.ts";

/**
 * Observe only (management policies without Create, policies.ts): read the external object by its name and
 * report it — `status.atProvider`, Ready `Available` or `Absent`, Synced `ObserveOnly` — and never write
 * it, whoever's it is. Adds no finalizer and writes no intent record; keeps an existing record of this
 * resource current (its deletion policy is now Orphan: a missed deletion releases ours, deletes nothing).
 * The object need not carry our owner marks, so the cache (ours only) may not hold it: a live read by name,
 * again every {@link ReconcilerDeps.observeRecheckMs}.
 */
export async function observeOnly<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  signal: AbortSignal,
): Promise<ReconcileResult> {
  const { plugin, client, cache } = s.d;
  const { resource } = run;
  const { namespace, name } = resource.metadata;
  const externalName = plugin.resource.externalNameOf(namespace, name);
  const policies = policiesOf(resource);
  noteDecision(
    "observe-only",
    `spec.managementPolicies ${policies.text} has no Create: observe ${externalName}, never write it`,
  );
  if (s.d.intents.get(externalName)) {
    const ensured = await ensureIntent(s, run, externalName);
    if (ensured.stop) return ensured.result;
  }
  const seen = await s.external(
    run,
    s.reasons.CannotObserve,
    `cannot read ${s.noun} ${externalName}`,
    async () => cache.get(externalName) ?? (await client.getByName(externalName, signal)),
  );
  if (seen.stop) return seen.result;
  const observed = seen.value;
  noteObserved(s.describe(externalName, observed), {
    "external.name": externalName,
    "external.present": observed !== undefined,
  });
  const recheck = requeueAfter(s.d.observeRecheckMs ?? 30_000);
  const observing = `Observed only: spec.managementPolicies ${policies.text} has no Create, so the ${s.noun} is never created, updated or deleted`;
  if (!observed) {
    return s.writeStatus(
      run,
      {
        fields: { observedGeneration: resource.metadata.generation ?? null, atProvider: {} },
        conditions: [
          ready({
            status: "False",
            reason: Reason.Absent,
            message: `No ${s.noun} is named ${externalName} (observed only: none is created)`,
          }),
          synced({ status: "True", reason: Reason.ObserveOnly, message: observing }),
        ],
      },
      recheck,
    );
  }
  const id = plugin.external.idOf(observed);
  const owner = plugin.external.marksOf(observed).owner;
  return s.writeStatus(
    run,
    {
      fields: {
        observedGeneration: resource.metadata.generation ?? null,
        ...plugin.resource.statusOf({ id, name: plugin.external.nameOf(observed) }),
        ...s.atProvider(resource, observed),
      },
      conditions: [
        ready({
          status: "True",
          reason: Reason.Available,
          message: `${capitalized(s.noun)} ${externalName} (${id}) exists, owner tag ${JSON.stringify(owner ?? null)} (observed only)`,
        }),
        synced({ status: "True", reason: Reason.ObserveOnly, message: observing }),
      ],
    },
    recheck,
  );
}

/**
 * Paused: report it, write nothing else. Nothing is observed, so whether a matching external object exists
 * is not known: Ready=Unknown, never an earlier True kept.
 */
export async function paused<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
): Promise<ReconcileResult> {
  const { resource } = run;
  const annotation = s.d.plugin.resource.pausedAnnotation;
  const message = resource.metadata.deletionTimestamp
    ? `Reconciliation is paused by the ${annotation} annotation; the deletion waits until it is removed`
    : `Reconciliation is paused by the ${annotation} annotation`;
  const unseen = `Not known: the ${s.noun} is not looked at while the ${annotation} annotation is set`;
  return s.writeStatus(run, {
    conditions: [
      ready({ status: "Unknown", reason: Reason.ReconcilePaused, message: unseen }),
      synced({ status: "False", reason: Reason.ReconcilePaused, message }),
    ],
  });
}

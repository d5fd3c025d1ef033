/**
 * The intent record, the external-resource reconciler's own bookkeeping: written (Pending) before the
 * external create, so that a crash right after the create leaks nothing and creates nothing twice, and kept
 * current with the resource's deletion policy and our owner id, so that a deletion we miss still honours the
 * policy (intent-reconciler.ts reads it).
 */
import { statusCodeOf } from "../support/errors.ts";
import { noteDecision, noteObserved } from "../observability/reconcile-scope.ts";
import type { IntentRecord, ManagedResource } from "./contract.ts";
import { Reason } from "./status.ts";
import { deletionPolicyOf } from "./policies.ts";
import { proceed, stop, type Verdict } from "./step.ts";
import type { ResourceSteps, Run } from "./resource-steps.ts";

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
export async function recordPolicy<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
): Promise<Verdict<void>> {
  const { plugin, kube, ownerId } = s.d;
  const { resource } = run;
  const { namespace, name, uid } = resource.metadata;
  const externalName = plugin.resource.externalNameOf(namespace, name);
  const intent = s.d.intents.get(externalName);
  const deletionPolicy = deletionPolicyOf(resource);
  if (!intent || intent.resource.uid !== uid || intent.deletionPolicy === deletionPolicy) {
    return proceed(undefined);
  }
  noteDecision(
    "update-intent",
    `the record says deletionPolicy ${intent.deletionPolicy}, the ${s.kind} ${deletionPolicy}: the record first`,
  );
  const recorded: IntentRecord = { ...intent, deletionPolicy, owner: ownerId };
  const updated = await s.kube(
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
export async function ensureIntent<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  externalName: string,
): Promise<Verdict<IntentRecord>> {
  const { plugin, kube, ownerId } = s.d;
  const { resource } = run;
  const { namespace, name, uid } = resource.metadata;
  const what = `cannot record the intent ${externalName}`;
  // What the record must say: whose it is, its object's name, the deletion policy, our owner id.
  const wanted = {
    resource: { namespace, name, uid },
    externalName,
    deletionPolicy: deletionPolicyOf(resource),
    owner: ownerId,
  };
  let intent = run.recorded ?? s.d.intents.get(externalName);
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
    const made = await s.kube(run, Reason.CannotRecordIntent, what, async () => {
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
      await s.waitForCleanup(
        run,
        `${plugin.resource.intentKind} ${externalName} still belongs to an earlier ${s.kind}`,
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
    const updated = await s.kube(run, Reason.CannotRecordIntent, what, () =>
      kube.updateIntentSpec(externalName, spec),
    );
    if (updated.stop) return updated;
  }
  return proceed(intent);
}

/**
 * Create or adopt: the step of the external-resource reconciler that runs when no object of ours holds the
 * resource's deterministic name. It creates the object with our owner marks, or adopts what turns out to be
 * ours (a crash after the create, a cache that trails, an earlier owner id of ours), or — on request, by the
 * adoption-policy annotation (adoption.ts) — an object with no owner mark at all. Another's object under the
 * name is never touched: the conflict is reported, and the name looked at again every few seconds.
 */
import { mergePatchFor } from "./diff.ts";
import { noteDecision } from "../observability/reconcile-scope.ts";
import { requeueAfter, type ReconcileResult } from "../queue/result.ts";
import type { Desired, IntentRecord, JsonObject, ManagedResource } from "./contract.ts";
import { adoptableFrom, isOwnedBy } from "./ownership.ts";
import { adoptionAnnotation, adoptionDecisionFor, markFieldsOf, type AdoptionPolicy } from "./adoption.ts";
import { policiesOf } from "./policies.ts";
import { Reason, ready, synced } from "./status.ts";
import { proceed, stop, type Verdict } from "./step.ts";
import { keepRejected, stillRejected } from "./rejected-specs.ts";
import { capitalized, type ResourceSteps, type Run } from "./resource-steps.ts";

/**
 * Creates the external object; when the name is taken, reads the holder: adopts it if it is ours (this
 * resource's, under our owner id or an earlier one), or — when `policy` asks (adoption.ts) — if it carries
 * no owner mark at all, and otherwise stops the reconcile: a wait while an earlier namesake's is cleaned up,
 * or the conflict reported and a look again in a few seconds. With `policy` "adopt" it never creates: it
 * reads the name first, and stops when nothing holds it.
 */
export async function createOrAdopt<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  externalName: string,
  intent: IntentRecord,
  desired: Desired,
  policy: AdoptionPolicy | undefined,
  signal: AbortSignal,
): Promise<Verdict<{ observed: E; created: boolean }>> {
  const { plugin, client, events } = s.d;
  const { external } = plugin;
  const { resource } = run;
  const uid = resource.metadata.uid;
  const { key } = run;
  if (policy === "adopt") {
    noteDecision(
      "look-to-adopt",
      `no ${s.noun} of ours is named ${externalName}; ${adoptionAnnotation(plugin.resource)}: adopt takes over one with no owner tag, never creates`,
    );
  } else noteDecision("create", `no ${s.noun} of ours is named ${externalName}`);
  run.sight = {
    status: "False",
    reason: Reason.Absent,
    message: `No ${s.noun} of this ${s.kind} exists: none of ours is named ${externalName}`,
  };
  const readHolder = () =>
    s.external(run, s.reasons.CannotObserve, `cannot read ${s.noun} ${desired.name}`, () =>
      client.getByName(desired.name, signal),
    );

  // A foreign object held the name last time. Our watch never sees it go (it is not ours), so read by
  // name: a consistent point read, no write. Still there: nothing to create.
  // With "adopt" (adoption.ts) nothing is created: read the name, and stop when nothing holds it.
  let holder: E | undefined;
  if (s.conflicts.has(key) || policy === "adopt") {
    const read = await readHolder();
    if (read.stop) return read;
    holder = read.value;
  }
  if (!holder && policy === "adopt") return stop(await nothingToAdopt(s, run, desired.name));
  if (!holder) {
    // The API refused this very spec before: not sent again until the spec changes or a refresh asks.
    const refused = stillRejected(s, run);
    if (refused) return stop(await keepRejected(s, run, refused));
    try {
      const created = await s.ownWrite(
        "external",
        desired.name,
        () => client.create(desired, signal),
        (obj) => String(external.revisionOf(obj)),
      );
      s.conflicts.delete(key);
      s.created.set(key, external.idOf(created));
      const message = `Created ${s.noun} ${external.nameOf(created)} (${external.idOf(created)})`;
      events.record(resource, "Normal", s.reasons.Created, message);
      return proceed({ observed: created, created: true });
    } catch (err) {
      if (client.classify(err).failure !== "conflict") {
        const what = `cannot create ${s.noun} ${desired.name}`;
        return stop(await s.failExternal(run, s.reasons.CannotCreate, what, err, "spec"));
      }
    }
    // The name is taken. One live read of the holder settles whose it is; until then, whose is not known.
    run.sight = {
      status: "Unknown",
      reason: Reason.Unobserved,
      message: `${capitalized(s.noun)} ${desired.name} exists, and whose it is has not been read yet`,
    };
    const read = await readHolder();
    if (read.stop) return read;
    holder = read.value;
    // Deleted between our create and our read: simply try again (a failure like any other: Synced says so).
    if (!holder) {
      const error = new Error(`cannot create ${s.noun} ${desired.name}: the name was taken, then freed`);
      run.sight = {
        status: "False",
        reason: Reason.Absent,
        message: `No ${s.noun} of this ${s.kind} exists: the name ${desired.name} was taken, then freed`,
      };
      return stop(await s.fail(run, { reason: s.reasons.CannotCreate, error }));
    }
  }

  // Ours from an earlier attempt (a crash after the create, or a cache that has not caught up yet): adopt.
  // News for a person only when our record did not know it yet: a cache trailing our own write is not.
  if (isOwnedBy(external, holder, uid, s.d.ownerId)) {
    noteDecision(
      "adopt",
      `the name is held by ${external.idOf(holder)}, ours: created earlier for this ${s.kind}`,
    );
    s.conflicts.delete(key);
    if (!knows(s, key, resource, intent, external.idOf(holder))) {
      const message = `Adopted ${s.noun} ${desired.name} (${external.idOf(holder)}), created earlier for this ${s.kind}`;
      events.record(resource, "Normal", s.reasons.Adopted, message);
    }
    return proceed({ observed: holder, created: false });
  }
  // Ours under an earlier owner id (created before an upgrade): re-mark it as ours, with any drift, in one
  // update; without Update in the management policies, re-mark it only (adoption.ts).
  const from = adoptableFrom(external, holder, uid, s.d.adoptOwnerIds);
  if (from !== undefined) {
    const { patch, marksOnly } = adoptionPatch(s, run, desired, holder);
    noteDecision(
      "adopt",
      `the name is held by ${external.idOf(holder)}, ours under the earlier owner id ${from}${marksOnly ? `: retag it only, ${noUpdate(run)}` : ""}`,
    );
    const current = holder;
    run.sight = {
      status: "False",
      reason: Reason.SpecMismatch,
      message: `${capitalized(s.noun)} ${desired.name} (${external.idOf(holder)}) is this ${s.kind}'s under the earlier owner id ${JSON.stringify(from)}, not retagged to ours yet`,
    };
    const refused = stillRejected(s, run);
    if (refused) return stop(await keepRejected(s, run, refused));
    const adopted = await s.external(
      run,
      s.reasons.CannotUpdate,
      `cannot adopt ${s.noun} ${desired.name} from owner ${JSON.stringify(from)}`,
      () => client.update(current, patch, signal),
      "spec",
    );
    if (adopted.stop) return adopted;
    s.conflicts.delete(key);
    s.d.counters.adopted(from);
    const message = `Adopted ${s.noun} ${desired.name} (${external.idOf(holder)}): retagged from owner ${JSON.stringify(from)} to ours${marksOnly ? `, nothing else written (${noUpdate(run)})` : ""}`;
    events.record(resource, "Normal", s.reasons.Adopted, message);
    return proceed({ observed: adopted.value, created: false });
  }
  // Ours by owner mark, another uid: an earlier namesake left it; its cleanup comes first.
  const owner = external.marksOf(holder).owner;
  if (owner === s.d.ownerId) {
    noteDecision("wait-for-cleanup", `the name is held by ${external.idOf(holder)}, an earlier ${s.kind}'s`);
    return stop(await s.waitForCleanup(run, `${s.noun} ${desired.name} belongs to an earlier ${s.kind}`));
  }
  // Adoption on request (adoption.ts): an object with no owner mark at all is taken over; one with
  // another's owner mark is refused below, naming that owner.
  const verdict = policy === undefined ? undefined : adoptionDecisionFor(external, holder);
  if (policy !== undefined && verdict?.act === "adopt") {
    return adoptOnRequest(s, run, holder, desired, policy, signal);
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
    ? `cannot adopt ${s.noun} ${desired.name} (${holderId}): it is owned by owner id ${JSON.stringify(owner ?? null)}, not ours, and another's object is never adopted; rename the ${s.kind} or have that owner release it`
    : `cannot create ${s.noun} ${desired.name}: the name is held by ${holderId}, which is not ours (owner tag ${JSON.stringify(owner ?? null)}); rename the ${s.kind} or free the name`;
  if (s.conflicts.get(key) !== holderId) {
    s.conflicts.set(key, holderId);
    s.d.counters.foreignSeen();
    s.d.log.warn({ key, holder: holderId, owner }, message);
    events.record(resource, "Warning", reason, message);
  }
  const recheck = requeueAfter(s.d.conflictRecheckMs ?? 5_000);
  return stop(
    await s.writeStatus(
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
async function adoptOnRequest<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  holder: E,
  desired: Desired,
  policy: AdoptionPolicy,
  signal: AbortSignal,
): Promise<Verdict<{ observed: E; created: boolean }>> {
  const { plugin, client, events } = s.d;
  const { external } = plugin;
  const id = external.idOf(holder);
  const annotation = `${adoptionAnnotation(plugin.resource)}: ${policy}`;
  const { patch, marksOnly } = adoptionPatch(s, run, desired, holder);
  const what = marksOnly
    ? `retag it as ours, nothing else (${noUpdate(run)})`
    : "retag it as ours and bring it to the spec in one update";
  noteDecision(
    "adopt-on-request",
    `the name is held by ${id}, which carries no owner tag, and ${annotation} asks: ${what}`,
  );
  run.sight = {
    status: "False",
    reason: Reason.Absent,
    message: `No ${s.noun} of this ${s.kind} exists yet: ${desired.name} (${id}) carries no owner tag and is not adopted yet`,
  };
  const refused = stillRejected(s, run);
  if (refused) return stop(await keepRejected(s, run, refused));
  const adopted = await s.external(
    run,
    s.reasons.CannotUpdate,
    `cannot adopt ${s.noun} ${desired.name}`,
    () =>
      s.ownWrite(
        "external",
        desired.name,
        () => client.update(holder, patch, signal),
        (obj) => String(external.revisionOf(obj)),
      ),
    "spec",
  );
  if (adopted.stop) return adopted;
  s.conflicts.delete(run.key);
  const done = marksOnly
    ? `retagged as ours, nothing else written (${noUpdate(run)})`
    : "retagged as ours and brought to the spec in one update";
  const message = `Adopted ${s.noun} ${desired.name} (${id}) on request (${annotation}): it carried no owner tag; ${done}`;
  events.record(run.resource, "Normal", s.reasons.Adopted, message);
  return proceed({ observed: adopted.value, created: false });
}

/**
 * The merge patch that adopts `holder` (adoption.ts): our owner marks with every managed field of the
 * spec; or, when the management policies leave out Update (`marksOnly`), our owner marks alone
 * ({@link markFieldsOf}), the rest left as it is (the next step reports the difference: DriftLeftAlone).
 */
function adoptionPatch<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  desired: Desired,
  holder: E,
): { patch: JsonObject; marksOnly: boolean } {
  const { plugin, ownerId } = s.d;
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
function noUpdate<R extends ManagedResource>(run: Run<R>): string {
  return `spec.managementPolicies ${policiesOf(run.resource).text} has no Update`;
}

/** `adopt` and nothing holds the name: nothing to adopt, nothing created; looked at again in a few seconds. */
async function nothingToAdopt<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  name: string,
): Promise<ReconcileResult> {
  const annotation = `${adoptionAnnotation(s.d.plugin.resource)}: adopt`;
  noteDecision("nothing-to-adopt", `no ${s.noun} is named ${name}, and ${annotation} never creates`);
  const message = `Nothing to adopt: no ${s.noun} is named ${name}, and ${annotation} never creates one (adopt-or-create would); looked at again every few seconds`;
  return s.writeStatus(
    run,
    {
      fields: { observedGeneration: run.resource.metadata.generation ?? null },
      conditions: [
        ready({
          status: "False",
          reason: Reason.Absent,
          message: `No ${s.noun} of this ${s.kind} exists: none is named ${name}`,
        }),
        synced({ status: "False", reason: Reason.NothingToAdopt, message }),
      ],
    },
    requeueAfter(s.d.conflictRecheckMs ?? 5_000),
  );
}

/**
 * True when we already knew `id` as this resource's object: its intent record or status says so, or this
 * process created it and the cache has not caught up. An adoption of an object we knew is not news.
 */
function knows<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  key: string,
  resource: R,
  intent: IntentRecord,
  id: string,
): boolean {
  if (intent.externalId === id || s.created.get(key) === id) return true;
  const status = resource.status as Record<string, unknown> | undefined;
  const said = s.d.plugin.resource.statusOf({ id, name: "" });
  // The plugin's status names the id in one of its fields (Shapes: cloudId): it says so when a field holds it.
  return Object.entries(said).some(([field, value]) => value === id && status?.[field] === id);
}

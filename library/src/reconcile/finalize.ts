/**
 * Finalize: the external-resource reconciler's story of a resource being deleted, the create story run
 * backwards — the external object (deleted under deletionPolicy Delete; released, our owner marks removed,
 * under Orphan or during an uninstall: uninstall.ts), then the intent record, then our finalizer.
 */
import { noteDecision, noteObserved } from "../observability/reconcile-scope.ts";
import { done, type ReconcileResult } from "../queue/result.ts";
import type { ManagedResource } from "./contract.ts";
import { findOwned } from "./ownership.ts";
import { uninstallOf } from "./uninstall.ts";
import { deletionPolicyOf } from "./policies.ts";
import { definitionNameOf } from "./kube-writer.ts";
import { Reason } from "./status.ts";
import { capitalized, type ResourceSteps, type Run, type Sight } from "./resource-steps.ts";

/**
 * Deletion: delete the external object (or release it: deletionPolicy Orphan, or its CRD is being deleted,
 * an uninstall: uninstall.ts), then the intent record, then our finalizer.
 */
export async function finalize<R extends ManagedResource, E extends object>(
  s: ResourceSteps<R, E>,
  run: Run<R>,
  signal: AbortSignal,
): Promise<ReconcileResult> {
  const { plugin, kube, client, events } = s.d;
  const { resource } = run;
  // Not ours to hold: another finalizer is pending, or we already let go.
  if (!resource.metadata.finalizers?.includes(plugin.resource.finalizer)) return done();
  // We let go of this very version a moment ago; the cache has not seen the deletion yet.
  const version = resource.metadata.resourceVersion;
  if (version !== undefined && s.letGo.get(run.key) === version) {
    noteDecision("let-go", `our finalizer was removed from version ${version}: the cache trails it`);
    return done();
  }

  const { namespace, name, uid } = resource.metadata;
  const externalName = plugin.resource.externalNameOf(namespace, name);
  // Being deleted, the spec asks for no object (or one let go): whatever exists is not Ready for it.
  const deleting = (what: string): Sight => ({
    status: "False",
    reason: Reason.Deleting,
    message: `The ${s.kind} is being deleted (deletionPolicy ${deletionPolicyOf(resource)}): ${what}`,
  });
  run.sight = deleting(`${s.noun} ${externalName} not looked at yet`);
  const found = await s.external(run, s.reasons.CannotObserve, `cannot read ${s.noun} ${externalName}`, () =>
    findOwned({ ...s.d, kind: plugin.external }, externalName, uid, signal),
  );
  if (found.stop) return found.result;
  const observed = found.value;
  noteObserved(s.describe(externalName, observed));

  // Delete, unless the resource's CRD is being deleted: an uninstall deletes nothing outside (uninstall.ts).
  // One live read of the CRD; when it fails, nothing is deleted on a guess: the reconcile fails and retries.
  let uninstall: string | undefined;
  if (observed && deletionPolicyOf(resource) === "Delete") {
    const id = plugin.external.idOf(observed);
    run.sight = deleting(`${s.noun} ${externalName} (${id}) is to be deleted, unless this is an uninstall`);
    const checked = await s.kube(
      run,
      Reason.CannotCheckUninstall,
      `cannot tell whether the CRD ${definitionNameOf(plugin.resource)} is being deleted`,
      () => uninstallOf(s.d),
    );
    if (checked.stop) return checked.result;
    uninstall = checked.value;
  }

  if (observed && (deletionPolicyOf(resource) === "Orphan" || uninstall !== undefined)) {
    // Orphan, or an uninstall: leave the object, but remove our owner marks so we never touch it again.
    const id = plugin.external.idOf(observed);
    const what = `${s.noun} ${externalName} (${id})`;
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
    const released = await s.externalUnlessGone(
      run,
      s.reasons.CannotDelete,
      `cannot ${uninstall === undefined ? "orphan" : "release"} ${s.noun} ${externalName}`,
      () => client.release(observed, signal),
    );
    if (released.stop) return released.result;
    if (uninstall === undefined) {
      run.sight = deleting(`${what} is left in place, not ours any more`);
      const message = `Left ${what} in place without our owner tags`;
      events.record(resource, "Normal", s.reasons.Orphaned, message);
    } else {
      run.sight = deleting(`${what} is released, not deleted: ${uninstall}`);
      const message = `${capitalized(what)} released, not deleted: ${uninstall}; it stays, without our owner tags`;
      events.record(resource, "Normal", Reason.ReleasedOnUninstall, message);
    }
  } else if (observed) {
    noteDecision("delete", `deletionPolicy Delete: delete ${externalName}, ours`);
    // Only the object as we saw it (a conditional delete): if it changed meanwhile, look again first.
    const id = plugin.external.idOf(observed);
    run.sight = deleting(`${s.noun} ${externalName} (${id}) is to be deleted`);
    const deleted = await s.externalUnlessGone(
      run,
      s.reasons.CannotDelete,
      `cannot delete ${s.noun} ${externalName}`,
      () => client.delete(observed, signal),
    );
    if (deleted.stop) return deleted.result;
    run.sight = deleting(`${s.noun} ${externalName} (${id}) is deleted`);
    if (deleted.value)
      events.record(resource, "Normal", s.reasons.Deleted, `Deleted ${s.noun} ${externalName} (${id})`);
  }

  if (!observed) {
    noteDecision("nothing-outside", `no ${s.noun} of ours is named ${externalName}`);
    run.sight = deleting(`no ${s.noun} of ours is named ${externalName}`);
  }
  // The external side is settled: the intent record has nothing left to guard.
  const intent = s.d.intents.get(externalName);
  if (intent && intent.resource.uid === uid) {
    const forgotten = await s.kube(
      run,
      Reason.CannotRecordIntent,
      `cannot delete the intent ${externalName}`,
      () => kube.deleteIntent(externalName, intent.uid),
    );
    if (forgotten.stop) return forgotten.result;
  }
  // Last: let Kubernetes delete the resource (resourceVersion-guarded, so a concurrent change is not lost).
  // A 404 means it is already gone (our cache still showed it after an earlier pass let it go): done.
  const letGo = await s.kube(
    run,
    Reason.CannotRemoveFinalizer,
    "cannot remove our finalizer",
    () => kube.removeFinalizer(resource),
    { onResource: true },
  );
  if (letGo.stop) return letGo.result;
  if (version !== undefined) s.letGo.set(run.key, version);
  return done();
}

/**
 * Uninstalling deletes nothing outside. `kubectl delete crd <plural>.<group>` (an uninstall, or a mistake)
 * deletes every resource of that kind at once: the API server marks the CRD as being deleted FIRST, then
 * deletes its resources, and each one's finalizer runs. With deletionPolicy Delete, each would take its
 * external object with it.
 *
 * So before a delete on a resource's behalf, the library reads the resource's own CRD with a live,
 * consistent GET (never a cache: a watch could trail the CRD's deletion, while a fresh read always sees it,
 * the CRD being marked before its resources are deleted). While the CRD is being deleted, or is gone, the
 * external object is RELEASED instead (our owner marks removed, exactly as deletionPolicy Orphan does): it
 * stays, someone else's from then on. Unless the controller was started saying otherwise
 * (`deleteOnUninstall`: then nothing is read, and Delete deletes). A read that fails deletes nothing: the
 * step fails with the reason `CannotCheckUninstall` (status.ts) and is retried — never a guess towards deleting.
 *
 * Where: the finalizer's delete (finalize.ts `finalize`), a missed deletion's (intent-reconciler.ts:
 * there a record older than the CRD counts too — the CRD was deleted and created again since, so its
 * resource went with the old one), and the sweep's (sweep.ts: a leak found during an uninstall is left
 * as it is). Deletions are rare, so one GET each costs nothing worth saving.
 */
import { definitionNameOf, type ResourceDefinition, type ResourceWriter } from "./kube-writer.ts";
import { errorMessage, statusCodeOf } from "../support/errors.ts";
import type { ManagedResource, ResourceKind } from "./contract.ts";

/** What {@link uninstallOf} reads. */
export interface UninstallCheckDeps {
  /** The resource kind: its CRD is `<plural>.<group>`. */
  plugin: { resource: Pick<ResourceKind<ManagedResource>, "plural" | "group"> };
  /** Where the CRD is read (live: {@link ResourceWriter.readDefinition}). */
  kube: Pick<ResourceWriter<ManagedResource>, "readDefinition">;
  /** Delete even while the CRD is being deleted (a controller flag, off by default): nothing is read. */
  deleteOnUninstall?: boolean;
}

/**
 * Why a delete on a resource's behalf is an uninstall's, and must not happen: `the CRD <name> is being
 * deleted (uninstall)`, `... is gone (uninstall)`, or (with `recordedAt`, an intent record's creation time)
 * `... was created again after ...`. Undefined: not an uninstall, the delete may go ahead. Pure.
 */
export function uninstallReason(
  name: string,
  definition: ResourceDefinition | undefined,
  recordedAt?: string,
): string | undefined {
  if (!definition) return `the CRD ${name} is gone (uninstall)`;
  if (definition.deletingSince !== undefined) return `the CRD ${name} is being deleted (uninstall)`;
  const created = Date.parse(definition.createdAt ?? "");
  const recorded = Date.parse(recordedAt ?? "");
  // The record was written for a resource of an earlier CRD of the same name: that resource went with it.
  if (created > recorded) {
    return `the CRD ${name} was deleted and created again (${definition.createdAt ?? ""}) after the record was written (${recordedAt ?? ""}): its resource went with the old CRD (uninstall)`;
  }
  return undefined;
}

/**
 * Reads the resource's CRD and says why a delete must not happen ({@link uninstallReason}), or undefined
 * when it may. With `deleteOnUninstall`, reads nothing and says undefined. Throws `cannot tell whether
 * ...` when the read fails: the caller deletes nothing, and fails its reconcile with that message.
 */
export async function uninstallOf(d: UninstallCheckDeps, recordedAt?: string): Promise<string | undefined> {
  if (d.deleteOnUninstall === true) return undefined;
  const name = definitionNameOf(d.plugin.resource);
  let definition: ResourceDefinition | undefined;
  try {
    definition = await d.kube.readDefinition();
  } catch (err) {
    const grant =
      statusCodeOf(err) === 403
        ? ` (the controller needs get on customresourcedefinitions, resourceNames [${name}], in its ClusterRole)`
        : "";
    throw new Error(
      `cannot tell whether the CRD ${name} is being deleted (an uninstall), so nothing is deleted${grant}: ${errorMessage(err)}`,
      { cause: err },
    );
  }
  return uninstallReason(name, definition, recordedAt);
}

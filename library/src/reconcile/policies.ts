/** Management policies (Crossplane's): what a resource lets the controller do with its external object. */
import type { DeletionPolicy, ManagedResource } from "./contract.ts";

/**
 * One management policy: Crossplane's values. `spec.managementPolicies` on a resource says which of its
 * external object's life the controller may act on.
 *
 * # Guarantees
 * The reconcilers read the policies through `policiesOf` and nothing else, so every rule is here:
 *
 * - `["*"]` (also when the field is unset): everything, as without the field.
 * - No `Create` (`["Observe"]`): OBSERVE ONLY. The external object is read by its deterministic name (a live
 *   read: the list-watch cache holds only objects that carry our owner marks, and an observed object need
 *   not), reported in status (`status.atProvider`, {@link ExternalKind.atProvider}) and `Ready` (`Available`
 *   when it exists, `Absent` when not), `Synced=True` reason `ObserveOnly`; and never created, updated,
 *   retagged or deleted, whoever owns it. No finalizer is added and no intent record written. Without Create
 *   nothing else is honoured: an object we did not create is never written, so `["Observe", "Update"]` is
 *   observe only too (the Shape and Record CRDs reject such a set outright).
 * - No `Update`: created when absent, then never written: a difference from the spec (drift, or a spec
 *   change) is left alone and reported (`Ready=True`, `Synced=True` reason `DriftLeftAlone` naming it).
 *   An adoption (on request, or from an earlier owner id of ours: adoption.ts) is still the one update that
 *   takes the object over, but it writes our owner marks only; every other field stays as it was, and its
 *   difference from the spec is reported so.
 * - No `Delete`: deletion releases the object (our owner marks removed) instead of deleting it, exactly as
 *   `deletionPolicy: Orphan` does; the intent record says Orphan too, so a missed deletion does the same.
 *   Observe only is a set without Delete: a resource whose policy was changed from `*` to `Observe` while its
 *   object carried our owner marks keeps its finalizer, and its deletion releases that object (one write:
 *   our own marks removed, so the sweep never takes it for a leak) and deletes nothing. An object without
 *   our marks is not written at all.
 * - `Observe` is implied (nothing can be managed unseen); `LateInitialize` is accepted and does nothing: the
 *   library fills no spec field from the external object.
 */
export type ManagementPolicy = "*" | "Observe" | "Create" | "Update" | "Delete" | "LateInitialize";

/** What a resource's management policies allow, as the reconcilers ask it. */
export interface Policies {
  /** `["*"]`, or the field unset: everything, as without the field. */
  readonly all: boolean;
  /** May create an absent object. False: observe only (nothing is ever written). */
  readonly create: boolean;
  /**
   * May write a difference from the spec to an object of ours (a spec change, a drift repair) or to one
   * being adopted; false: an adoption writes our owner marks only.
   */
  readonly update: boolean;
  /** May delete an object of ours when the resource is deleted; false: released instead (Orphan). */
  readonly delete: boolean;
  /** The policies as the spec gives them, for messages: `["Observe"]`. */
  readonly text: string;
}

/** The management policies of `resource`: `["*"]` when unset. */
export function policiesOf(resource: ManagedResource): Policies {
  const given = resource.spec.managementPolicies ?? ["*"];
  const all = given.includes("*");
  const create = all || given.includes("Create");
  return {
    all,
    create,
    update: create && (all || given.includes("Update")),
    delete: create && (all || given.includes("Delete")),
    text: JSON.stringify(given),
  };
}

/**
 * What deleting `resource` does to its external object: its `spec.deletionPolicy` (Delete when unset), or
 * Orphan when its management policies leave out Delete.
 */
export function deletionPolicyOf(resource: ManagedResource): DeletionPolicy {
  if (!policiesOf(resource).delete) return "Orphan";
  return resource.spec.deletionPolicy ?? "Delete";
}

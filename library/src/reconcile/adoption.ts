/**
 * Adoption on request (ACK's `adoption-policy` convention): the annotation `<group>/adoption-policy` on a
 * resource (its kind's API group, e.g. `shapes.example.com/adoption-policy`) says "the external object of my
 * deterministic name is mine now", for an object that carries NO owner mark of any controller:
 *
 * - `adopt`: take over the object of the name; never create one. Nothing there: `Synced=False`
 *   {@link Reason.NothingToAdopt}, looked at again every few seconds (a foreign object never reaches our
 *   owner-filtered watch), nothing written outside.
 * - `adopt-or-create`: take it over when it is there, create it (as without the annotation) when it is not.
 *
 * The take-over is ONE conditional update (guarded by the revision the reconciler read): it sets our owner
 * marks (owner id and the resource's uid) together with every managed field of the spec, so the object is
 * never ours and unlike the spec, and a concurrent change makes it fail "stale" instead of landing on top.
 * Its intent record exists before it (the reconciler writes the record before it observes): a crash between
 * the record and the update leaves a Pending record and an untagged object, which nothing deletes (the
 * record's cleanup takes only an object with our marks: ownership.ts) and the next reconcile adopts.
 *
 * Without Update in the resource's management policies (policies.ts), the take-over is the same one update,
 * but it sets our owner marks ONLY ({@link markFieldsOf}): every other field stays as it was, and its
 * difference from the spec is left alone and reported (`Synced=True` reason `DriftLeftAlone`), as for any
 * object of ours without Update. The adoption from an earlier owner id of ours (the reconciler's
 * `adoptOwnerIds`) follows the same rule.
 *
 * Never adopted: an object with an owner mark that is not ours (another controller's, another cluster's):
 * `Synced=False` {@link Reason.OwnedByAnother}, the message naming the holder's owner id. Objects with our
 * owner mark follow the rules they always did (ownership.ts): this resource's is simply ours, an earlier
 * namesake's is cleaned up first. Without the annotation nothing here applies: a foreign object is never
 * touched ({@link Reason.NameConflict}). Any other value of the annotation: `Synced=False`
 * {@link Reason.InvalidAdoptionPolicy}, and nothing is written outside until it is fixed.
 */
import type { ExternalKind, JsonObject, ManagedResource, OwnerMarks, ResourceKind } from "./contract.ts";
import { deepEqual, type Json } from "./diff.ts";

/** The values of the adoption-policy annotation. */
export const adoptionPolicies = ["adopt", "adopt-or-create"] as const;

/** A value of the adoption-policy annotation: see the file header. */
export type AdoptionPolicy = (typeof adoptionPolicies)[number];

/** The adoption-policy annotation of a kind: `<group>/adoption-policy`. */
export function adoptionAnnotation(kind: Pick<ResourceKind<ManagedResource>, "group">): string {
  return `${kind.group}/adoption-policy`;
}

/**
 * The adoption policy a resource asks for: `none` without the annotation, the policy, or `invalid` with the
 * value it carries (any other string, an empty one too).
 */
export type AdoptionRequest =
  | { readonly kind: "none" }
  | { readonly kind: "policy"; readonly policy: AdoptionPolicy }
  | { readonly kind: "invalid"; readonly value: string; readonly message: string };

/** Reads the adoption-policy annotation of `resource` (see {@link AdoptionRequest}). Pure. */
export function adoptionRequestOf(
  kind: Pick<ResourceKind<ManagedResource>, "group">,
  resource: ManagedResource,
): AdoptionRequest {
  const annotation = adoptionAnnotation(kind);
  const value = resource.metadata.annotations?.[annotation];
  if (value === undefined) return { kind: "none" };
  const policy = adoptionPolicies.find((p) => p === value);
  if (policy !== undefined) return { kind: "policy", policy };
  const message = `The annotation ${annotation} is ${JSON.stringify(value)}; it must be one of ${adoptionPolicies.map((p) => JSON.stringify(p)).join(", ")} (or absent); nothing is written outside until it is`;
  return { kind: "invalid", value, message };
}

/**
 * What a requested adoption does with the object that holds the name, when that object is NOT ours (neither
 * our owner id nor an earlier one of ours): `adopt` when it carries no owner mark at all, `refuse` (naming
 * the holder's owner id) when it carries another's.
 */
export type AdoptionDecision = { readonly act: "adopt" } | { readonly act: "refuse"; readonly owner: string };

/** See {@link AdoptionDecision}. Pure. */
export function adoptionDecisionFor<E>(kind: ExternalKind<E>, holder: E): AdoptionDecision {
  const { owner } = kind.marksOf(holder);
  return owner === undefined ? { act: "adopt" } : { act: "refuse", owner };
}

/**
 * The fields of `resource`'s desired state that carry its owner marks (the owner id, the uid, and a mark
 * for people made of the resource key, e.g. a name tag), with the values {@link ResourceKind.desired} gives
 * them for `marks`: what an adoption writes when the management policies leave out Update.
 *
 * The library reads marks ({@link ExternalKind.marksOf}) but does not know where a plugin writes them, so
 * they are found as the fields that change when the marks do: `desired` is asked twice, with `marks` and
 * with other marks (each one prefixed), and the leaves that differ are kept, nested objects key by key (one
 * tag of a tag map, not the map). A field that mixes a mark with the spec (a description naming the owner)
 * is taken whole. Pure, as `desired` is.
 */
export function markFieldsOf<R extends ManagedResource>(
  kind: Pick<ResourceKind<R>, "desired">,
  resource: R,
  marks: Required<OwnerMarks> & { resourceKey: string },
): JsonObject {
  const ours = kind.desired(resource, marks).fields;
  const others = kind.desired(resource, {
    owner: `other-${marks.owner}`,
    uid: `other-${marks.uid}`,
    resourceKey: `other-${marks.resourceKey}`,
  }).fields;
  return differing(ours, others) ?? {};
}

/** The parts of `a` that differ from `b`: objects key by key, anything else whole. Undefined: none. */
function differing(a: JsonObject, b: JsonObject): JsonObject | undefined {
  const parts: JsonObject = {};
  for (const [key, value] of Object.entries(a)) {
    const other = b[key];
    if (isObject(value) && isObject(other)) {
      const nested = differing(value, other);
      if (nested !== undefined) parts[key] = nested;
    } else if (!deepEqual(value, other)) parts[key] = value;
  }
  return Object.keys(parts).length === 0 ? undefined : parts;
}

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

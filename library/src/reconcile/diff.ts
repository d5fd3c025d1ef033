/**
 * Generic drift detection: compare the WHOLE desired state with the observed one, over the fields we
 * manage, instead of hand-picking fields in each reconciler (a field someone forgets to compare is drift
 * nobody repairs).
 *
 * "Managed" means "present in `desired`": a key in `desired` is ours; a key only in `observed` belongs to
 * someone else (a tag another system added) and is left alone. A `null` in `desired` means "must be absent".
 * The result is a JSON Merge Patch (RFC 7396) that makes `observed` match `desired` on those fields, so the
 * same function answers "is there drift?" and "what is the repair?".
 */

/** A JSON value. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json | undefined };

/** One drifted field: where, what we want, what we saw. */
export interface Drift {
  /** Dotted path, e.g. `tags.owner`. */
  path: string;
  /** What the spec asks for there (undefined: the field must be absent). */
  desired: Json | undefined;
  /** What the external object holds there (undefined: absent). */
  observed: Json | undefined;
}

/** The differences between desired and observed over the managed fields; empty when converged. */
export function diffManaged(desired: Json | undefined, observed: Json | undefined, path = ""): Drift[] {
  if (isObject(desired)) {
    const obs = isObject(observed) ? observed : {};
    if (!isObject(observed) && observed !== undefined) return [{ path: path || ".", desired, observed }];
    return Object.entries(desired).flatMap(([key, value]) =>
      diffManaged(value, obs[key], path ? `${path}.${key}` : key),
    );
  }
  // `null` desired means absent: an absent or null observed value is converged.
  if (desired === null && (observed === undefined || observed === null)) return [];
  if (desired === undefined || deepEqual(desired, observed)) return [];
  return [{ path: path || ".", desired, observed }];
}

/**
 * The JSON Merge Patch that repairs every drift of `diffManaged(desired, observed)`, or `undefined` when
 * there is none. Nested objects are patched key by key (a tag we manage is set without touching others).
 */
export function mergePatchFor(
  desired: Json | undefined,
  observed: Json | undefined,
): Record<string, Json> | undefined {
  if (!isObject(desired)) return undefined;
  const obs = isObject(observed) ? observed : {};
  const patch: Record<string, Json> = {};
  for (const [key, value] of Object.entries(desired)) {
    if (value === undefined) continue;
    if (diffManaged(value, obs[key]).length === 0) continue;
    const nested = isObject(value) && isObject(obs[key]) ? mergePatchFor(value, obs[key]) : undefined;
    patch[key] = nested ?? value;
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
}

/** Structural equality of JSON values (key order does not matter). */
export function deepEqual(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => deepEqual(v, b[i]))
    );
  }
  if (!isObject(a) || !isObject(b)) return false;
  const keys = new Set(
    [...Object.keys(a), ...Object.keys(b)].filter((k) => a[k] !== undefined || b[k] !== undefined),
  );
  return [...keys].every((k) => deepEqual(a[k], b[k]));
}

function isObject(value: Json | undefined): value is { [key: string]: Json | undefined } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * "NEVER mutate objects from the cache", enforced at runtime.
 *
 * An informer hands the same object to every reader: an event handler, a reconciler, the next resync. If one
 * of them changes it (say, sets a status field before writing it back), every other reader now sees a state
 * that exists nowhere on the server, and the next diff compares against a lie. client-go relies on
 * discipline; here the caches deep-freeze what they store, so such a write throws a `TypeError` at the line
 * that made it (ES modules run in strict mode). To change an object, copy it first: `structuredClone(obj)`.
 */

/**
 * Called by the caches on every object they store: freezes `value` and everything reachable from it, in place,
 * and returns it. Primitives are returned as they are. Safe on cyclic and already frozen values.
 */
export function deepFreeze<T>(value: T): T {
  freeze(value, new WeakSet());
  return value;
}

function freeze(value: unknown, seen: WeakSet<object>): void {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return;
  if (seen.has(value)) return;
  seen.add(value);
  // Children first: a parent frozen by someone else may still hold mutable children.
  for (const key of Reflect.ownKeys(value)) {
    freeze((value as Record<PropertyKey, unknown>)[key], seen);
  }
  Object.freeze(value);
}

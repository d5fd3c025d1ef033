/**
 * "NEVER mutate objects from the cache", enforced at runtime.
 *
 * An informer hands the same object to every reader: an event handler, a reconciler, the next resync. If one
 * of them changes it (say, sets a status field before writing it back), every other reader now sees a state
 * that exists nowhere on the server, and the next diff compares against a lie. client-go relies on
 * discipline; here the caches deep-freeze what they store, so such a write throws a `TypeError` at the line
 * that made it (ES modules run in strict mode). To change an object, copy it first: `structuredClone(obj)`.
 *
 * While it freezes, it can also share strings ({@link StringPool}): every object a list or a watch event parses
 * holds its own copy of the same apiVersion, namespace, owner tag, finalizer, condition reason and message and
 * timestamp. Measured with `npm run bench -- --heap-prof` (docs/benchmarks.md): about 650 bytes of every cached Shape's
 * 3.3 KB (its Shape, ShapeRef and cloud shape) were such copies.
 */

/**
 * Shares equal strings: `intern(s)` returns the first equal string it was given. Bounded: strings longer than
 * `maxLength` are returned as they are, and the pool is emptied when it holds `maxEntries` (names, uids and
 * resourceVersions, each seen once, fill it; the strings that repeat come back at once). Dropping it only costs
 * the sharing.
 */
export class StringPool {
  readonly #pool = new Map<string, string>();
  readonly #maxEntries: number;
  readonly #maxLength: number;

  constructor({ maxEntries = 4096, maxLength = 256 }: { maxEntries?: number; maxLength?: number } = {}) {
    this.#maxEntries = maxEntries;
    this.#maxLength = maxLength;
  }

  intern(text: string): string {
    if (text.length > this.#maxLength) return text;
    const shared = this.#pool.get(text);
    if (shared !== undefined) return shared;
    if (this.#pool.size >= this.#maxEntries) this.#pool.clear();
    this.#pool.set(text, text);
    return text;
  }

  /** How many strings it holds now. */
  get size(): number {
    return this.#pool.size;
  }
}

/**
 * Called by the caches on every object they store: freezes `value` and everything reachable from it, in place,
 * and returns it. Primitives are returned as they are. Safe on cyclic and already frozen values. With `strings`,
 * the string properties of what was not frozen yet are replaced by the pool's equal ones first.
 */
export function deepFreeze<T>(value: T, strings?: StringPool): T {
  freeze(value, new WeakSet(), strings);
  return value;
}

function freeze(value: unknown, seen: WeakSet<object>, strings: StringPool | undefined): void {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return;
  if (seen.has(value)) return;
  seen.add(value);
  const record = value as Record<PropertyKey, unknown>;
  // Sharing strings writes the object's own properties: only while it is not frozen (Reflect.set does not throw
  // on a property that cannot be written: it keeps its own copy).
  const share = strings !== undefined && !Object.isFrozen(value) ? strings : undefined;
  // Children first: a parent frozen by someone else may still hold mutable children.
  for (const key of Reflect.ownKeys(value)) {
    const child = record[key];
    if (typeof child === "string") {
      if (share) Reflect.set(record, key, share.intern(child));
    } else {
      freeze(child, seen, strings);
    }
  }
  Object.freeze(value);
}

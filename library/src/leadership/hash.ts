/**
 * The hash the API server shards by (KEP-5866, k8s.io/apimachinery/pkg/sharding): 64-bit FNV-1a of a field's
 * UTF-8 bytes. The ring uses the SAME function, so a range this process owns means the same objects whether
 * the API server filters them (a `shardSelector` on the list and watch) or we filter them on our side.
 */

/** The size of the hash space: hashes are in [0, 2^64). A range's end may be this value (exclusive). */
export const HASH_SPACE = 1n << 64n;

const OFFSET_BASIS = 0xcbf29ce484222325n;
const PRIME = 0x100000001b3n;
const MASK = HASH_SPACE - 1n;
const encoder = new TextEncoder();

/** FNV-1a 64 of `value`'s UTF-8 bytes: Go's `sharding.HashField(value)`, as a number. Pure and cheap. */
export function shardHash(value: string): bigint {
  let hash = OFFSET_BASIS;
  for (const byte of encoder.encode(value)) {
    hash = ((hash ^ BigInt(byte)) * PRIME) & MASK;
  }
  return hash;
}

/**
 * A hash as the selector's literal: `0x` and 16 hex digits, or `0x10000000000000000` for 2^64 (the only
 * 17-digit value the API server accepts).
 */
export function hexLiteral(value: bigint): string {
  if (value < 0n || value > HASH_SPACE) throw new RangeError(`cannot write ${value} as a shard hash`);
  return `0x${value.toString(16).padStart(16, "0")}`;
}

/**
 * A consistent-hash ring (virtual nodes): which member owns which part of the hash space.
 *
 * Each member is placed at `virtualNodes` points: the first 8 bytes of SHA-256("<member>#<i>"). (Not FNV-1a,
 * the keys' hash: names that differ only in their last characters land next to each other under FNV-1a, so a
 * member's points would bunch up and the shares would be far from even.) A hash belongs to the member of
 * the first point above it (wrapping around), so the space is cut into arcs, and a member owns the union of
 * its arcs. Every replica that sees the same members computes the same ring: nothing is coordinated but the
 * member list. When a member joins it takes about 1/N of the space, a little from each of the others; when one
 * leaves, its arcs go to the members of the points after them. Nothing else moves.
 */
import { createHash } from "node:crypto";
import { HASH_SPACE, hexLiteral } from "./hash.ts";

/** A part of the hash space: `start` inclusive, `end` exclusive, `0 <= start < end <= 2^64`. */
export interface HashRange {
  /** The first hash in the range. */
  start: bigint;
  /** The first hash after the range. */
  end: bigint;
}

/** The default number of points per member: about ±12% between members' shares with four of them. */
export const DEFAULT_VIRTUAL_NODES = 64;

/** See the module comment. Immutable: a new membership is a new ring. */
export class HashRing {
  /** The members, sorted, without repeats. */
  readonly members: readonly string[];
  /** Points in increasing order, with their member. */
  readonly #points: { at: bigint; member: string }[];

  constructor(members: Iterable<string>, virtualNodes = DEFAULT_VIRTUAL_NODES) {
    if (!Number.isInteger(virtualNodes) || virtualNodes < 1) {
      throw new Error(`cannot build a hash ring with ${virtualNodes} virtual nodes per member`);
    }
    this.members = [...new Set(members)].sort();
    this.#points = this.members
      .flatMap((member) =>
        Array.from({ length: virtualNodes }, (_, i) => ({ at: pointOf(`${member}#${i}`), member })),
      )
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.member < b.member ? -1 : 1));
  }

  /** The member owning `hash`, or undefined when the ring has no member. */
  ownerOf(hash: bigint): string | undefined {
    const points = this.#points;
    if (points.length === 0) return undefined;
    // Binary search for the first point above `hash`.
    let low = 0;
    let high = points.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((points[mid] as { at: bigint }).at > hash) high = mid;
      else low = mid + 1;
    }
    return (points[low] ?? points[0])?.member;
  }

  /** The parts of the space `member` owns, sorted and merged; empty when it is not a member. */
  rangesOf(member: string): HashRange[] {
    const points = this.#points;
    if (points.length === 0 || !this.members.includes(member)) return [];
    if (this.members.length === 1) return [{ start: 0n, end: HASH_SPACE }];
    const arcs: HashRange[] = [];
    points.forEach((point, i) => {
      if (point.member !== member) return;
      if (i === 0) {
        // The first point's arc wraps: from the last point to the end, and from 0 to it.
        const last = (points[points.length - 1] as { at: bigint }).at;
        arcs.push({ start: 0n, end: point.at }, { start: last, end: HASH_SPACE });
      } else {
        arcs.push({ start: (points[i - 1] as { at: bigint }).at, end: point.at });
      }
    });
    return normalize(arcs);
  }
}

/** `ranges` sorted, without empty ones, adjacent and overlapping ones merged. */
export function normalize(ranges: readonly HashRange[]): HashRange[] {
  const sorted = ranges.filter((r) => r.start < r.end).sort((a, b) => (a.start < b.start ? -1 : 1));
  const merged: HashRange[] = [];
  for (const range of sorted) {
    const last = merged[merged.length - 1];
    if (last && range.start <= last.end) {
      if (range.end > last.end) merged[merged.length - 1] = { start: last.start, end: range.end };
    } else merged.push({ ...range });
  }
  return merged;
}

/** True when `hash` is in one of `ranges`. */
export function inRanges(ranges: readonly HashRange[], hash: bigint): boolean {
  return ranges.some((r) => hash >= r.start && hash < r.end);
}

/** The parts of `from` that are not in `minus`. */
export function subtract(from: readonly HashRange[], minus: readonly HashRange[]): HashRange[] {
  let rest = normalize(from);
  for (const cut of normalize(minus)) {
    rest = rest.flatMap((r) => {
      if (cut.end <= r.start || cut.start >= r.end) return [r];
      const parts: HashRange[] = [];
      if (cut.start > r.start) parts.push({ start: r.start, end: cut.start });
      if (cut.end < r.end) parts.push({ start: cut.end, end: r.end });
      return parts;
    });
  }
  return rest;
}

/** True when both describe the same part of the space. */
export function sameRanges(a: readonly HashRange[], b: readonly HashRange[]): boolean {
  const x = normalize(a);
  const y = normalize(b);
  return x.length === y.length && x.every((r, i) => r.start === y[i]?.start && r.end === y[i]?.end);
}

/** The share of the whole space that `ranges` cover, from 0 to 1. */
export function shareOf(ranges: readonly HashRange[]): number {
  const covered = normalize(ranges).reduce((sum, r) => sum + (r.end - r.start), 0n);
  // Scaled to keep six decimals through the conversion to a number.
  return Number((covered * 1_000_000n) / HASH_SPACE) / 1_000_000;
}

/**
 * The API server's `shardSelector` for `ranges` of `field` (KEP-5866: `shardRange(<field>, '<start>', '<end>')`
 * terms joined by `||`). Undefined for no range at all: the API server refuses an empty selector, and a
 * replica that owns nothing has nothing to ask for.
 */
export function shardSelector(
  field: "object.metadata.uid" | "object.metadata.namespace",
  ranges: readonly HashRange[],
): string | undefined {
  const terms = normalize(ranges).map(
    (r) => `shardRange(${field}, '${hexLiteral(r.start)}', '${hexLiteral(r.end)}')`,
  );
  return terms.length === 0 ? undefined : terms.join(" || ");
}

/** A virtual node's place on the ring: the first 64 bits of SHA-256 of its name. */
function pointOf(name: string): bigint {
  return createHash("sha256").update(name).digest().readBigUInt64BE(0);
}

/** The parts of the space in both `a` and `b`. */
export function intersect(a: readonly HashRange[], b: readonly HashRange[]): HashRange[] {
  return subtract(a, subtract(a, b));
}

import { describe, expect, it } from "vitest";
import { HASH_SPACE, shardHash } from "./hash.ts";
import {
  HashRing,
  inRanges,
  normalize,
  sameRanges,
  shardSelector,
  shareOf,
  subtract,
  type HashRange,
} from "./ring.ts";

const uids = Array.from({ length: 4000 }, (_, i) => `uid-${i}`);
const r = (start: bigint, end: bigint): HashRange => ({ start, end });

describe("HashRing", () => {
  it("gives every hash to exactly one member, and a member's ranges say the same as ownerOf", () => {
    const ring = new HashRing(["c", "a", "b"], 16);
    const ranges = new Map(ring.members.map((m) => [m, ring.rangesOf(m)]));
    for (const uid of uids) {
      const hash = shardHash(uid);
      const owners = ring.members.filter((m) => inRanges(ranges.get(m) ?? [], hash));
      expect(owners).toEqual([ring.ownerOf(hash)]);
    }
    const total = ring.members.reduce((sum, m) => sum + shareOf(ring.rangesOf(m)), 0);
    expect(total).toBeCloseTo(1, 5);
  });

  it("splits the space about evenly with the default virtual nodes", () => {
    const ring = new HashRing(["replica-0", "replica-1", "replica-2", "replica-3"]);
    for (const member of ring.members) {
      const share = shareOf(ring.rangesOf(member));
      expect(share).toBeGreaterThan(0.25 * 0.6);
      expect(share).toBeLessThan(0.25 * 1.4);
    }
  });

  it("moves only the joining member's keys when one joins, and only the leaver's when one leaves", () => {
    const before = new HashRing(["a", "b", "c"]);
    const after = new HashRing(["a", "b", "c", "d"]);
    for (const uid of uids) {
      const was = before.ownerOf(shardHash(uid));
      const is = after.ownerOf(shardHash(uid));
      if (was !== is) expect(is).toBe("d");
    }
  });

  it.each([
    { members: [], member: "a", want: [], reason: "an empty ring owns nothing" },
    { members: ["a"], member: "a", want: [r(0n, HASH_SPACE)], reason: "a lone member owns everything" },
    { members: ["a", "b"], member: "z", want: [], reason: "a stranger owns nothing" },
  ])("$reason", ({ members, member, want }) => {
    expect(new HashRing(members).rangesOf(member)).toEqual(want);
  });

  it("is the same ring whatever order the members come in, and ignores repeats", () => {
    const one = new HashRing(["b", "a", "c"]);
    const two = new HashRing(["c", "b", "a", "b"]);
    expect(two.members).toEqual(["a", "b", "c"]);
    for (const m of one.members) expect(sameRanges(one.rangesOf(m), two.rangesOf(m))).toBe(true);
  });

  it("refuses a number of virtual nodes that is not a positive whole number", () => {
    expect(() => new HashRing(["a"], 0)).toThrow(/virtual nodes/);
    expect(() => new HashRing(["a"], 1.5)).toThrow(/virtual nodes/);
  });
});

describe("range arithmetic", () => {
  it.each([
    { ranges: [r(5n, 9n), r(1n, 3n)], want: [r(1n, 3n), r(5n, 9n)], reason: "sorted" },
    { ranges: [r(1n, 3n), r(3n, 5n)], want: [r(1n, 5n)], reason: "adjacent ranges merged" },
    { ranges: [r(1n, 6n), r(2n, 4n)], want: [r(1n, 6n)], reason: "a range inside another disappears" },
    { ranges: [r(4n, 4n)], want: [], reason: "empty ranges dropped" },
  ])("normalize: $reason", ({ ranges, want }) => {
    expect(normalize(ranges)).toEqual(want);
  });

  it.each([
    { from: [r(0n, 10n)], minus: [r(3n, 5n)], want: [r(0n, 3n), r(5n, 10n)], reason: "a hole" },
    { from: [r(0n, 10n)], minus: [r(0n, 10n)], want: [], reason: "all of it" },
    { from: [r(0n, 4n), r(6n, 9n)], minus: [r(3n, 7n)], want: [r(0n, 3n), r(7n, 9n)], reason: "across two" },
    { from: [r(0n, 4n)], minus: [r(5n, 7n)], want: [r(0n, 4n)], reason: "nothing in common" },
  ])("subtract: $reason", ({ from, minus, want }) => {
    expect(subtract(from, minus)).toEqual(want);
  });
});

describe("shardSelector", () => {
  it("writes the API server's syntax, one shardRange per range", () => {
    expect(shardSelector("object.metadata.uid", [r(0x10n, 0x20n), r(0x8000000000000000n, HASH_SPACE)])).toBe(
      "shardRange(object.metadata.uid, '0x0000000000000010', '0x0000000000000020') || " +
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
    );
  });

  it("has no selector for no range: the API server refuses an empty one", () => {
    expect(shardSelector("object.metadata.uid", [])).toBeUndefined();
  });
});

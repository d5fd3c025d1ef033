/**
 * Tombstones (tombstones.ts): what is kept of a deleted resource's last sight, for how long, and how many.
 * Each row notes some deletions at given times, then asks at a given time which uids still have a policy.
 */
import { describe, expect, it } from "vitest";
import { aWidget } from "../testing/fake-plugin.ts";
import type { DeletionPolicy } from "./contract.ts";
import { Tombstones } from "./tombstones.ts";

interface Row {
  reason: string;
  /** Deletions noted, in order: when (ms), which uid, with what the Widget said. */
  deleted: { at: number; uid: string; deletionPolicy?: DeletionPolicy; noDelete?: true }[];
  /** uids forgotten after the notes. */
  forgotten?: string[];
  /** When to ask. */
  askAt: number;
  /** What `deletionPolicyOf` says, per uid asked. */
  want: Record<string, DeletionPolicy | undefined>;
  /** How many are kept then. */
  size: number;
}

const TTL = 1_000;
const MAX = 2;

const rows: Row[] = [
  {
    reason: "a resource last seen Orphan: kept",
    deleted: [{ at: 0, uid: "a", deletionPolicy: "Orphan" }],
    askAt: 10,
    want: { a: "Orphan" },
    size: 1,
  },
  {
    reason: "a resource last seen Delete (or with no policy): not kept, the record alone decides",
    deleted: [
      { at: 0, uid: "a", deletionPolicy: "Delete" },
      { at: 0, uid: "b" },
    ],
    askAt: 10,
    want: { a: undefined, b: undefined },
    size: 0,
  },
  {
    reason: "management policies without Delete are Orphan, whatever spec.deletionPolicy says: kept",
    deleted: [{ at: 0, uid: "a", deletionPolicy: "Delete", noDelete: true }],
    askAt: 10,
    want: { a: "Orphan" },
    size: 1,
  },
  {
    reason: "another uid asked: nothing (a tombstone speaks of its own resource only)",
    deleted: [{ at: 0, uid: "a", deletionPolicy: "Orphan" }],
    askAt: 10,
    want: { b: undefined },
    size: 1,
  },
  {
    reason: "past the ttl: gone, with no timer (dropped at the next call)",
    deleted: [
      { at: 0, uid: "a", deletionPolicy: "Orphan" },
      { at: 500, uid: "b", deletionPolicy: "Orphan" },
    ],
    askAt: TTL + 100,
    want: { a: undefined, b: "Orphan" },
    size: 1,
  },
  {
    reason: "noted again: its time starts again (it is kept past the first note's ttl)",
    deleted: [
      { at: 0, uid: "a", deletionPolicy: "Orphan" },
      { at: 800, uid: "a", deletionPolicy: "Orphan" },
    ],
    askAt: TTL + 100,
    want: { a: "Orphan" },
    size: 1,
  },
  {
    reason: "more than the bound: the oldest goes first",
    deleted: [
      { at: 0, uid: "a", deletionPolicy: "Orphan" },
      { at: 1, uid: "b", deletionPolicy: "Orphan" },
      { at: 2, uid: "c", deletionPolicy: "Orphan" },
    ],
    askAt: 10,
    want: { a: undefined, b: "Orphan", c: "Orphan" },
    size: MAX,
  },
  {
    reason: "forgotten once its record is settled: gone at once",
    deleted: [
      { at: 0, uid: "a", deletionPolicy: "Orphan" },
      { at: 0, uid: "b", deletionPolicy: "Orphan" },
    ],
    forgotten: ["a"],
    askAt: 10,
    want: { a: undefined, b: "Orphan" },
    size: 1,
  },
];

describe("Tombstones", () => {
  it.each(rows)("$reason", (row) => {
    let now = 0;
    const tombstones = new Tombstones({ ttlMs: TTL, max: MAX, now: () => now });
    for (const d of row.deleted) {
      now = d.at;
      tombstones.noteDeleted(
        aWidget({
          uid: d.uid,
          ...(d.deletionPolicy ? { deletionPolicy: d.deletionPolicy } : {}),
          ...(d.noDelete ? { managementPolicies: ["Observe", "Create", "Update"] } : {}),
          deleting: true,
        }),
      );
    }
    for (const uid of row.forgotten ?? []) tombstones.forget(uid);
    now = row.askAt;
    for (const [uid, policy] of Object.entries(row.want)) {
      expect(tombstones.deletionPolicyOf(uid), uid).toBe(policy);
    }
    expect(tombstones.size).toBe(row.size);
  });

  it("refuses a bound of no tombstones at all", () => {
    expect(() => new Tombstones({ max: 0 })).toThrow(/^cannot keep at most 0 tombstones$/);
  });
});

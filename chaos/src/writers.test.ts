import { describe, expect, it } from "vitest";
import type { CloudShape } from "./invariants.ts";
import {
  checkOwnWrites,
  checkShardedWriters,
  checkSingleWriter,
  type ChaosRequestLogEntry,
  type RequestLogEntry,
  type Term,
  type Writer,
} from "./writers.ts";

let seq = 0;
/** A write by `clientId` arriving at `start` and answered at `end` (ms), with `status`. */
function w(clientId: string, start: number, end: number, status = 200): RequestLogEntry {
  seq += 1;
  return {
    seq,
    method: "PATCH",
    path: `/v1/shapes/shp_${seq}`,
    status,
    time: new Date(start).toISOString(),
    startedAtMs: start,
    finishedAtMs: end,
    clientId,
  };
}
const term = (identity: string, atMs: number): Term => ({ identity, atMs });
const isController = (id: string) => id.startsWith("t1-");

const cases: { reason: string; terms: Term[]; entries: RequestLogEntry[]; want: RegExp[] }[] = [
  {
    reason: "one writer inside its term",
    terms: [term("t1-a1", 0)],
    entries: [w("t1-a1", 1, 5), w("t1-a1", 3, 9)],
    want: [],
  },
  {
    reason: "a clean takeover: each writer inside its own term",
    terms: [term("t1-a1", 0), term("t1-b1", 15)],
    entries: [w("t1-a1", 1, 5), w("t1-a1", 6, 8), w("t1-b1", 20, 21), w("t1-b1", 22, 25)],
    want: [],
  },
  {
    reason: "a replica that leads again later (A, then B, then A re-elected) may write again",
    terms: [term("t1-a1", 0), term("t1-b1", 15), term("t1-a1", 30)],
    entries: [w("t1-a1", 1, 5), w("t1-b1", 20, 21), w("t1-a1", 31, 32)],
    want: [],
  },
  {
    reason: "the old leader writes after the takeover without leading again: stale leadership",
    terms: [term("t1-a1", 0), term("t1-b1", 15)],
    entries: [w("t1-a1", 1, 5), w("t1-b1", 20, 21), w("t1-a1", 30, 31)],
    want: [/writer t1-a1: PATCH .* arrived while t1-b1 led .*stale leadership/],
  },
  {
    reason: "a write held up past the takeover (answered after the new term began)",
    terms: [term("t1-a1", 0), term("t1-b1", 15)],
    entries: [w("t1-a1", 10, 18), w("t1-b1", 20, 21)],
    want: [/answered 3 ms after t1-b1 took over/],
  },
  {
    reason: "two writers at once: the new writer starts while the old one's write is in flight",
    terms: [term("t1-a1", 0), term("t1-b1", 0)],
    entries: [w("t1-b1", 1, 50), w("t1-a1", 20, 21)],
    want: [
      /t1-a1: .*arrived while t1-b1 led/,
      /t1-a1: .*arrived 30 ms before t1-b1's .* was answered: two writers at once/,
    ],
  },
  {
    reason: "a write before anyone led",
    terms: [term("t1-a1", 10)],
    entries: [w("t1-a1", 5, 6)],
    want: [/arrived before any replica led/],
  },
  {
    reason: "an unanswered write (status 0: abandoned in injected latency) changed nothing",
    terms: [term("t1-a1", 0), term("t1-b1", 15)],
    entries: [w("t1-a1", 10, 50, 0), w("t1-b1", 20, 21)],
    want: [],
  },
  {
    reason: "writes of people and other tools do not count",
    terms: [term("t1-a1", 0)],
    entries: [w("t1-a1", 1, 50), w("e2e-test", 10, 11), w("t1-a1", 20, 30)],
    want: [],
  },
  {
    reason: "log order and term order do not matter, times do",
    terms: [term("t1-b1", 15), term("t1-a1", 0)],
    entries: [w("t1-b1", 20, 21), w("t1-a1", 1, 5)],
    want: [],
  },
];

describe("checkSingleWriter", () => {
  it.each(cases)("$reason", ({ terms, entries, want }) => {
    const got = checkSingleWriter(entries, terms, isController);
    expect(got.map((v) => v.invariant)).toEqual(want.map(() => "single-writer"));
    got.forEach((v, i) => expect(`${v.subject}: ${v.detail}`).toMatch(want[i]!));
  });
});

describe("checkShardedWriters", () => {
  /** A write by `clientId` of cloud shape `shape` (by id; undefined: a create) from `start` to `end`. */
  const sw = (
    clientId: string,
    shape: string | undefined,
    start: number,
    end: number,
    status = 200,
  ): RequestLogEntry => {
    seq += 1;
    return {
      seq,
      method: shape === undefined ? "POST" : "PATCH",
      path: shape === undefined ? "/v1/shapes" : `/v1/shapes/${shape}`,
      status,
      time: new Date(start).toISOString(),
      startedAtMs: start,
      finishedAtMs: end,
      clientId,
    };
  };

  it.each<{ reason: string; entries: RequestLogEntry[]; want: RegExp[] }>([
    {
      reason: "each replica writing its own cloud shapes, side by side: the ring's very point",
      entries: [sw("t1-a1", "shp_1", 1, 50), sw("t1-b1", "shp_2", 10, 20), sw("t1-c1", "shp_3", 15, 60)],
      want: [],
    },
    {
      reason: "a legal handover: the new writer's first write arrives after the old one's last was answered",
      entries: [
        sw("t1-a1", "shp_1", 1, 5),
        sw("t1-a1", "shp_1", 6, 9),
        sw("t1-b1", "shp_1", 12, 14),
        sw("t1-b1", "shp_1", 15, 16),
      ],
      want: [],
    },
    {
      reason: "an overlapping pair: the new writer arrives while the old one's write is in flight",
      entries: [sw("t1-a1", "shp_1", 1, 30), sw("t1-b1", "shp_1", 10, 12)],
      want: [
        /^cloud shape shp_1: t1-b1's PATCH \/v1\/shapes\/shp_1 → 200 at .* arrived 20 ms before t1-a1's PATCH \/v1\/shapes\/shp_1 → 200 at .* was answered: two writers of one cloud shape at once$/,
      ],
    },
    {
      reason: "A, then B, then A again is legal when no two writes overlap (a part handed back)",
      entries: [sw("t1-a1", "shp_1", 1, 5), sw("t1-b1", "shp_1", 10, 12), sw("t1-a1", "shp_1", 20, 22)],
      want: [],
    },
    {
      reason: "A, then B, then A again while B's write is still in flight",
      entries: [sw("t1-a1", "shp_1", 1, 5), sw("t1-b1", "shp_1", 10, 40), sw("t1-a1", "shp_1", 20, 22)],
      want: [/^cloud shape shp_1: t1-a1's .* arrived 20 ms before t1-b1's .* two writers of one cloud shape/],
    },
    {
      reason: "an overlap hidden behind a later write of the same replica is still an overlap",
      entries: [sw("t1-a1", "shp_1", 1, 50), sw("t1-a1", "shp_1", 2, 3), sw("t1-b1", "shp_1", 10, 12)],
      want: [/t1-b1's .* arrived 40 ms before t1-a1's/],
    },
    {
      reason: "an unanswered write (status 0: abandoned in injected latency) changed nothing",
      entries: [sw("t1-a1", "shp_1", 1, 50, 0), sw("t1-b1", "shp_1", 10, 12)],
      want: [],
    },
    {
      reason: "a write answered the very millisecond the next writer's arrives does not overlap it",
      entries: [sw("t1-a1", "shp_1", 1, 10), sw("t1-b1", "shp_1", 10, 12)],
      want: [],
    },
    {
      reason: "creates name no cloud shape (one-cloud-shape watches duplicates)",
      entries: [sw("t1-a1", undefined, 1, 50), sw("t1-b1", undefined, 10, 12)],
      want: [],
    },
    {
      reason: "writes of people and other tools do not count",
      entries: [sw("t1-a1", "shp_1", 1, 50), sw("e2e-test", "shp_1", 10, 11)],
      want: [],
    },
    {
      reason: "log order does not matter, times do",
      entries: [sw("t1-b1", "shp_1", 10, 12), sw("t1-a1", "shp_1", 1, 30)],
      want: [/t1-b1's .* arrived 20 ms before t1-a1's/],
    },
  ])("$reason", ({ entries, want }) => {
    const got = checkShardedWriters(entries, isController);
    expect(got.map((v) => v.invariant)).toEqual(want.map(() => "single-writer"));
    got.forEach((v, i) => expect(`${v.subject}: ${v.detail}`).toMatch(want[i]!));
  });
});

describe("checkOwnWrites", () => {
  // Two clusters' controllers: t3-east1 writes as EAST, t3-west1 as WEST; both may adopt "k8s" shapes of
  // their own cluster (east's Shapes have uids e*, west's w*).
  const EAST = "k8s-11111111";
  const WEST = "k8s-22222222";
  const writers: Record<string, Writer> = {
    "t3-east1": {
      cluster: "east",
      ownerId: EAST,
      adoptOwnerIds: ["k8s"],
      isLocalUid: (u) => u.startsWith("e"),
    },
    "t3-west1": {
      cluster: "west",
      ownerId: WEST,
      adoptOwnerIds: ["k8s"],
      isLocalUid: (u) => u.startsWith("w"),
    },
  };
  const shapeWith = (tags: Record<string, string>): CloudShape => ({
    id: "shp_1",
    name: "chaos-t3.s1",
    type: "circle",
    color: "red",
    tags,
    revision: 4,
    createdAt: "",
    updatedAt: "",
  });
  /** A write by `clientId`; `before`: the shape it found, when the cloud carried it out. */
  const write = (
    clientId: string,
    method: string,
    before: Record<string, string> | undefined,
    status = method === "DELETE" ? 204 : 200,
  ): ChaosRequestLogEntry => ({
    seq: 1,
    method,
    path: method === "POST" ? "/v1/shapes" : "/v1/shapes/shp_1",
    status,
    time: "2026-01-01T00:00:00.000Z",
    startedAtMs: 0,
    finishedAtMs: 1,
    clientId,
    ...(before ? { before: shapeWith(before) } : {}),
  });

  it.each<{ reason: string; entries: ChaosRequestLogEntry[]; want: RegExp[] }>([
    {
      reason: "each controller writing shapes that carry its own owner id",
      entries: [
        write("t3-east1", "PATCH", { owner: EAST, "k8s-uid": "e1" }),
        write("t3-west1", "DELETE", { owner: WEST, "k8s-uid": "w1" }),
        write("t3-east1", "PUT", { owner: EAST }),
      ],
      want: [],
    },
    {
      reason: "a PATCH of the other cluster's shape: a cross-owner write",
      entries: [write("t3-east1", "PATCH", { owner: WEST, "k8s-uid": "w1" })],
      want: [
        /^writer t3-east1: PATCH \/v1\/shapes\/shp_1 → 200 .* wrote shape shp_1 \(chaos-t3.s1\), which carried owner "k8s-22222222", not east's "k8s-11111111"$/,
      ],
    },
    {
      reason: "a DELETE of the other cluster's shape (a sweep taking it for a leak)",
      entries: [write("t3-west1", "DELETE", { owner: EAST, "k8s-uid": "e1" })],
      want: [/^writer t3-west1: DELETE .* → 204 .*carried owner "k8s-11111111", not west's/],
    },
    {
      reason:
        "a write of a shape without an owner tag (disowned by a person, or released by an Orphan deletion)",
      entries: [write("t3-east1", "PATCH", { team: "billing" })],
      want: [/which carried no owner tag, not east's/],
    },
    {
      reason: "an owner id that differs from ours only by case is another owner",
      entries: [write("t3-east1", "DELETE", { owner: EAST.toUpperCase() })],
      want: [/carried owner "K8S-11111111"/],
    },
    {
      reason: "an adoption: a PATCH of an earlier owner id's shape whose k8s-uid is a Shape of its cluster",
      entries: [write("t3-east1", "PATCH", { owner: "k8s", "k8s-uid": "e7" })],
      want: [],
    },
    {
      reason: "an earlier owner id's shape of ANOTHER cluster is not its to adopt",
      entries: [write("t3-east1", "PATCH", { owner: "k8s", "k8s-uid": "w7" })],
      want: [
        /carried owner "k8s", not east's .* \(an earlier owner id, but k8s-uid w7 is no Shape of east\)/,
      ],
    },
    {
      reason: "an earlier owner id is adopted by a PATCH, never deleted",
      entries: [write("t3-east1", "DELETE", { owner: "k8s", "k8s-uid": "e7" })],
      want: [/DELETE .*carried owner "k8s"/],
    },
    {
      reason: "creates take a free name, and a refused write (412, 404) carried nothing out",
      entries: [write("t3-east1", "POST", undefined, 201), write("t3-west1", "PATCH", undefined, 412)],
      want: [],
    },
    {
      reason: "people and tools may write anything (the foreign-untouched rule watches what they must not)",
      entries: [write("person", "DELETE", { owner: EAST }), write("t3-east0", "PATCH", { owner: WEST })],
      want: [],
    },
  ])("$reason", ({ entries, want }) => {
    const got = checkOwnWrites(entries, (id) => writers[id]);
    expect(got.map((v) => v.invariant)).toEqual(want.map(() => "no-foreign-write"));
    got.forEach((v, i) => expect(`${v.subject}: ${v.detail}`).toMatch(want[i]!));
  });
});

import { describe, expect, it } from "vitest";
import { checkSingleWriter, type RequestLogEntry, type Term } from "./writers.ts";

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

import { describe, expect, test } from "vitest";
import type { RequestCounts } from "../requests.ts";
import type { ConvergeResult, FloorResult } from "../results.ts";
import { floorRequestsOf, unexpectedCounts, withConvergeRatio } from "./floor.ts";

const exact = {
  "POST shapes": 3,
  "PATCH shapes": 3,
  "POST shaperefs": 3,
  "POST events": 3,
  "PATCH shapes/status": 3,
};

describe("floorRequestsOf", () => {
  test.each<{ reason: string; counts: RequestCounts; want: RequestCounts }>([
    {
      reason: "keeps the writes to shapes, shaperefs and events",
      counts: { ...exact, "PUT leases": 2 },
      want: exact,
    },
    {
      reason: "leaves out reads (the bench's own watch) and the API server's own business",
      counts: { "POST shapes": 3, "WATCH shapes": 1, "LIST shaperefs": 1, "PUT leases": 2 },
      want: { "POST shapes": 3 },
    },
  ])("$reason", ({ counts, want }) => {
    expect(floorRequestsOf(counts)).toEqual(want);
  });
});

describe("unexpectedCounts", () => {
  test.each<{ reason: string; kube: RequestCounts; want: string | undefined }>([
    { reason: "exactly N of each of the five requests: nothing to say", kube: exact, want: undefined },
    {
      reason: "one short (an Event the server did not count) is named",
      kube: { ...exact, "POST events": 2 },
      want: "POST events 2 (N = 3)",
    },
    {
      reason: "a write the floor does not make is named too",
      kube: { ...exact, "DELETE shaperefs": 1 },
      want: "DELETE shaperefs 1 (N = 3)",
    },
    {
      reason: "a ShapeRef status write is one the floor does not make",
      kube: { ...exact, "PATCH shaperefs/status": 3 },
      want: "PATCH shaperefs/status 3 (N = 3)",
    },
    {
      reason: "a request missing altogether counts as 0",
      kube: { "POST shapes": 3 },
      want: "PATCH shapes 0, POST shaperefs 0, POST events 0, PATCH shapes/status 0 (N = 3)",
    },
  ])("$reason", ({ kube, want }) => {
    expect(unexpectedCounts(kube, 3)).toBe(want);
  });
});

describe("withConvergeRatio", () => {
  const floor = { durationMs: 5_000 } as FloorResult;
  test.each([
    { reason: "converge time / floor time", converge: 21_000, want: 4.2 },
    { reason: "a converge as fast as the floor", converge: 5_000, want: 1 },
  ])("$reason", ({ converge, want }) => {
    expect(withConvergeRatio(floor, { durationMs: converge } as ConvergeResult).convergeRatio).toBe(want);
  });

  test("a floor of 0 ms gives no ratio", () => {
    const none = withConvergeRatio({ durationMs: 0 } as FloorResult, { durationMs: 1 } as ConvergeResult);
    expect(none).not.toHaveProperty("convergeRatio");
  });
});

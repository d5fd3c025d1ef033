import { describe, expect, test } from "vitest";
import { median, percentiles, quantile, ratio, summarize } from "./stats.ts";

const hundred = Array.from({ length: 100 }, (_v, i) => i + 1); // 1..100

describe("quantile (nearest rank)", () => {
  test.each([
    { reason: "p50 of 1..100 is the 50th value", values: hundred, q: 0.5, want: 50 },
    { reason: "p99 of 1..100 is the 99th value, not an interpolation", values: hundred, q: 0.99, want: 99 },
    { reason: "q = 1 is the maximum", values: hundred, q: 1, want: 100 },
    { reason: "q = 0 is the minimum", values: hundred, q: 0, want: 1 },
    {
      reason: "p99 of ten values is the largest (rank ceil(9.9) = 10)",
      values: [5, 1, 4, 2, 3, 10, 9, 8, 7, 6],
      q: 0.99,
      want: 10,
    },
    { reason: "input order does not matter", values: [3, 1, 2], q: 0.5, want: 2 },
    { reason: "one value is every quantile", values: [42], q: 0.99, want: 42 },
    { reason: "an empty sample has no quantile", values: [], q: 0.5, want: undefined },
  ])("$reason", ({ values, q, want }) => {
    expect(quantile(values, q)).toBe(want);
  });

  test("a q outside [0, 1] is refused with a clear message", () => {
    expect(() => quantile([1], 99)).toThrow("cannot take the quantile 99: it must be between 0 and 1");
  });

  test("does not reorder the caller's array", () => {
    const values = [3, 1, 2];
    quantile(values, 0.5);
    expect(values).toEqual([3, 1, 2]);
  });
});

describe("median", () => {
  test.each([
    { reason: "odd count: the middle value", values: [9, 1, 5], want: 5 },
    { reason: "even count: the mean of the two middle values", values: [4, 1, 3, 2], want: 2.5 },
    { reason: "one value", values: [7], want: 7 },
    { reason: "empty: undefined", values: [], want: undefined },
  ])("$reason", ({ values, want }) => {
    expect(median(values)).toBe(want);
  });
});

describe("percentiles", () => {
  test("p50, p99, max and count of a sample", () => {
    expect(percentiles(hundred)).toEqual({ p50: 50, p99: 99, max: 100, count: 100 });
  });
  test("undefined for an empty sample", () => {
    expect(percentiles([])).toBeUndefined();
  });
});

describe("summarize (over repeats)", () => {
  test.each([
    {
      reason: "median with the min–max spread",
      values: [12, 10, 11],
      want: { median: 11, min: 10, max: 12, count: 3 },
    },
    {
      reason: "a repeat that measured nothing is left out",
      values: [4, undefined, 6],
      want: { median: 5, min: 4, max: 6, count: 2 },
    },
    { reason: "one repeat: no spread", values: [3], want: { median: 3, min: 3, max: 3, count: 1 } },
    { reason: "no repeat measured it", values: [undefined, undefined], want: undefined },
  ])("$reason", ({ values, want }) => {
    expect(summarize(values)).toEqual(want);
  });

  test("a NaN is refused instead of poisoning the median", () => {
    expect(() => summarize([1, NaN])).toThrow("cannot summarize NaN");
  });
});

describe("ratio", () => {
  test.each([
    { reason: "an ablation twice as slow", value: 20, base: 10, want: 2 },
    { reason: "an ablation that does less", value: 1, base: 4, want: 0.25 },
    {
      reason: "a base of 0 gives no ratio (0 writes vs 0 writes says nothing as a ratio)",
      value: 0,
      base: 0,
      want: undefined,
    },
    { reason: "a missing value gives no ratio", value: undefined, base: 3, want: undefined },
    { reason: "a missing base gives no ratio", value: 3, base: undefined, want: undefined },
  ])("$reason", ({ value, base, want }) => {
    expect(ratio(value, base)).toBe(want);
  });
});

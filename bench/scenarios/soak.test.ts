import { describe, expect, test } from "vitest";
import { MetricsSnapshot } from "@shapes/stack";
import type { SoakSample } from "../results.ts";
import {
  bucketsOf,
  intervalQuantile,
  leastSquares,
  nextSlot,
  rssSlopeToleranceMbPerHour,
  sampleIntervalMsOf,
  summarizeSoak,
  warmUpMsOf,
  type Buckets,
} from "./soak.ts";

const MB = 1024 * 1024;

describe("leastSquares", () => {
  test.each([
    {
      reason: "a straight line is found exactly, with no error",
      points: [
        [0, 1],
        [1, 3],
        [2, 5],
      ] as const,
      want: { slope: 2, intercept: 1, slopeStdErr: 0 },
    },
    {
      reason: "a flat series has slope 0",
      points: [
        [0, 100],
        [1, 100],
        [2, 100],
        [3, 100],
      ] as const,
      want: { slope: 0, intercept: 100, slopeStdErr: 0 },
    },
    {
      reason: "a sawtooth around a flat level: a slope, and a standard error larger than it (noise)",
      points: [
        [0, 10],
        [1, 12],
        [2, 10],
        [3, 12],
      ] as const,
      // slope = Σ(x−x̄)(y−ȳ) / Σ(x−x̄)² = 2 / 5; residuals −0.4, 1.2, −1.2, 0.4: SE = sqrt(3.2 / (4 − 2) / 5)
      want: { slope: 0.4, intercept: 10.4, slopeStdErr: Math.sqrt(3.2 / 2 / 5) },
    },
    {
      reason: "two points: a line, but no standard error (no degree of freedom left)",
      points: [
        [0, 0],
        [2, 1],
      ] as const,
      want: { slope: 0.5, intercept: 0, slopeStdErr: undefined },
    },
  ])("$reason", ({ points, want }) => {
    const fit = leastSquares(points);
    expect(fit?.slope).toBeCloseTo(want.slope, 10);
    expect(fit?.intercept).toBeCloseTo(want.intercept, 10);
    if (want.slopeStdErr === undefined) expect(fit?.slopeStdErr).toBeUndefined();
    else expect(fit?.slopeStdErr).toBeCloseTo(want.slopeStdErr, 10);
  });

  test.each([
    { reason: "no points", points: [] },
    { reason: "one point", points: [[1, 1] as const] },
    {
      reason: "every x the same (a vertical line has no slope)",
      points: [[1, 1] as const, [1, 2] as const],
    },
  ])("no line from $reason", ({ points }) => {
    expect(leastSquares(points)).toBeUndefined();
  });
});

/** Cumulative buckets (seconds → count) for the tests. */
function buckets(entries: [number, number][]): Buckets {
  return new Map(entries);
}

describe("intervalQuantile", () => {
  const before = buckets([
    [0.01, 10],
    [0.05, 50],
    [0.1, 90],
    [Infinity, 100],
  ]);
  test.each([
    {
      reason: "the 100 observations between the scrapes: p99 is the 99th, in the 0.1 s bucket",
      after: buckets([
        [0.01, 10 + 50],
        [0.05, 50 + 90],
        [0.1, 90 + 99],
        [Infinity, 100 + 100],
      ]),
      q: 0.99,
      want: 0.1,
    },
    {
      reason: "only what happened in between counts: the old tail is not the interval's",
      after: buckets([
        [0.01, 10 + 100],
        [0.05, 50 + 100],
        [0.1, 90 + 100],
        [Infinity, 100 + 100],
      ]),
      q: 0.99,
      want: 0.01,
    },
    {
      reason: "the median, nearest rank: rank 50 of 100 is the last of the 0.05 s bucket",
      after: buckets([
        [0.01, 10 + 10],
        [0.05, 50 + 50],
        [0.1, 90 + 95],
        [Infinity, 100 + 100],
      ]),
      q: 0.5,
      want: 0.05,
    },
    {
      reason: "above the largest finite bound: that bound (the histogram cannot say more)",
      after: buckets([
        [0.01, 10],
        [0.05, 50],
        [0.1, 90],
        [Infinity, 110],
      ]),
      q: 0.99,
      want: 0.1,
    },
    {
      reason: "one observation: every quantile is its bucket",
      after: buckets([
        [0.01, 10],
        [0.05, 51],
        [0.1, 91],
        [Infinity, 101],
      ]),
      q: 0.99,
      want: 0.05,
    },
    {
      reason: "counts that went down (a restarted process) count from zero",
      after: buckets([
        [0.01, 1],
        [0.05, 2],
        [0.1, 2],
        [Infinity, 2],
      ]),
      q: 0.99,
      want: 0.05,
    },
  ])("$reason", ({ after, q, want }) => {
    expect(intervalQuantile(before, after, q)).toBe(want);
  });

  test.each([
    { reason: "nothing observed in between", prior: before, after: before },
    { reason: "no buckets yet", prior: undefined, after: buckets([]) },
  ])("undefined when $reason", ({ prior, after }) => {
    expect(intervalQuantile(prior, after, 0.99)).toBeUndefined();
  });

  test("without an earlier scrape, everything so far", () => {
    expect(intervalQuantile(undefined, before, 0.5)).toBe(0.05);
  });

  test("refuses a quantile outside (0, 1]", () => {
    expect(() => intervalQuantile(undefined, before, 0)).toThrow("cannot take the quantile 0");
  });
});

describe("bucketsOf", () => {
  const m = MetricsSnapshot.parse(
    [
      "# TYPE x_reconcile_duration_seconds histogram",
      'x_reconcile_duration_seconds_bucket{le="0.05",controller="shape"} 3',
      'x_reconcile_duration_seconds_bucket{le="+Inf",controller="shape"} 4',
      'x_reconcile_duration_seconds_bucket{le="0.05",controller="shaperef"} 7',
      'x_reconcile_duration_seconds_bucket{le="+Inf",controller="shaperef"} 7',
      'x_reconcile_duration_seconds_sum{controller="shape"} 0.3',
      'x_reconcile_duration_seconds_count{controller="shape"} 4',
    ].join("\n"),
  );

  test.each<{ reason: string; labels: Record<string, string>; want: [number, number][] }>([
    {
      reason: "one label set: its cumulative counts by bound, +Inf as Infinity",
      labels: { controller: "shape" },
      want: [
        [0.05, 3],
        [Infinity, 4],
      ],
    },
    {
      reason: "no labels: every set summed",
      labels: {},
      want: [
        [0.05, 10],
        [Infinity, 11],
      ],
    },
    { reason: "a label set nobody has: empty", labels: { controller: "other" }, want: [] },
  ])("$reason", ({ labels, want }) => {
    expect([...bucketsOf(m, "x_reconcile_duration_seconds", labels)]).toEqual(want);
  });
});

describe("summarizeSoak", () => {
  const sample = (atMs: number, rssMb: number, extra: Partial<SoakSample> = {}): SoakSample => ({
    atMs,
    rssBytes: rssMb * MB,
    heapUsedBytes: 10 * MB,
    reconciles: 1,
    ...extra,
  });

  test.each([
    {
      reason: "RSS growing 1 MB a minute is 60 MB/h; the warm-up's step up is left out",
      samples: [
        sample(0, 50),
        sample(60_000, 100),
        sample(120_000, 101),
        sample(180_000, 102),
        sample(240_000, 103),
      ],
      warmUpMs: 60_000,
      want: { rssSlopeMbPerHour: 60, rssMeanBytes: 101.5 * MB },
    },
    {
      reason: "flat after the warm-up: no growth",
      samples: [sample(0, 50), sample(10_000, 100), sample(20_000, 100), sample(30_000, 100)],
      warmUpMs: 5_000,
      want: { rssSlopeMbPerHour: 0, rssMeanBytes: 100 * MB },
    },
    {
      reason: "fewer than two samples after the warm-up: all of them are fitted",
      samples: [sample(0, 100), sample(3_600_000, 110)],
      warmUpMs: 3_600_000,
      want: { rssSlopeMbPerHour: 10, rssMeanBytes: 105 * MB },
    },
  ])("$reason", ({ samples, warmUpMs, want }) => {
    const summary = summarizeSoak(samples, warmUpMs);
    expect(summary.rssSlopeMbPerHour).toBeCloseTo(want.rssSlopeMbPerHour, 6);
    expect(summary.rssMeanBytes).toBeCloseTo(want.rssMeanBytes, 0);
  });

  test("the worst event-loop lag, and the median and worst interval's reconcile p99 (intervals without any left out)", () => {
    const summary = summarizeSoak(
      [
        sample(0, 100),
        sample(1_000, 100, { eventLoopLagP99Ms: 12, reconcileP99Ms: 25 }),
        sample(2_000, 100, { eventLoopLagP99Ms: 40, reconcileP99Ms: 100 }),
        sample(3_000, 100, { eventLoopLagP99Ms: 11, reconciles: 0 }),
        sample(4_000, 100, { eventLoopLagP99Ms: 10, reconcileP99Ms: 50 }),
      ],
      0,
    );
    expect(summary).toMatchObject({
      eventLoopLagP99MaxMs: 40,
      reconcileP99MedianMs: 50,
      reconcileP99MaxMs: 100,
    });
  });

  test("no readings of lag or reconciles: those are left out, not 0", () => {
    const summary = summarizeSoak([sample(0, 100)], 0);
    expect(summary).toEqual({ rssMeanBytes: 100 * MB });
  });
});

describe("the soak's clock", () => {
  test.each([
    { reason: "before the start: the start", now: 500, want: 1_000 },
    { reason: "on a slot: that slot", now: 1_500, want: 1_500 },
    { reason: "between slots: the next one, not a catch-up burst", now: 2_600, want: 3_000 },
  ])("nextSlot: $reason", ({ now, want }) => {
    expect(nextSlot(1_000, 500, now)).toBe(want);
  });

  test.each([
    { reason: "a 10-minute soak samples every 10 s", soakMs: 600_000, want: 10_000 },
    { reason: "an hour: still every 10 s (the most)", soakMs: 3_600_000, want: 10_000 },
    { reason: "2 minutes: about 60 samples", soakMs: 120_000, want: 2_000 },
    { reason: "the smoke run's 15 s: every second (the least)", soakMs: 15_000, want: 1_000 },
  ])("sampleIntervalMsOf: $reason", ({ soakMs, want }) => {
    expect(sampleIntervalMsOf(soakMs)).toBe(want);
  });

  test("the warm-up is the first tenth", () => {
    expect(warmUpMsOf(600_000)).toBe(60_000);
  });
});

describe("rssSlopeToleranceMbPerHour", () => {
  test.each([
    { reason: "1% of 100 MB per 10 minutes is 6 MB/h", meanMb: 100, want: 6 },
    { reason: "it scales with the RSS: 200 MB allows 12 MB/h", meanMb: 200, want: 12 },
  ])("$reason", ({ meanMb, want }) => {
    expect(rssSlopeToleranceMbPerHour(meanMb * MB)).toBeCloseTo(want, 10);
  });
});

import { describe, expect, test } from "vitest";
import { escapeXml, niceTicks, renderLineChart, soakChart, tickLabel, type LineChart } from "./chart.ts";
import type { SoakResult, SoakSample } from "./results.ts";

describe("escapeXml", () => {
  test.each([
    { reason: "markup is text", text: "<script>&", want: "&#60;script&#62;&#38;" },
    { reason: "quotes, for attribute values", text: `a "b" 'c'`, want: "a &#34;b&#34; &#39;c&#39;" },
    { reason: "plain text stays as it is", text: "RSS (MB) – p99 ≤ 2 s", want: "RSS (MB) – p99 ≤ 2 s" },
  ])("$reason", ({ text, want }) => {
    expect(escapeXml(text)).toBe(want);
  });
});

describe("niceTicks", () => {
  test.each([
    { reason: "0 to 137 MB: steps of 50", min: 0, max: 137, count: 4, want: [0, 50, 100, 150] },
    { reason: "0 to 10 minutes: steps of 2", min: 0, max: 10, count: 5, want: [0, 2, 4, 6, 8, 10] },
    { reason: "small values: steps of 0.05", min: 0, max: 0.18, count: 4, want: [0, 0.05, 0.1, 0.15, 0.2] },
    { reason: "a flat series at 0 still gets an axis", min: 0, max: 0, count: 4, want: [0, 0.5, 1] },
    {
      reason: "a range not starting at 0 starts at the tick below and ends at the one above",
      min: 12,
      max: 38,
      count: 5,
      want: [10, 20, 30, 40],
    },
  ])("$reason", ({ min, max, count, want }) => {
    expect(niceTicks(min, max, count)).toEqual(want);
  });

  test("refuses an infinite range", () => {
    expect(() => niceTicks(0, Infinity)).toThrow("cannot place ticks on [0, Infinity]");
  });

  test.each([
    { reason: "whole steps: no decimals", value: 50, ticks: [0, 50, 100], want: "50" },
    { reason: "steps of 0.05: two decimals", value: 0.1, ticks: [0, 0.05, 0.1], want: "0.10" },
    { reason: "steps of 0.5: one", value: 1, ticks: [0, 0.5, 1], want: "1.0" },
  ])("tickLabel: $reason", ({ value, ticks, want }) => {
    expect(tickLabel(value, ticks)).toBe(want);
  });
});

describe("renderLineChart", () => {
  const chart: LineChart = {
    title: "Soak <default> & more",
    subtitle: "2/s edits",
    xLabel: "minutes since the load started",
    panels: [
      {
        title: "Memory (MB)",
        series: [
          {
            label: "RSS",
            color: "#1f77b4",
            points: [
              [0, 100],
              [1, 101],
              [2, 102],
            ],
          },
          {
            label: "heap",
            color: "#2ca02c",
            points: [
              [0, 30],
              [1, undefined],
              [2, 31],
            ],
          },
        ],
      },
      { title: "Lag (ms)", series: [{ label: "lag p99", color: "#ff7f0e", points: [[0, undefined]] }] },
    ],
  };
  const svg = renderLineChart(chart);

  test("is one SVG document with the title escaped, as its title element and as text", () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    expect(svg).toContain("<title>Soak &#60;default&#62; &#38; more</title>");
    expect(svg).not.toContain("<default>");
  });

  test("draws a line per run of readings: a gap breaks it, a lone reading is a dot", () => {
    expect(svg.match(/<polyline /g)).toHaveLength(1); // RSS: one line of 3 points
    expect(svg).toMatch(/<polyline [^>]*stroke="#1f77b4"[^>]*points="(\S+ ){2}\S+"/);
    expect(svg.match(/<circle [^>]*fill="#2ca02c"/g)).toHaveLength(2); // heap: two lone readings
  });

  test("has each panel's title, a legend entry per series, tick labels and the x label", () => {
    for (const text of [
      "Memory (MB)",
      "Lag (ms)",
      ">RSS<",
      ">heap<",
      ">lag p99<",
      "minutes since the load started",
    ])
      expect(svg).toContain(text);
    expect(svg).toContain('text-anchor="end" fill="#555555">150<'); // the memory axis: 0 … 150
  });

  test("a panel without readings says so", () => {
    expect(svg).toContain(">no readings<");
  });

  test("the same chart gives the same bytes", () => {
    expect(renderLineChart(chart)).toBe(svg);
  });
});

describe("soakChart", () => {
  const MB = 1024 * 1024;
  const sample = (atMs: number, extra: Partial<SoakSample> = {}): SoakSample => ({
    atMs,
    rssBytes: (100 + atMs / 60_000) * MB,
    heapUsedBytes: 40 * MB,
    reconciles: 3,
    ...extra,
  });
  const memory = {
    rssBytes: 100 * MB,
    peakRssBytes: 110 * MB,
    rssAnonBytes: 70 * MB,
    rssFileBytes: 30 * MB,
    heapUsedBytes: 40 * MB,
    heapTotalBytes: 60 * MB,
  };
  const soak = (durationMs: number, samples: SoakSample[]): SoakResult => ({
    shapes: 10,
    durationMs,
    sampleIntervalMs: 10_000,
    warmUpMs: durationMs / 10,
    ratePerSecond: 2,
    cloudEdits: { recolors: 2, deletes: 1, skipped: 0 },
    specChanges: 3,
    failed: 0,
    samples,
    start: memory,
    end: memory,
    rssMeanBytes: 105 * MB,
    converged: true,
    convergeMs: 1_000,
    cpu: { wallSeconds: 600, seconds: {} },
  });

  test.each([
    {
      reason: "a 10-minute soak is drawn in minutes",
      durationMs: 600_000,
      unit: "minutes since the load started",
    },
    { reason: "a 15-second soak in seconds", durationMs: 15_000, unit: "seconds since the load started" },
  ])("$reason", ({ durationMs, unit }) => {
    const step = durationMs / 5;
    const samples = [0, 1, 2, 3, 4, 5].map((i) =>
      sample(i * step, i === 0 ? {} : { eventLoopLagP99Ms: 12, reconcileP99Ms: 25 }),
    );
    const svg = soakChart(soak(durationMs, samples), "Soak");
    expect(svg).toContain(unit);
  });

  test("has the four series, the RSS trend and the warm-up, each panel with its readings", () => {
    const samples = [0, 1, 2, 3, 4, 5, 6].map((i) =>
      sample(i * 100_000, i === 0 ? {} : { eventLoopLagP99Ms: 10 + i, reconcileP99Ms: 25 }),
    );
    const svg = soakChart(soak(600_000, samples), "Soak of default #1", "2/s edits");
    for (const label of [
      ">RSS<",
      ">V8 heap used<",
      ">event-loop lag p99<",
      ">reconcile p99<",
      ">RSS trend (least squares)<",
      "warm-up (not in the slope)",
    ])
      expect(svg).toContain(label);
    // RSS, its trend, the heap, the lag (from the second sample) and the reconcile p99: five lines.
    expect(svg.match(/<polyline /g)).toHaveLength(5);
    expect(svg).not.toContain("no readings");
  });
});

/**
 * Line charts as SVG, for the soak's time series in docs/benchmarks.md (`docs/benchmarks-soak.svg`): panels
 * stacked over one time axis, each with its own y axis from 0, ticks, grid, legend and a title.
 *
 * Hand-written rather than a charting library: the picture is a few polylines, axes and labels — about as
 * much code as the glue a library needs — and a library would bring a dependency (often a DOM or a canvas)
 * into the bench for one static file. The output is plain, deterministic SVG text: the same results give the
 * same bytes, so a re-render (`--from`) changes the file only when the numbers do.
 */
import type { SoakResult } from "./results.ts";
import { leastSquares } from "./scenarios/soak.ts";

/** One line: (x, y) points in x order; an undefined y breaks the line (no reading in that interval). */
export interface Series {
  label: string;
  /** Any SVG color. */
  color: string;
  points: readonly (readonly [number, number | undefined])[];
  /** Drawn dashed (a fitted trend, not readings). */
  dashed?: boolean;
}

/** One panel: a y axis from 0 and the series drawn against it. */
export interface Panel {
  /** Above the panel, e.g. "Memory (MB)". */
  title: string;
  series: readonly Series[];
  /** A shaded x range with a label (e.g. the warm-up left out of a fit). */
  shade?: { from: number; to: number; label: string };
}

/** A chart: panels stacked over one shared x axis. */
export interface LineChart {
  title: string;
  subtitle?: string;
  /** Under the x axis, e.g. "minutes since the load started". */
  xLabel: string;
  panels: readonly Panel[];
  /** Where the x axis ends; the largest x by default. */
  xMax?: number;
  /** Pixels; 800 by default. */
  width?: number;
}

/** Text made safe for SVG (XML) content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * About `count` round tick values (steps of 1, 2 or 5 × 10^k) covering [min, max]: the first ≤ min, the last
 * ≥ max. An empty or inverted range widens to [min, min + 1] (a flat series still gets an axis).
 */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) {
    throw new RangeError(`cannot place ticks on [${min}, ${max}]: both ends must be finite`);
  }
  const hi = max > min ? max : min + 1;
  const raw = (hi - min) / Math.max(1, count);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * magnitude >= raw) ?? 10) * magnitude;
  const first = Math.floor(min / step + 1e-9);
  const last = Math.ceil(hi / step - 1e-9);
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const ticks: number[] = [];
  for (let i = first; i <= last; i++) ticks.push(Number((i * step).toFixed(decimals)));
  return ticks;
}

/** A tick's label: as many decimals as its step needs, no more. */
export function tickLabel(value: number, ticks: readonly number[]): string {
  const step = ticks.length > 1 ? Math.abs((ticks[1] as number) - (ticks[0] as number)) : 1;
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return value.toFixed(decimals);
}

const LAYOUT = {
  width: 800,
  left: 64,
  right: 24,
  /** Title and subtitle. */
  top: 64,
  /** A panel's plot area. */
  plotHeight: 150,
  /** Above each plot: its title and legend. */
  panelHead: 44,
  /** Below each plot: the x tick labels. */
  panelFoot: 26,
  /** Under the last panel: the x label. */
  bottom: 24,
} as const;

/** `n` with one decimal at most, for coordinates. */
function px(n: number): string {
  return String(Math.round(n * 10) / 10);
}

/** Renders the chart as a standalone SVG document. */
export function renderLineChart(chart: LineChart): string {
  const width = chart.width ?? LAYOUT.width;
  const plotWidth = width - LAYOUT.left - LAYOUT.right;
  const panelSpan = LAYOUT.panelHead + LAYOUT.plotHeight + LAYOUT.panelFoot;
  const height = LAYOUT.top + chart.panels.length * panelSpan + LAYOUT.bottom;
  const xs = chart.panels.flatMap((p) => p.series.flatMap((s) => s.points.map(([x]) => x)));
  // The x axis spans the data (or xMax) exactly: a 15.01 s soak ends at 15, not at the next round tick.
  const x0 = Math.min(0, ...xs);
  const end = chart.xMax ?? Math.max(...xs, 0);
  const x1 = end > x0 ? end : x0 + 1;
  const xTicks = niceTicks(x0, x1).filter((t) => t >= x0 && t <= x1 * (1 + 1e-9));
  const xOf = (x: number) => LAYOUT.left + ((x - x0) / (x1 - x0)) * plotWidth;

  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12" role="img">`,
    `<title>${escapeXml(chart.title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${LAYOUT.left}" y="24" font-size="16" font-weight="bold" fill="#111111">${escapeXml(chart.title)}</text>`,
  ];
  if (chart.subtitle) {
    out.push(`<text x="${LAYOUT.left}" y="44" fill="#444444">${escapeXml(chart.subtitle)}</text>`);
  }

  chart.panels.forEach((panel, i) => {
    const top = LAYOUT.top + i * panelSpan + LAYOUT.panelHead;
    const bottom = top + LAYOUT.plotHeight;
    const ys = panel.series.flatMap((s) => s.points.flatMap(([, y]) => (y === undefined ? [] : [y])));
    const yTicks = niceTicks(0, Math.max(0, ...ys), 4);
    const y1 = yTicks.at(-1) as number;
    const yOf = (y: number) => bottom - (y / y1) * LAYOUT.plotHeight;

    out.push(`<g>`);
    out.push(
      `<text x="${LAYOUT.left}" y="${top - 26}" font-weight="bold" fill="#111111">${escapeXml(panel.title)}</text>`,
    );
    // The legend, on one line under the title: a swatch of each line and its label.
    let legendX = LAYOUT.left;
    for (const s of panel.series) {
      out.push(
        `<line x1="${legendX}" y1="${top - 12}" x2="${legendX + 18}" y2="${top - 12}" stroke="${escapeXml(s.color)}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 3"' : ""}/>`,
        `<text x="${legendX + 24}" y="${top - 8}" fill="#333333">${escapeXml(s.label)}</text>`,
      );
      legendX += 24 + s.label.length * 6.2 + 20;
    }
    if (panel.shade && panel.shade.to > panel.shade.from) {
      const from = xOf(Math.max(x0, panel.shade.from));
      const to = xOf(Math.min(x1, panel.shade.to));
      out.push(
        `<rect x="${px(from)}" y="${top}" width="${px(to - from)}" height="${LAYOUT.plotHeight}" fill="#f1f1f1"/>`,
        `<text x="${px(from + 4)}" y="${bottom - 6}" font-size="10" fill="#777777">${escapeXml(panel.shade.label)}</text>`,
      );
    }
    // Grid and y ticks.
    for (const t of yTicks) {
      const y = px(yOf(t));
      out.push(
        `<line x1="${LAYOUT.left}" y1="${y}" x2="${LAYOUT.left + plotWidth}" y2="${y}" stroke="#e3e3e3"/>`,
        `<text x="${LAYOUT.left - 6}" y="${px(yOf(t) + 4)}" text-anchor="end" fill="#555555">${escapeXml(tickLabel(t, yTicks))}</text>`,
      );
    }
    // x ticks, under every panel (each reads on its own).
    for (const t of xTicks) {
      const x = px(xOf(t));
      out.push(
        `<line x1="${x}" y1="${bottom}" x2="${x}" y2="${bottom + 4}" stroke="#555555"/>`,
        `<text x="${x}" y="${bottom + 17}" text-anchor="middle" fill="#555555">${escapeXml(tickLabel(t, xTicks))}</text>`,
      );
    }
    out.push(
      `<line x1="${LAYOUT.left}" y1="${bottom}" x2="${LAYOUT.left + plotWidth}" y2="${bottom}" stroke="#555555"/>`,
      `<line x1="${LAYOUT.left}" y1="${top}" x2="${LAYOUT.left}" y2="${bottom}" stroke="#555555"/>`,
    );
    if (ys.length === 0) {
      out.push(
        `<text x="${px(LAYOUT.left + plotWidth / 2)}" y="${px(top + LAYOUT.plotHeight / 2)}" text-anchor="middle" fill="#777777">no readings</text>`,
      );
    }
    for (const s of panel.series) {
      const stroke = `stroke="${escapeXml(s.color)}"`;
      for (const segment of segments(s.points)) {
        const coords = segment.map(([x, y]) => `${px(xOf(x))},${px(yOf(y))}`);
        if (coords.length === 1) {
          const [cx, cy] = (coords[0] as string).split(",");
          out.push(`<circle cx="${cx}" cy="${cy}" r="2" fill="${escapeXml(s.color)}"/>`);
        } else {
          out.push(
            `<polyline fill="none" ${stroke} stroke-width="1.6"${s.dashed ? ' stroke-dasharray="5 3"' : ""} points="${coords.join(" ")}"/>`,
          );
        }
      }
    }
    out.push(`</g>`);
  });
  out.push(
    `<text x="${px(LAYOUT.left + plotWidth / 2)}" y="${height - 8}" text-anchor="middle" fill="#333333">${escapeXml(chart.xLabel)}</text>`,
    `</svg>`,
  );
  return `${out.join("\n")}\n`;
}

/** The runs of defined points of a series. */
function segments(points: Series["points"]): [number, number][][] {
  const runs: [number, number][][] = [];
  let current: [number, number][] = [];
  for (const [x, y] of points) {
    if (y === undefined || !Number.isFinite(y)) {
      if (current.length > 0) runs.push(current);
      current = [];
    } else {
      current.push([x, y]);
    }
  }
  if (current.length > 0) runs.push(current);
  return runs;
}

const MB = 1024 * 1024;

/**
 * The soak's chart: memory (RSS and V8 heap used, with the RSS trend the slope is fitted on, its warm-up
 * shaded), then the event-loop lag p99 and the reconcile p99 of each interval, each in a panel of its own
 * (milliseconds of two different things on one axis would squash the smaller). Time in minutes, or seconds
 * for a soak under two minutes.
 */
export function soakChart(soak: SoakResult, title: string, subtitle?: string): string {
  const minutes = soak.durationMs >= 120_000;
  const unit = minutes ? 60_000 : 1_000;
  const at = (ms: number) => ms / unit;
  const samples = soak.samples;
  const fitted = samples.filter((s) => s.atMs >= soak.warmUpMs);
  const fit = leastSquares(fitted.map((s) => [at(s.atMs), s.rssBytes / MB]));
  const first = fitted[0];
  const last = fitted.at(-1);
  const trend: Series[] =
    fit && first && last && fitted.length >= 2
      ? [
          {
            label: "RSS trend (least squares)",
            color: "#0b2f55",
            dashed: true,
            points: [first, last].map((s) => [at(s.atMs), fit.intercept + fit.slope * at(s.atMs)] as const),
          },
        ]
      : [];
  return renderLineChart({
    title,
    ...(subtitle === undefined ? {} : { subtitle }),
    xLabel: `${minutes ? "minutes" : "seconds"} since the load started`,
    xMax: at(soak.durationMs),
    panels: [
      {
        title: "Controller memory (MB)",
        series: [
          {
            label: "RSS",
            color: "#1f77b4",
            points: samples.map((s) => [at(s.atMs), s.rssBytes / MB]),
          },
          ...trend,
          {
            label: "V8 heap used",
            color: "#2ca02c",
            points: samples.map((s) => [at(s.atMs), s.heapUsedBytes / MB]),
          },
        ],
        shade: { from: 0, to: at(soak.warmUpMs), label: "warm-up (not in the slope)" },
      },
      {
        title: "Event-loop lag p99 per interval (ms)",
        series: [
          {
            label: "event-loop lag p99",
            color: "#ff7f0e",
            points: samples.map((s) => [at(s.atMs), s.eventLoopLagP99Ms]),
          },
        ],
      },
      {
        title: "Reconcile duration p99 per interval (ms; the histogram bucket's upper bound)",
        series: [
          {
            label: "reconcile p99",
            color: "#d62728",
            points: samples.map((s) => [at(s.atMs), s.reconcileP99Ms]),
          },
        ],
      },
    ],
  });
}

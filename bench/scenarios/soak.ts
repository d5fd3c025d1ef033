/**
 * Scenario 7: soak. With the N Shapes converged, minutes of steady load (`--soak-minutes`, 10 by default) of
 * both kinds the controller lives with: someone in the cloud console recoloring or deleting random owned
 * shapes (as the drift scenario does), and people changing random Shapes' specs (color or size, merge
 * patches, as `kubectl patch` would) — `--soak-rate` of each per second, evenly spaced, never a burst. Every
 * sample interval (10 s; shorter soaks sample at least 60 times, at most once a second) the controller is read:
 * RSS (/proc), V8 heap used, the event loop's delay p99 and the reconcile duration p99 over that interval (its
 * /metrics, one scrape). Then the load stops and the bench waits until every Shape is Ready for its
 * generation with the spec it was last given and the cloud holds exactly them, as the converge verifies.
 *
 * Reported: the samples (results.json, and the chart of the Markdown document), the RSS slope (least squares,
 * MB per hour, after a warm-up), the memory at the start and once settled after the load, the worst event-loop
 * lag, the median and worst interval's reconcile p99, the edits made, and whether everything converged.
 *
 * It runs on the run's first configuration only (`default`, whenever it is in the run): ten minutes on each
 * configuration would add more than an hour to the default run, and its targets are judged on `default`
 * anyway. It runs after the throttle and before the restart, so it soaks the process that
 * converged the N Shapes and ran every scenario before (a freshly restarted one would still be warming up,
 * which looks like growth).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { cloudNameOf, type ShapeSpec, TAG_OWNER } from "@shapes/controller";
import { maxSizeOf } from "@shapes/mock-cloud";
import { CloudCallError, type MetricsSnapshot } from "@shapes/stack";
import { METRIC_PREFIX } from "../controller.ts";
import { cpuBetween, cpuSnapshot } from "../cpu.ts";
import type { SoakResult, SoakSample } from "../results.ts";
import { isReady } from "../shape-watch.ts";
import { median } from "../stats.ts";
import { COLORS, pick, seededRandom } from "../workload.ts";
import { type RunContext } from "./context.ts";
import { cloudProblem } from "./converge.ts";
import { settledMemory } from "./memory.ts";

/** Bytes in the MB of the tables (binary, as formatBytes). */
const MB = 1024 * 1024;

/** The longest time between two samples; shorter soaks sample more often (see {@link sampleIntervalMsOf}). */
export const SAMPLE_INTERVAL_MS = 10_000;

/**
 * Time between two samples for a soak of `soakMs`: 10 s, or less for a short soak so that it still gets about
 * 60 samples, but never less than 1 s (a scrape and a /proc read each time: cheap, not free).
 */
export function sampleIntervalMsOf(soakMs: number): number {
  return Math.min(SAMPLE_INTERVAL_MS, Math.max(1_000, Math.round(soakMs / 60)));
}

/**
 * The first part of the load left out of the RSS slope: 10% of it. When the load starts, the controller's
 * memory steps up to its working level (buffers, the young generation filling) within seconds; a step at the
 * start of the window would read as growth.
 */
export function warmUpMsOf(soakMs: number): number {
  return Math.round(soakMs / 10);
}

/**
 * The RSS slope still called "no growth": 1% of the mean RSS per 10 minutes, in MB per hour. At that rate RSS
 * would take about 17 hours to double — a leak anyone would chase shows in a 10-minute soak at several times this —
 * while garbage collection's sawtooth moves a 10-minute fit by some MB/h on its own (the result's standard
 * error says how much, run by run).
 */
export function rssSlopeToleranceMbPerHour(meanRssBytes: number): number {
  return (meanRssBytes / MB) * 0.01 * 6;
}

/** A least-squares line through points, and its slope's standard error (undefined below 3 points). */
export interface LineFit {
  slope: number;
  intercept: number;
  slopeStdErr: number | undefined;
}

/**
 * The least-squares line through `points` (x, y). Undefined with fewer than 2 points or when every x is the
 * same (no line). The standard error of the slope is sqrt(residual variance / Σ(x − x̄)²), with n − 2 degrees
 * of freedom.
 */
export function leastSquares(points: readonly (readonly [number, number])[]): LineFit | undefined {
  const n = points.length;
  if (n < 2) return undefined;
  const meanX = points.reduce((s, [x]) => s + x, 0) / n;
  const meanY = points.reduce((s, [, y]) => s + y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const [x, y] of points) {
    sxx += (x - meanX) ** 2;
    sxy += (x - meanX) * (y - meanY);
  }
  if (sxx === 0) return undefined;
  const slope = sxy / sxx;
  const intercept = meanY - slope * meanX;
  if (n < 3) return { slope, intercept, slopeStdErr: undefined };
  const residuals = points.reduce((s, [x, y]) => s + (y - (intercept + slope * x)) ** 2, 0);
  return { slope, intercept, slopeStdErr: Math.sqrt(residuals / (n - 2) / sxx) };
}

/** Cumulative bucket counts of one histogram by upper bound (Infinity for `+Inf`), label sets summed. */
export type Buckets = ReadonlyMap<number, number>;

/**
 * The buckets of the histogram `name` (without `_bucket`) in one scrape, summed over the label sets that
 * include `labels` (e.g. every result of `{controller: "shape"}`). Empty when it has none yet.
 */
export function bucketsOf(m: MetricsSnapshot, name: string, labels: Record<string, string> = {}): Buckets {
  const buckets = new Map<number, number>();
  for (const s of m.samples) {
    if (s.name !== `${name}_bucket` || s.labels.le === undefined) continue;
    if (!Object.entries(labels).every(([key, want]) => s.labels[key] === want)) continue;
    const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  return buckets;
}

/**
 * The `q`-quantile of the observations made between two scrapes of one histogram, by the nearest rank over
 * the differences of their cumulative bucket counts: the upper bound of the bucket holding the observation of
 * rank ⌈q·count⌉ — "p99 ≤ this", at the buckets' resolution. An observation above the largest finite bound
 * gives that bound (the histogram cannot say more). `before` undefined, or a count that went down (the
 * process restarted), counts from zero. Undefined when nothing was observed in between.
 */
export function intervalQuantile(before: Buckets | undefined, after: Buckets, q: number): number | undefined {
  if (!(q > 0 && q <= 1)) throw new RangeError(`cannot take the quantile ${q}: it must be in (0, 1]`);
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const reset = bounds.some((le) => (after.get(le) ?? 0) < (before?.get(le) ?? 0));
  const since = (le: number) => (after.get(le) ?? 0) - (reset ? 0 : (before?.get(le) ?? 0));
  const last = bounds.at(-1);
  if (last === undefined) return undefined;
  const count = since(last);
  if (count <= 0) return undefined;
  const rank = Math.max(1, Math.ceil(q * count));
  const bound = bounds.find((le) => since(le) >= rank) ?? last;
  if (Number.isFinite(bound)) return bound;
  return bounds.filter((le) => Number.isFinite(le)).at(-1) ?? bound;
}

/** What the report shows of a soak's samples: the RSS slope after the warm-up, and the worst intervals. */
export type SoakSummary = Pick<
  SoakResult,
  | "rssSlopeMbPerHour"
  | "rssSlopeStdErrMbPerHour"
  | "rssMeanBytes"
  | "eventLoopLagP99MaxMs"
  | "reconcileP99MedianMs"
  | "reconcileP99MaxMs"
>;

/**
 * Summarizes the samples: the least-squares RSS slope in MB per hour over the samples at or after `warmUpMs`
 * (all of them when fewer than 2 are), their mean RSS, the worst event-loop lag p99, and the median and worst
 * reconcile p99 of the intervals that had reconciles.
 */
export function summarizeSoak(samples: readonly SoakSample[], warmUpMs: number): SoakSummary {
  const settled = samples.filter((s) => s.atMs >= warmUpMs);
  const fitted = settled.length >= 2 ? settled : samples;
  const fit = leastSquares(fitted.map((s) => [s.atMs / 3_600_000, s.rssBytes / MB]));
  const lags = samples.flatMap((s) => (s.eventLoopLagP99Ms === undefined ? [] : [s.eventLoopLagP99Ms]));
  const reconciles = samples.flatMap((s) => (s.reconcileP99Ms === undefined ? [] : [s.reconcileP99Ms]));
  const summary: SoakSummary = {
    rssMeanBytes: fitted.reduce((sum, s) => sum + s.rssBytes, 0) / Math.max(1, fitted.length),
  };
  if (fit) summary.rssSlopeMbPerHour = fit.slope;
  if (fit?.slopeStdErr !== undefined) summary.rssSlopeStdErrMbPerHour = fit.slopeStdErr;
  if (lags.length > 0) summary.eventLoopLagP99MaxMs = Math.max(...lags);
  if (reconciles.length > 0) {
    summary.reconcileP99MedianMs = median(reconciles);
    summary.reconcileP99MaxMs = Math.max(...reconciles);
  }
  return summary;
}

/**
 * The next time an action evenly spaced `intervalMs` apart from `startMs` may run, at or after `nowMs`: a
 * late action does not make the next ones catch up in a burst, it moves them to the next slot.
 */
export function nextSlot(startMs: number, intervalMs: number, nowMs: number): number {
  if (nowMs <= startMs) return startMs;
  return startMs + Math.ceil((nowMs - startMs) / intervalMs) * intervalMs;
}

/** Calls `act` every `intervalMs` from `startMs` until `endMs` (exclusive), one at a time. */
async function evenly(
  startMs: number,
  endMs: number,
  intervalMs: number,
  act: () => Promise<void>,
): Promise<void> {
  let next = startMs;
  while (next < endMs) {
    await sleep(Math.max(0, next - performance.now()));
    await act();
    next = nextSlot(startMs, intervalMs, Math.max(performance.now(), next + intervalMs));
  }
}

/** The event-loop lag p99 of prom-client's default metrics, with the controller's prefix. */
const EVENT_LOOP_LAG_P99 = `${METRIC_PREFIX}nodejs_eventloop_lag_p99_seconds`;
/** The reconcile duration histogram. */
const RECONCILE_DURATION = `${METRIC_PREFIX}reconcile_duration_seconds`;

/** Runs the soak. */
export async function soak(ctx: RunContext): Promise<SoakResult> {
  const soakMs = ctx.options.soakMinutes * 60_000;
  const rate = ctx.options.soakRate;
  const intervalMs = sampleIntervalMsOf(soakMs);
  const warmUpMs = warmUpMsOf(soakMs);
  const namespace = ctx.workload.namespace;
  const random = seededRandom(16);
  const cloudEdits = { recolors: 0, deletes: 0, skipped: 0 };
  let specChanges = 0;
  let failed = 0;
  let firstFailure: string | undefined;
  /** The spec each changed Shape was last given: what it must show, Ready, at the end. */
  const given = new Map<string, Partial<ShapeSpec>>();
  const failure = (error: unknown) => {
    failed += 1;
    if (firstFailure === undefined) {
      firstFailure = error instanceof Error ? error.message : String(error);
      ctx.progress.log(`${ctx.label}: soak: an edit failed (the load goes on): ${firstFailure}`);
    }
  };

  // Someone in the cloud console: a random owned shape recolored (two in three) or deleted (one in three).
  // Its current state comes from the cloud itself (one GET by name): a shape deleted a moment ago may not
  // be back yet, and is skipped.
  const cloudEdit = async () => {
    const name = pick(ctx.names, random);
    const deleting = random() < 1 / 3;
    try {
      const shape = await ctx.stack.cloud.api.getByName(cloudNameOf(namespace, name));
      if (!shape || shape.tags[TAG_OWNER] !== ctx.stack.ownerId) {
        cloudEdits.skipped += 1;
        return;
      }
      if (deleting) {
        await ctx.stack.cloud.api.delete(shape.id);
        cloudEdits.deletes += 1;
      } else {
        const color = pick(
          COLORS.filter((c) => c !== shape.color),
          random,
        );
        await ctx.stack.cloud.api.patch(shape.id, { color });
        cloudEdits.recolors += 1;
      }
    } catch (error) {
      if (error instanceof CloudCallError && error.status === 404) cloudEdits.skipped += 1;
      else failure(error);
    }
  };
  // Someone in the cluster: a random Shape's color or size changed (a new generation to reconcile).
  const specChange = async () => {
    const name = pick(ctx.names, random);
    const current = ctx.watch.get(name)?.spec ?? ctx.specOf(name);
    let patch: Partial<ShapeSpec>;
    if (random() < 0.5) {
      patch = {
        color: pick(
          COLORS.filter((c) => c !== current.color),
          random,
        ),
      };
    } else {
      // Within the cloud's limit for the Shape's type (a triangle is at most 500): a size the cloud refuses
      // for good is the conformance suite's scenario (rejected input), not load the soak should carry.
      const max = maxSizeOf(current.type ?? "");
      const size = 1 + Math.floor(random() * max);
      patch = { size: size === current.size ? (size % max) + 1 : size };
    }
    try {
      await ctx.workload.patchSpecs([name], () => patch);
      given.set(name, { ...given.get(name), ...patch });
      specChanges += 1;
    } catch (error) {
      failure(error);
    }
  };

  const bar = ctx.progress.task(
    `${ctx.label}: soak (${rate}/s cloud edits + ${rate}/s spec changes)`,
    Math.round(soakMs / 1000),
    "s",
  );
  const samples: SoakSample[] = [];
  let previous: ReturnType<typeof bucketsOf> | undefined;
  let start: SoakResult["start"] | undefined;
  const sample = async (startMs: number) => {
    const atMs = performance.now() - startMs;
    const m = await ctx.controller.metrics();
    const memory = await ctx.controller.memory(m);
    const buckets = bucketsOf(m, RECONCILE_DURATION, { controller: "shape" });
    const reading: SoakSample = {
      atMs,
      rssBytes: memory.rssBytes,
      heapUsedBytes: memory.heapUsedBytes,
      reconciles: 0,
    };
    if (previous) {
      // The lag histogram restarts at each scrape: this one covers the interval since the previous sample.
      if (m.samples.some((x) => x.name === EVENT_LOOP_LAG_P99))
        reading.eventLoopLagP99Ms = m.sum(EVENT_LOOP_LAG_P99) * 1000;
      const p99 = intervalQuantile(previous, buckets, 0.99);
      if (p99 !== undefined) reading.reconcileP99Ms = p99 * 1000;
      reading.reconciles = Math.max(0, (buckets.get(Infinity) ?? 0) - (previous.get(Infinity) ?? 0));
    } else {
      start = memory;
    }
    previous = buckets;
    samples.push(reading);
    bar.update(Math.floor(atMs / 1000));
  };

  const cpuBefore = cpuSnapshot(ctx.stack.pids());
  const startMs = performance.now();
  const endMs = startMs + soakMs;
  await Promise.all([
    evenly(startMs, endMs, 1000 / rate, cloudEdit),
    // Half an interval later: the two kinds of edit alternate rather than coincide.
    evenly(startMs + 500 / rate, endMs, 1000 / rate, specChange),
    evenly(startMs, endMs + 1, intervalMs, () => sample(startMs)),
  ]);
  const durationMs = performance.now() - startMs;
  const cpu = cpuBetween(cpuBefore, cpuSnapshot(ctx.stack.pids()), ctx.cores);
  const edits = cloudEdits.recolors + cloudEdits.deletes;
  bar.end(`${edits} cloud edits, ${specChanges} spec changes${failed > 0 ? `, ${failed} FAILED` : ""}`);

  // Everything must come back: each Shape Ready for its generation, with the spec it was last given, and
  // the cloud holding exactly them. A repair waits at most a relist without the change feed.
  const stopped = performance.now();
  const deadline = stopped + 2 * ctx.options.resyncPeriodMs + 60_000;
  let problem = await convergeProblem(ctx, given);
  while (problem !== undefined && performance.now() < deadline) {
    await sleep(250);
    problem = await convergeProblem(ctx, given);
  }
  const convergeMs = performance.now() - stopped;
  ctx.progress.log(
    problem === undefined
      ? `${ctx.label}: soak: all converged ${(convergeMs / 1000).toFixed(1)}s after the load`
      : `${ctx.label}: soak: NOT converged ${(convergeMs / 1000).toFixed(0)}s after the load: ${problem}`,
  );
  const end = await settledMemory(ctx.controller, ctx.options.smoke ? 3 : 10);

  const result: SoakResult = {
    shapes: ctx.names.length,
    durationMs,
    sampleIntervalMs: intervalMs,
    warmUpMs,
    ratePerSecond: rate,
    cloudEdits,
    specChanges,
    failed,
    samples,
    start: start ?? end,
    end,
    ...summarizeSoak(samples, warmUpMs),
    converged: problem === undefined,
    convergeMs,
    cpu,
  };
  if (firstFailure !== undefined) result.firstFailure = firstFailure;
  if (problem !== undefined) result.problem = problem;
  return result;
}

/**
 * What keeps the soak from being converged, or undefined: a Shape not Ready for its generation, a changed
 * Shape whose spec (as the bench's watch shows it) is not yet the one it was last given, or the cloud not
 * holding exactly the Shapes (their type, color, size and our tags).
 */
async function convergeProblem(
  ctx: RunContext,
  given: ReadonlyMap<string, Partial<ShapeSpec>>,
): Promise<string | undefined> {
  const shapes = ctx.watch.list();
  const notReady = shapes.filter((s) => !isReady(s));
  if (notReady.length > 0)
    return `${notReady.length} Shapes not Ready for their generation, e.g. ${notReady[0]?.metadata.name ?? "?"}`;
  for (const [name, spec] of given) {
    const seen = ctx.watch.get(name)?.spec;
    const stale = Object.entries(spec).some(([key, value]) => seen?.[key as keyof ShapeSpec] !== value);
    if (stale) return `the bench's watch does not show ${name}'s last spec yet`;
  }
  return cloudProblem(ctx);
}

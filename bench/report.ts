/**
 * The results as people read them: one table with a row per figure and a column per configuration (the
 * median over repeats, with the min–max spread; ablations also as a ratio to the default configuration),
 * each target (issues 6 and 16) marked met or missed on the default configuration — reported, never
 * asserted — and where the CPU went while converging, beside the floor's. Text for the terminal, the same
 * model rendered as Markdown for the docs.
 */
import { PAGE_SIZE } from "@shapes/controller";
import { BASELINE, type ConfigName } from "./configs.ts";
import type { ControllerMemory, DecisionHistory } from "./controller.ts";
import type { ProcessRole } from "./cpu.ts";
import { rssSlopeToleranceMbPerHour } from "./scenarios/soak.ts";
import { CLOUD_WRITE_METHODS, WRITE_VERBS, total, verbOf, type RequestCounts } from "./requests.ts";
import type { BenchResults, RunRecord } from "./results.ts";
import { ratio, summarize, type Summary } from "./stats.ts";
import {
  formatBytes,
  formatDuration,
  formatNumber,
  formatRatio,
  formatSpread,
  renderMarkdown,
  renderText,
  type Table,
} from "./table.ts";

/** A target of issue 6 or 16, judged on the default configuration's median. */
export interface Target {
  /** As written in the table, e.g. "≤ 10 s". */
  text: string;
  /** Met by this value? Undefined: not judged at this N (e.g. a target stated for 10,000 Shapes). */
  met: (value: number) => boolean | undefined;
}

/** One figure: how to read it from a run, and how to show it. */
export interface Figure {
  label: string;
  value: (run: RunRecord) => number | undefined;
  format: (value: number) => string;
  target?: Target;
  /** Indented under the figure above it (a breakdown). */
  detail?: boolean;
}

/** A titled group of figures (one scenario). */
export interface Section {
  title: string;
  figures: Figure[];
}

/** One judged target, for the list under the table. */
export interface TargetVerdict {
  section: string;
  figure: string;
  target: string;
  value: string;
  met: boolean | undefined;
}

const count = (v: number) => formatNumber(v);
const perShape = (v: number) => formatNumber(v);
const MB = 1024 * 1024;
/** A signed rate: "+1.20 MB/h", "-0.500 MB/h". */
const mbPerHour = (v: number) => `${v > 0 ? "+" : ""}${formatNumber(v)} MB/h`;
/** A share of repeats that did something: "yes" (all), "no" (none), else the share. */
const yesNo = (v: number) => (v >= 1 ? "yes" : v <= 0 ? "no" : `${formatNumber(v * 100)}% of runs`);
/** The share of idle RSS "after deleting every Shape" may exceed it by (issue 16: within 20% of idle). */
export const AFTER_DELETE_OVER_IDLE = 0.2;
/** The RSS after the soak must stay within this (issue 16), as with N Shapes at 10,000. */
export const RSS_TARGET_BYTES = 200 * MB;

/** The figures of every scenario, given the run's N and resync period. */
export function sections(results: BenchResults): Section[] {
  const n = results.options.shapes;
  const runs = results.runs;
  const storm = runs.find((r) => r.throttle)?.throttle;
  const convergeTargetMs = n * 10; // 1,000 Shapes in 10 s, 10,000 in 100 s: 100 Shapes/s
  const pages = Math.ceil(n / PAGE_SIZE);
  const keysOf = (pick: (r: RunRecord) => RequestCounts | undefined, keep: (key: string) => boolean) =>
    [...new Set(runs.flatMap((r) => Object.keys(pick(r) ?? {})))].filter(keep).sort();
  const kubeWrite = (key: string) => WRITE_VERBS.has(verbOf(key));
  const cloudWrite = (key: string) => CLOUD_WRITE_METHODS.has(verbOf(key));
  const cloudRead = (key: string) => verbOf(key) === "GET" && !key.endsWith("/v1/watch");
  const per = (r: RunRecord, counts: RequestCounts | undefined, keep: (k: string) => boolean) =>
    r.cost && counts ? total(counts, keep) / r.cost.shapes : undefined;
  const mem =
    (
      pick: (r: RunRecord) => ControllerMemory | undefined,
      field: Exclude<keyof ControllerMemory, "decisionHistory">,
    ): Figure["value"] =>
    (r) =>
      pick(r)?.[field];
  const services = [...new Set(runs.flatMap((r) => Object.keys(r.tracing?.byService ?? {})))].sort();
  // Targets relative to another reading take it from the default configuration, on which they are judged.
  const baselineMedian = (pick: (r: RunRecord) => number | undefined) =>
    summarize(runs.filter((r) => r.config === BASELINE).map(pick))?.median;
  const idleRss = baselineMedian((r) => r.memory?.idle?.rssBytes);
  const afterDeleteLimit = idleRss === undefined ? undefined : idleRss * (1 + AFTER_DELETE_OVER_IDLE);
  const soakMeanRss = baselineMedian((r) => r.soak?.rssMeanBytes);
  const slopeTolerance = soakMeanRss === undefined ? undefined : rssSlopeToleranceMbPerHour(soakMeanRss);
  const soaked = runs.find((r) => r.soak);
  const sync = (r: RunRecord) => r.restart?.initialSync;
  const syncSampleMs = runs.map((r) => sync(r)?.sampleIntervalMs).find((ms) => ms !== undefined) ?? 100;
  const cpuSeconds = (v: number) => `${formatNumber(v)} s`;

  return [
    {
      title: `Converge from cold: ${n.toLocaleString("en-US")} Shapes applied at once`,
      figures: [
        {
          label: "time until all Ready and the cloud verified",
          value: (r) => r.converge?.durationMs,
          format: formatDuration,
          // Stated for 1,000 and 10,000 Shapes; below 1,000 the fixed costs dominate and it is not judged.
          target: {
            text: `≤ ${formatDuration(convergeTargetMs)} (100/s)`,
            met: (v) => (n >= 1_000 ? v <= convergeTargetMs : undefined),
          },
        },
        {
          label: "controller CPU per Shape (its CPU seconds while converging / N)",
          value: (r) => controllerCpuPerShape(r),
          format: (v) => `${formatNumber(v * 1000)} ms`,
          detail: true,
        },
        { label: "throughput (Shapes/s)", value: (r) => r.converge?.shapesPerSecond, format: count },
        {
          label: `floor: bare writes, ${n.toLocaleString("en-US")} Shapes`,
          value: (r) => r.floor?.durationMs,
          format: formatDuration,
        },
        {
          label: "floor writes/s (per Shape: the create and the controller's writes of that configuration)",
          value: (r) => r.floor?.writesPerSecond,
          format: count,
          detail: true,
        },
        {
          label: "converge / floor",
          value: (r) => r.floor?.convergeRatio,
          format: count,
          // Stated for 1,000 and 10,000 Shapes, as the converge time's.
          target: { text: "≤ 1.25", met: (v) => (n >= 1_000 ? v <= 1.25 : undefined) },
        },
        {
          label: "per-Shape latency p50 (create → Ready)",
          value: (r) => r.converge?.latencyMs.p50,
          format: formatDuration,
        },
        { label: "per-Shape latency p99", value: (r) => r.converge?.latencyMs.p99, format: formatDuration },
        {
          label: "the bench's own creates took",
          value: (r) => r.converge?.createMs,
          format: formatDuration,
          detail: true,
        },
        {
          label: "Shape reconciles per Shape (controller's /metrics)",
          value: (r) =>
            r.converge?.reconciles ? r.converge.reconciles.count / r.converge.shapes : undefined,
          format: count,
        },
        {
          label: "mean reconcile time",
          value: (r) => r.converge?.reconciles?.meanMs,
          format: formatDuration,
        },
        {
          label: "mean wait in the queue",
          value: (r) => r.converge?.reconciles?.meanQueueWaitMs,
          format: formatDuration,
        },
      ],
    },
    {
      title: "API cost per created Shape (converge run; the bench's own requests taken out)",
      figures: [
        {
          label: "Kubernetes writes",
          value: (r) => per(r, r.cost?.kube, kubeWrite),
          format: perShape,
          target: { text: "≤ 4", met: (v) => v <= 4 },
        },
        ...keysOf((r) => r.cost?.kube, kubeWrite).map((key) => ({
          label: key,
          value: (r: RunRecord) => per(r, r.cost?.kube, (k) => k === key),
          format: perShape,
          detail: true,
        })),
        {
          label: "Kubernetes reads (GET, LIST, WATCH)",
          value: (r) => per(r, r.cost?.kube, (k) => !kubeWrite(k)),
          format: perShape,
        },
        {
          label: "cloud writes",
          value: (r) => per(r, r.cost?.cloud, cloudWrite),
          format: perShape,
          target: { text: "1", met: (v) => v <= 1 },
        },
        ...keysOf((r) => r.cost?.cloud, cloudWrite).map((key) => ({
          label: key,
          value: (r: RunRecord) => per(r, r.cost?.cloud, (k) => k === key),
          format: perShape,
          detail: true,
        })),
        {
          label: "cloud reads (lists and gets)",
          value: (r) => per(r, r.cost?.cloud, cloudRead),
          format: perShape,
        },
      ],
    },
    {
      title: `Steady state: ${results.options.steadyPeriods} resync periods of ${formatDuration(results.options.resyncPeriodMs)}, nothing to do`,
      figures: [
        {
          label: "Kubernetes writes",
          value: (r) => r.steady?.kubeWrites,
          format: count,
          target: { text: "0", met: (v) => v === 0 },
        },
        {
          label: "cloud writes",
          value: (r) => r.steady?.cloudWrites,
          format: count,
          target: { text: "0", met: (v) => v === 0 },
        },
        {
          label: `cloud reads per resync period (N / page size ${PAGE_SIZE} = ${pages})`,
          value: (r) => r.steady?.cloudReadsPerPeriod,
          format: count,
          target: { text: `≈ ${pages}`, met: (v) => v <= pages * 1.5 },
        },
        {
          label: "Shape reconciles per resync period",
          value: (r) => r.steady?.reconcilesPerPeriod,
          format: count,
        },
        {
          label: "controller CPU (share of one core)",
          value: (r) =>
            r.steady ? (r.steady.cpu.seconds.controller ?? 0) / r.steady.cpu.wallSeconds : undefined,
          format: (v) => `${formatNumber(v * 100)}%`,
        },
      ],
    },
    {
      title: `Drift repair: ${results.options.driftEdits} random cloud-side edits (recolor or delete) while idle`,
      figures: [
        { label: "repaired", value: (r) => r.drift?.repaired, format: count },
        {
          label: "repair latency p50 (cloud write → repair)",
          value: (r) => r.drift?.latencyMs?.p50,
          format: formatDuration,
        },
        {
          label: "repair latency p99",
          value: (r) => r.drift?.latencyMs?.p99,
          format: formatDuration,
          target: { text: "≤ 2 s (change feed on)", met: (v) => v <= 2_000 },
        },
        {
          label: "controller cloud writes per edit",
          value: (r) => (r.drift ? r.drift.cloudWrites / r.drift.edits : undefined),
          format: perShape,
        },
      ],
    },
    {
      title: `Cloud-wide 429 storm: every cloud call answered 429 (Retry-After ${formatDuration(storm?.retryAfterMs ?? 1_000)}) for ${formatDuration(Math.round((storm?.stormMs ?? 10_000) / 1000) * 1000)} while ${results.options.driftEdits} Shapes need a cloud write`,
      figures: [
        {
          label: "the controller's --cloud-qps (0: no rate limiter)",
          value: (r) => r.throttle?.cloudQps,
          format: count,
        },
        {
          label: "controller cloud calls per second during the storm",
          value: (r) => r.throttle?.callsPerSecond,
          format: count,
        },
        {
          label: "time every call was held (the limiter's own count)",
          value: (r) => r.throttle?.heldMs,
          format: formatDuration,
        },
        {
          label: "Shapes whose recolor reached the cloud",
          value: (r) => r.throttle?.repaired,
          format: count,
        },
        {
          label: "storm over → the last recolor in the cloud",
          value: (r) => r.throttle?.repairMs,
          format: formatDuration,
        },
      ],
    },
    {
      title: `Soak: ${formatDuration(Math.round((soaked?.soak?.durationMs ?? 0) / 1000) * 1000)} of steady load on ${n.toLocaleString("en-US")} Shapes (${formatNumber(soaked?.soak?.ratePerSecond ?? 0)}/s cloud-side edits + as many spec changes; ${soaked?.config ?? "the first configuration"} only)`,
      figures: [
        {
          label: "RSS at the load's start",
          value: (r) => r.soak?.start.rssBytes,
          format: formatBytes,
        },
        {
          label: "RSS after the soak (load over, all converged, settled)",
          value: (r) => r.soak?.end.rssBytes,
          format: formatBytes,
          target: { text: "≤ 200 MB", met: (v) => v <= RSS_TARGET_BYTES },
        },
        {
          label: "RSS slope during the soak (least squares, after the warm-up)",
          value: (r) => r.soak?.rssSlopeMbPerHour,
          format: mbPerHour,
          // "No growth" within 1% of the mean RSS per 10 minutes: see rssSlopeToleranceMbPerHour. Judged for a
          // soak of 10 minutes or more: in a shorter one the controller warming up to the load reads as growth.
          target: {
            text: `≈ 0 (no growth${slopeTolerance === undefined ? "" : `: within ±${formatNumber(slopeTolerance)} MB/h, 1% of the mean RSS per 10 min`})`,
            met: (v) =>
              slopeTolerance === undefined || results.options.soakMinutes < 10
                ? undefined
                : Math.abs(v) <= slopeTolerance,
          },
        },
        {
          label: "its standard error (garbage collection's ups and downs)",
          value: (r) => r.soak?.rssSlopeStdErrMbPerHour,
          format: (v) => `±${formatNumber(v)} MB/h`,
          detail: true,
        },
        {
          label: "V8 heap used at the load's start",
          value: (r) => r.soak?.start.heapUsedBytes,
          format: formatBytes,
        },
        {
          label: "V8 heap used after the soak",
          value: (r) => r.soak?.end.heapUsedBytes,
          format: formatBytes,
        },
        {
          label: "event-loop lag p99, the worst interval",
          value: (r) => r.soak?.eventLoopLagP99MaxMs,
          format: formatDuration,
        },
        {
          label: "reconcile p99 per interval (bucket bound), median interval",
          value: (r) => r.soak?.reconcileP99MedianMs,
          format: formatDuration,
        },
        {
          label: "reconcile p99 per interval, the worst",
          value: (r) => r.soak?.reconcileP99MaxMs,
          format: formatDuration,
        },
        {
          label: "cloud-side edits (recolors and deletes)",
          value: (r) => (r.soak ? r.soak.cloudEdits.recolors + r.soak.cloudEdits.deletes : undefined),
          format: count,
        },
        {
          label: "skipped: the shape was gone (being re-created)",
          value: (r) => r.soak?.cloudEdits.skipped,
          format: count,
          detail: true,
        },
        { label: "spec changes (color or size)", value: (r) => r.soak?.specChanges, format: count },
        { label: "edits that failed", value: (r) => r.soak?.failed, format: count },
        {
          label: "all converged after the load (Ready, cloud matched)",
          value: (r) => (r.soak ? (r.soak.converged ? 1 : 0) : undefined),
          format: yesNo,
        },
        {
          label: "load over → all converged",
          value: (r) => (r.soak?.converged ? r.soak.convergeMs : undefined),
          format: formatDuration,
        },
        {
          label: "controller CPU during the load (share of one core)",
          value: (r) => (r.soak ? (r.soak.cpu.seconds.controller ?? 0) / r.soak.cpu.wallSeconds : undefined),
          format: (v) => `${formatNumber(v * 100)}%`,
        },
      ],
    },
    {
      title: `Restart with ${n.toLocaleString("en-US")} Shapes present`,
      figures: [
        { label: "graceful stop (SIGTERM → exit)", value: (r) => r.restart?.stopMs, format: formatDuration },
        {
          label: "spawn → /readyz (every Shape verified)",
          value: (r) => r.restart?.readyMs,
          format: formatDuration,
        },
        {
          label: "spawn → a Shape created at the spawn is Ready",
          value: (r) => r.restart?.newShapeReadyMs,
          format: formatDuration,
        },
        {
          label: "Kubernetes writes (the new Shape's own included)",
          value: (r) => (r.restart ? total(r.restart.kube, kubeWrite) : undefined),
          format: count,
        },
        {
          label: "cloud reads",
          value: (r) => (r.restart ? total(r.restart.cloud, cloudRead) : undefined),
          format: count,
        },
        {
          label: "controller CPU until ready and the new Shape Ready",
          value: (r) => r.restart?.cpu.seconds.controller,
          format: (v) => `${formatNumber(v)} s`,
        },
        // The cold start's first lists with N present (watch-lists where the API server serves them).
        {
          label: "kube-apiserver CPU, the restart's initial sync (spawn → /readyz)",
          value: (r) => sync(r)?.cpu.seconds.apiServer,
          format: cpuSeconds,
        },
        {
          label: "etcd CPU, the same",
          value: (r) => sync(r)?.cpu.seconds.etcd,
          format: cpuSeconds,
          detail: true,
        },
        {
          label: "controller CPU, the same",
          value: (r) => sync(r)?.cpu.seconds.controller,
          format: cpuSeconds,
          detail: true,
        },
        {
          label: "kube-apiserver RSS before the spawn",
          value: (r) => sync(r)?.rss.apiServer?.beforeBytes,
          format: formatBytes,
        },
        {
          label: `kube-apiserver peak RSS during the initial sync (VmRSS every ${formatDuration(syncSampleMs)})`,
          value: (r) => sync(r)?.rss.apiServer?.peakBytes,
          format: formatBytes,
        },
        {
          label: "above its RSS before",
          value: (r) => {
            const w = sync(r)?.rss.apiServer;
            return w && w.peakBytes - w.beforeBytes;
          },
          format: formatBytes,
          detail: true,
        },
        {
          label: "etcd peak RSS during it",
          value: (r) => sync(r)?.rss.etcd?.peakBytes,
          format: formatBytes,
        },
        {
          label: "etcd RSS before the spawn",
          value: (r) => sync(r)?.rss.etcd?.beforeBytes,
          format: formatBytes,
          detail: true,
        },
      ],
    },
    {
      title: "Controller memory",
      figures: [
        {
          label: "RSS idle (ready, 0 Shapes)",
          value: mem((r) => r.memory?.idle, "rssBytes"),
          format: formatBytes,
        },
        {
          label: "modules loaded, ready with 0 Shapes (distinct, node: builtins included)",
          value: (r) => r.modules?.total,
          format: count,
        },
        {
          label: "of which @kubernetes/client-node's",
          value: (r) => r.modules?.clientNode,
          format: count,
          detail: true,
        },
        {
          label: `RSS with ${n.toLocaleString("en-US")} Shapes (after converging)`,
          value: mem((r) => r.memory?.afterConverge, "rssBytes"),
          format: formatBytes,
          target: {
            text: "≤ 200 MB at 10,000",
            met: (v) => (n >= 10_000 ? v <= RSS_TARGET_BYTES : undefined),
          },
        },
        {
          label: "of which anonymous (RssAnon; the rest is the node binary's shared file pages)",
          value: mem((r) => r.memory?.afterConverge, "rssAnonBytes"),
          format: formatBytes,
          detail: true,
        },
        {
          label: "V8 heap used (after converging)",
          value: mem((r) => r.memory?.afterConverge, "heapUsedBytes"),
          format: formatBytes,
        },
        {
          label: "V8 heap reserved (after converging)",
          value: mem((r) => r.memory?.afterConverge, "heapTotalBytes"),
          format: formatBytes,
        },
        {
          label: "RSS after the restart (N present)",
          value: mem((r) => r.memory?.afterRestart, "rssBytes"),
          format: formatBytes,
        },
        {
          label: "peak RSS (the restarted process)",
          value: mem((r) => r.memory?.afterDelete, "peakRssBytes"),
          format: formatBytes,
        },
        {
          label: "RSS after deleting every Shape",
          value: mem((r) => r.memory?.afterDelete, "rssBytes"),
          format: formatBytes,
          // At most 20% above idle (less is fine); not judged without an idle reading.
          target: {
            text: `within 20% of idle${afterDeleteLimit === undefined ? "" : ` (≤ ${formatBytes(afterDeleteLimit)})`}`,
            met: (v) => (afterDeleteLimit === undefined ? undefined : v <= afterDeleteLimit),
          },
        },
        {
          label: "V8 heap used after deleting every Shape",
          value: mem((r) => r.memory?.afterDelete, "heapUsedBytes"),
          format: formatBytes,
        },
        {
          label: "time to delete every Shape (cloud and ShapeRefs too)",
          value: (r) => r.memory?.deleteMs,
          format: formatDuration,
        },
        {
          label: "cloud GET by name while deleting (a delete knows the id)",
          value: (r) => r.memory?.deleteByNameReads?.total,
          format: count,
          detail: true,
        },
        {
          label: "of which answered 404",
          value: (r) => r.memory?.deleteByNameReads?.notFound,
          format: count,
          detail: true,
        },
      ],
    },
    {
      title: "Tracing: spans exported to the bench's in-process OTLP receiver (the whole run)",
      figures: [
        { label: "spans exported", value: (r) => r.tracing?.spans, format: count },
        ...services.map((service) => ({
          label: `by ${service}`,
          value: (r: RunRecord) => (r.tracing ? (r.tracing.byService[service] ?? 0) : undefined),
          format: count,
          detail: true,
        })),
      ],
    },
  ];
}

/**
 * The controller's CPU seconds per Shape while converging: its CPU seconds over N, derived from the run's
 * `converge.cpu` (so results of every age have it). Undefined without a converge or without the controller's CPU.
 */
export function controllerCpuPerShape(r: RunRecord): number | undefined {
  const c = r.converge;
  if (!c) return undefined;
  const seconds = c.cpu.seconds.controller;
  return seconds === undefined || c.shapes === 0 ? undefined : seconds / c.shapes;
}

/** The heading of {@link decisionHistoryLines}. */
export const DECISION_HISTORY_HEADING = "Controller decision history (GET /why, read with the RSS; medians)";

/**
 * The size of the controller's decision history per configuration, one line per reading (after converging,
 * after deleting every Shape): `default, after converging — decision history: N objects, M entries, B bytes
 * (as JSON)`, or one line saying it is absent when /why answered 404. Empty when no run read it.
 */
export function decisionHistoryLines(results: BenchResults): string[] {
  const readings = [
    ["afterConverge", "after converging"],
    ["afterDelete", "after deleting every Shape"],
  ] as const;
  const lines: string[] = [];
  for (const config of configsOf(results)) {
    const runs = results.runs.filter((r) => r.config === config);
    let absent = false;
    const before = lines.length;
    for (const [field, when] of readings) {
      const seen = runs.map((r) => r.memory?.[field]?.decisionHistory);
      absent ||= seen.includes(null);
      const sizes = seen.filter((h): h is DecisionHistory => h !== undefined && h !== null);
      if (sizes.length === 0) continue;
      const median = (pick: (h: DecisionHistory) => number) =>
        formatNumber(summarize(sizes.map(pick))?.median ?? 0);
      lines.push(
        `${config}, ${when} — decision history: ${median((h) => h.subjects)} objects, ${median((h) => h.entries)} entries, ${median((h) => h.bytes)} bytes (as JSON)`,
      );
    }
    if (lines.length === before && absent)
      lines.push(`${config} — decision history: absent (/why answered 404)`);
  }
  return lines;
}

/** The configurations that ran, in the order given. */
function configsOf(results: BenchResults): ConfigName[] {
  return results.options.configs.filter((c) => results.runs.some((r) => r.config === c));
}

/** A figure summarized over the repeats of one configuration. */
function summaryOf(results: BenchResults, figure: Figure, config: ConfigName): Summary | undefined {
  return summarize(results.runs.filter((r) => r.config === config).map((r) => figure.value(r)));
}

/** The table model: headers, then per section a title row and its figure rows. */
export function resultTable(results: BenchResults): {
  table: Table;
  sectionRows: Set<number>;
  verdicts: TargetVerdict[];
} {
  const configs = configsOf(results);
  const baseline = configs.includes(BASELINE) ? BASELINE : undefined;
  const headers = ["figure", "target", ...configs];
  const rows: string[][] = [];
  const sectionRows = new Set<number>();
  const verdicts: TargetVerdict[] = [];
  for (const section of sections(results)) {
    const figures = section.figures.filter((f) =>
      configs.some((c) => summaryOf(results, f, c) !== undefined),
    );
    if (figures.length === 0) continue;
    sectionRows.add(rows.length);
    rows.push([section.title, "", ...configs.map(() => "")]);
    for (const figure of figures) {
      const base = baseline ? summaryOf(results, figure, baseline) : undefined;
      let targetCell = figure.target?.text ?? "";
      if (figure.target && base) {
        const met = figure.target.met(base.median);
        targetCell += met === undefined ? " (n/a)" : met ? " ✓ met" : " ✗ missed";
        verdicts.push({
          section: section.title,
          figure: figure.label,
          target: figure.target.text,
          value: figure.format(base.median),
          met,
        });
      }
      const cells = configs.map((config) => {
        const s = summaryOf(results, figure, config);
        if (!s) return "—";
        const text = formatSpread(s, figure.format);
        const r = config === baseline ? undefined : ratio(s.median, base?.median);
        return r === undefined ? text : `${text} ${formatRatio(r)}`;
      });
      rows.push([`${figure.detail ? "    " : "  "}${figure.label}`, targetCell, ...cells]);
    }
  }
  return {
    table: { headers, rows, align: ["left", "left", ...configs.map(() => "right" as const)] },
    sectionRows,
    verdicts,
  };
}

const ROLES: [ProcessRole | "bench", string][] = [
  ["controller", "controller"],
  ["apiServer", "kube-apiserver"],
  ["etcd", "etcd"],
  ["cloud", "mock cloud"],
  ["bench", "bench (workload, watches)"],
];

/**
 * CPU seconds by process while converging, per configuration (medians), and the rest of the machine; beside
 * each converge column, when the floor ran, the floor's: the same Kubernetes writes by a bare client with no
 * controller, on the same stack (its controller cell is empty: none ran). The last row puts the API server's
 * CPU per Shape of both side by side: what the controller's requests cost it above the bare writes.
 */
export function cpuTable(results: BenchResults): Table | undefined {
  const configs = configsOf(results).filter((c) => results.runs.some((r) => r.config === c && r.converge));
  if (configs.length === 0) return undefined;
  const withFloor = results.runs.some((r) => r.floor);
  type Phase = "floor" | "converge";
  const phases: Phase[] = withFloor ? ["floor", "converge"] : ["converge"];
  const columns = configs.flatMap((config) => phases.map((phase) => ({ config, phase })));
  const usage = (r: RunRecord, phase: Phase) => (phase === "floor" ? r.floor?.cpu : r.converge?.cpu);
  const shapesOf = (r: RunRecord, phase: Phase) => (phase === "floor" ? r.floor?.shapes : r.converge?.shapes);
  const median = (config: ConfigName, pick: (r: RunRecord) => number | undefined) =>
    summarize(results.runs.filter((r) => r.config === config).map(pick))?.median;
  const cell = (
    { config, phase }: { config: ConfigName; phase: Phase },
    pick: (u: NonNullable<ReturnType<typeof usage>>) => number | undefined,
  ) => {
    const v = median(config, (r) => {
      const u = usage(r, phase);
      return u ? pick(u) : undefined;
    });
    const wall = median(config, (r) => usage(r, phase)?.wallSeconds);
    return v === undefined
      ? "—"
      : `${formatNumber(v)} s${wall ? ` (${formatNumber((v / wall) * 100)}%)` : ""}`;
  };
  const rows = ROLES.map(([role, label]) => [label, ...columns.map((c) => cell(c, (u) => u.seconds[role]))]);
  rows.push(["rest of the machine (others' work)", ...columns.map((c) => cell(c, (u) => u.otherSeconds))]);
  rows.push(["stolen by the hypervisor", ...columns.map((c) => cell(c, (u) => u.stealSeconds))]);
  rows.push(["wall time", ...columns.map((c) => cell(c, (u) => u.wallSeconds).replace(/ \(.*\)$/, ""))]);
  if (withFloor) {
    const apiServerMsPerShape = (config: ConfigName, phase: Phase) =>
      median(config, (r) => {
        const seconds = usage(r, phase)?.seconds.apiServer;
        const shapes = shapesOf(r, phase);
        return seconds === undefined || !shapes ? undefined : (seconds * 1000) / shapes;
      });
    rows.push([
      "per Shape: API server CPU ms (floor vs converge)",
      ...columns.map(({ config, phase }) => {
        const v = apiServerMsPerShape(config, phase);
        if (v === undefined) return "—";
        const floor = phase === "converge" ? apiServerMsPerShape(config, "floor") : undefined;
        const times = ratio(v, floor);
        return `${formatNumber(v)} ms${times === undefined ? "" : ` (${formatRatio(times)} the floor)`}`;
      }),
    ]);
  }
  return {
    headers: [
      withFloor ? "CPU: floor and converge (s, % of one core)" : "CPU while converging (s, % of one core)",
      ...columns.map(({ config, phase }) => (withFloor ? `${config}: ${phase}` : config)),
    ],
    rows,
    align: ["left", ...columns.map(() => "right" as const)],
  };
}

/** A one-line description of the machine and the run. */
export function machineLine(results: BenchResults): string {
  const m = results.machine;
  return `${m.cores} × ${m.cpuModel}, ${formatBytes(m.memoryBytes)} RAM, ${m.os}; Node ${m.node}, Kubernetes ${m.kubernetes}, etcd ${m.etcd}; commit ${m.gitCommit.slice(0, 12)}${m.gitDirty ? " (+ uncommitted changes)" : ""}; load ${m.loadAverage.toFixed(1)} at start`;
}

/** The runs that failed, one line each. */
export function failures(results: BenchResults): string[] {
  return results.runs
    .filter((r) => r.error)
    .map((r) => `${r.config} #${r.repeat}: ${r.error} (logs: ${r.dir})`);
}

/** The whole report for the terminal. */
export function renderReport(results: BenchResults): string {
  const { table, verdicts } = resultTable(results);
  const o = results.options;
  const out: string[] = [
    "",
    `Shapes benchmark: N = ${o.shapes.toLocaleString("en-US")}, ${o.repeat} repeat(s)${o.repeat > 1 ? " (median, min–max)" : ""}, resync ${formatDuration(o.resyncPeriodMs)}${o.smoke ? ", SMOKE (numbers mean nothing)" : ""}`,
    machineLine(results),
    "",
    renderText(table),
  ];
  const history = decisionHistoryLines(results);
  if (history.length > 0) out.push(`${DECISION_HISTORY_HEADING}:`, ...history.map((l) => `  ${l}`), "");
  const cpu = cpuTable(results);
  if (cpu) out.push(renderText(cpu));
  if (verdicts.length > 0) {
    out.push("Targets (default configuration):");
    for (const v of verdicts)
      out.push(
        `  ${v.met === undefined ? "n/a   " : v.met ? "met   " : "MISSED"}  ${v.figure}: ${v.value} (target ${v.target})`,
      );
    out.push("");
  }
  const failed = failures(results);
  if (failed.length > 0) out.push("FAILED runs:", ...failed.map((f) => `  ${f}`), "");
  return `${out.join("\n")}\n`;
}

/** The result table as Markdown, section titles in bold. */
export function renderResultMarkdown(results: BenchResults): string {
  const { table, sectionRows } = resultTable(results);
  const rows = table.rows.map((row, i) =>
    sectionRows.has(i)
      ? [`**${row[0] ?? ""}**`, ...row.slice(1)]
      : [row[0]?.replace(/^ {4}/, "  ↳ ").trim() ?? "", ...row.slice(1)],
  );
  return renderMarkdown({ ...table, rows });
}

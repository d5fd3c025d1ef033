/**
 * docs/benchmarks.md from a run (`npm run bench -- --markdown docs/benchmarks.md`): the command, the
 * machine, the result table, the targets, where the CPU went, the soak with its chart (an SVG beside the
 * document, `<name>-soak.svg`, drawn by chart.ts from the results), and how each figure is measured — all
 * generated, so a re-run on another machine refreshes every number. The one hand-written part, the
 * "Reading" section between its markers, is carried over from the file being replaced.
 */
import { basename, dirname, extname, join } from "node:path";
import { soakChart } from "./chart.ts";
import { CONFIGS } from "./configs.ts";
import {
  cpuTable,
  DECISION_HISTORY_HEADING,
  decisionHistoryLines,
  failures,
  renderResultMarkdown,
  resultTable,
} from "./report.ts";
import type { BenchResults, RunRecord, SoakResult } from "./results.ts";
import { formatBytes, formatDuration, formatNumber, renderMarkdown } from "./table.ts";

/** The markers around the hand-written reading. */
export const READING_START = "<!-- reading:start (hand-written; kept when the file is regenerated) -->";
export const READING_END = "<!-- reading:end -->";

const PLACEHOLDER = `_Not written yet: read the tables above and say where the time goes (controller, API server, etcd,
cloud), what the bottleneck is, and what would move it._`;

/** The hand-written reading of `previous` (the file being replaced), or undefined. */
export function keptReading(previous: string | undefined): string | undefined {
  if (!previous) return undefined;
  const start = previous.indexOf(READING_START);
  const end = previous.indexOf(READING_END);
  if (start < 0 || end < start) return undefined;
  return previous.slice(start + READING_START.length, end).trim();
}

/** Where the soak's chart goes for the document `markdownPath`: beside it, `docs/benchmarks-soak.svg`. */
export function soakChartPath(markdownPath: string): string {
  const ext = extname(markdownPath);
  return join(dirname(markdownPath), `${basename(markdownPath, ext)}-soak.svg`);
}

/** The run the document charts: the first with a soak (the first configuration's first repeat). */
export function chartedSoak(results: BenchResults): (RunRecord & { soak: SoakResult }) | undefined {
  return results.runs.find((r): r is RunRecord & { soak: SoakResult } => (r.soak?.samples.length ?? 0) > 0);
}

/** The soak's chart as SVG text, or undefined when no run soaked. */
export function soakChartSvg(results: BenchResults): string | undefined {
  const run = chartedSoak(results);
  if (!run) return undefined;
  const s = run.soak;
  return soakChart(
    s,
    `Soak: ${s.shapes.toLocaleString("en-US")} Shapes, ${formatDuration(s.durationMs)} of steady load (${run.config} #${run.repeat})`,
    `${formatNumber(s.ratePerSecond)}/s cloud-side edits + ${formatNumber(s.ratePerSecond)}/s spec changes; a sample every ${formatDuration(s.sampleIntervalMs)}; ${results.machine.cores} × ${results.machine.cpuModel}; commit ${results.machine.gitCommit.slice(0, 12)}`,
  );
}

/** The "Soak" section: what ran, the chart (when written, as `chartFile` beside the document), its numbers. */
function soakSection(results: BenchResults, chartFile: string | undefined): string {
  const run = chartedSoak(results);
  if (!run) return "_No soak ran._\n";
  const s = run.soak;
  const ms = (v: number | undefined) => (v === undefined ? "—" : formatDuration(v));
  const signed = (v: number) => `${v > 0 ? "+" : ""}${formatNumber(v)}`;
  const slope =
    s.rssSlopeMbPerHour === undefined
      ? "—"
      : `${signed(s.rssSlopeMbPerHour)} MB/h${s.rssSlopeStdErrMbPerHour === undefined ? "" : ` (±${formatNumber(s.rssSlopeStdErrMbPerHour)} standard error)`}`;
  const table = renderMarkdown({
    headers: [`${run.config} #${run.repeat}`, "over the soak"],
    rows: [
      [
        "RSS: the load's start → after the soak",
        `${formatBytes(s.start.rssBytes)} → ${formatBytes(s.end.rssBytes)}`,
      ],
      [
        "V8 heap used: the load's start → after the soak",
        `${formatBytes(s.start.heapUsedBytes)} → ${formatBytes(s.end.heapUsedBytes)}`,
      ],
      ["RSS slope after the warm-up", slope],
      ["event-loop lag p99, the worst interval", ms(s.eventLoopLagP99MaxMs)],
      [
        "reconcile p99 per interval: median, worst",
        `${ms(s.reconcileP99MedianMs)}, ${ms(s.reconcileP99MaxMs)}`,
      ],
      [
        "cloud-side edits: recolors, deletes (skipped)",
        `${s.cloudEdits.recolors}, ${s.cloudEdits.deletes} (${s.cloudEdits.skipped})`,
      ],
      ["spec changes (failed edits)", `${s.specChanges} (${s.failed})`],
      [
        "all converged after the load",
        s.converged ? `yes, in ${formatDuration(s.convergeMs)}` : `no: ${s.problem ?? "?"}`,
      ],
    ],
    align: ["left", "right"],
  });
  const image = chartFile
    ? `![Soak of ${run.config} #${run.repeat}: RSS and V8 heap used, event-loop lag p99 and reconcile p99 over time](${chartFile})\n\n`
    : "";
  return `For ${formatDuration(s.durationMs)}, on the ${s.shapes.toLocaleString("en-US")} converged Shapes (after the throttle, before the restart), the bench
recolors or deletes ${formatNumber(s.ratePerSecond)} random owned cloud shapes a second and changes the color or size of as many random
Shapes, evenly spaced; every ${formatDuration(s.sampleIntervalMs)} it reads the controller's RSS, V8 heap, event-loop lag p99 and the
p99 of the reconciles that finished in that interval. The first ${formatDuration(s.warmUpMs)} (shaded) are left out of the RSS slope.
It runs on the run's first configuration only. The chart and this table are of ${run.config} #${run.repeat}; the result table
holds the medians over repeats.

${image}${table}`;
}

/**
 * The whole document. `soakChartFile`: the chart's file name beside the document (see soakChartPath), which
 * the Soak section shows; without it the section has the numbers only.
 */
export function renderMarkdownDocument(
  results: BenchResults,
  previous: string | undefined,
  soakChartFile?: string,
): string {
  const m = results.machine;
  const o = results.options;
  const { verdicts } = resultTable(results);
  const cpu = cpuTable(results);
  const others = results.cpu;
  const machine = renderMarkdown({
    headers: ["", ""],
    rows: [
      ["CPU", `${m.cores} × ${m.cpuModel}`],
      ["memory", formatBytes(m.memoryBytes)],
      ["OS", m.os],
      ["Node.js", m.node],
      [
        "Kubernetes (kube-apiserver) / etcd",
        `${m.kubernetes} / ${m.etcd} (envtest, local, \`--unsafe-no-fsync\`)`,
      ],
      ["commit", `\`${m.gitCommit}\`${m.gitDirty ? " with uncommitted changes" : ""}`],
      ["load average at the start", m.loadAverage.toFixed(2)],
      ...(others?.otherSeconds !== undefined && others.capacitySeconds
        ? [
            [
              "CPU used by other processes during the run",
              `${formatNumber((others.otherSeconds / others.capacitySeconds) * 100)}% of the machine (steal ${formatNumber(((others.stealSeconds ?? 0) / others.capacitySeconds) * 100)}%)`,
            ],
          ]
        : []),
      ["started / finished", `${results.startedAt} / ${results.finishedAt}`],
    ],
  });
  const targets = verdicts.map(
    (v) =>
      `- **${v.met === undefined ? "not judged" : v.met ? "met" : "missed"}**: ${v.figure} — ${v.value} (target ${v.target}; ${v.section.split(":")[0]})`,
  );
  const failed = failures(results);
  const history = decisionHistoryLines(results);
  const soaked = chartedSoak(results)?.soak;

  return `# Benchmarks

What the controller costs, measured: time to converge, API calls per Shape on both sides, writes when nothing
changed, drift repair latency, minutes of steady load (the soak), restart, memory — and the same scenarios against ablations of our own
controller, so each design choice shows what it buys. Every number below was produced by the command below;
nothing is edited by hand except the "Reading" section.

## The command

\`\`\`sh
${results.command}
\`\`\`

${o.shapes.toLocaleString("en-US")} Shapes, ${o.repeat} repeat(s) per configuration${o.repeat > 1 ? " (medians; min–max in parentheses)" : ""}, each on a fresh
stack; resync period ${formatDuration(o.resyncPeriodMs)} (the controller's default is 5 m: shortened so the steady-state
window covers ${o.steadyPeriods} periods), ${o.driftEdits} drift edits, ${o.concurrency} create requests in flight. Raw results: \`bench/results/<run>/results.json\`.
${o.smoke ? "\n**This is a smoke run: the numbers only prove that the bench works.**\n" : ""}
## The machine

${machine}
## Results

Columns are configurations: ${results.options.configs.map((c) => `\`${c}\` (${CONFIGS[c].description})`).join("; ")}.
Ablations show their ratio to \`default\` (×2.00 = twice the default's value). Targets are judged on \`default\`.

${renderResultMarkdown(results)}
${history.length > 0 ? `\n${DECISION_HISTORY_HEADING}:\n\n${history.map((l) => `- ${l}`).join("\n")}\n` : ""}${failed.length > 0 ? `\n**Failed runs:**\n\n${failed.map((f) => `- ${f}`).join("\n")}\n` : ""}
## Targets

${targets.join("\n")}

## Where the time goes

CPU seconds each process used while converging (from \`/proc/<pid>/stat\`), and the share of one core over
the converge's wall time; beside it, per configuration, the same during the floor (the same Kubernetes writes
by a bare client before the controller started: no controller CPU) over the floor's wall time. The last row
is the API server's CPU per Shape in each: what the controller's requests cost it above the bare writes.
"Rest of the machine" is everyone else's work on the same cores.

${cpu ? renderMarkdown(cpu) : "_No converge ran._\n"}
## Soak

${soakSection(results, soakChartFile)}
## Reading

${READING_START}
${keptReading(previous) ?? PLACEHOLDER}
${READING_END}

## How each figure is measured

- **Stack.** Per configuration and repeat, a fresh kube-apiserver + etcd (envtest), the CRDs and \`deploy/\`
  RBAC, the mock cloud as its own process on a temp-file SQLite database, and the controller as its own
  process (\`node controller/src/main.ts\`) under the \`shapes-controller\` service account, log level info.
- **Converge.** The bench creates the N Shapes (POST, ${o.concurrency} in flight) and follows them with its own
  watch. The clock runs from the first create to the watch event that shows the last Shape Ready (for its
  generation); then the cloud must hold exactly N owned shapes with the right spec and owner tags, checked
  once the controller is quiet (the clock runs on if it does not yet). Latency: each create's answer → its
  Ready event.
- **Floor.** On the same stack, before the controller starts (so none runs), in a namespace of its own: a bare
  client (node:https, one keep-alive Agent of ${o.concurrency} sockets, the admin's client certificate) makes for
  each of the N Shapes exactly the Kubernetes requests a converged Shape costs in that configuration — the
  Shape's create, then the controller's four writes: finalizer patch, ShapeRef create, Shape status, one Event
  (and the ShapeRef's status where the controller runs with \`--record-cloud-id\`) — with the controller's
  bodies, ${o.concurrency} Shapes in flight (each a chain of its requests), no cloud call. The clock runs
  from the first request to the last answer; every answer must be 2xx. Writes/s: 5 N (6 N) over that time. Before it,
  one untimed Shape's requests pay the API server's one-time cost of its first Shape create (about 2 s on
  2 cores), which neither the floor nor the converge then carries. Then what it made is deleted, before the
  controller starts. **converge / floor** is the converge's time over the floor's,
  per run: what the controller costs above the API server's own price for the same writes, on the same machine
  at the same moment.
- **API cost.** \`apiserver_request_total\` from kube-apiserver's \`/metrics\` and \`cloud_http_requests_total\`
  from the cloud's, before and after the converge (after the controller went quiet), minus the bench's own
  requests (its N creates, its watch). Divided by N.
- **Steady state.** The same counters over ${o.steadyPeriods} resync periods with nothing to do. Cloud reads are
  lists and gets (the change feed's reconnects at each relist are not counted as reads).
- **Drift.** The bench follows the cloud's change feed and edits (recolor, or delete) ${o.driftEdits} random owned
  shapes, one every 50 ms. Latency: the edit's event → the event of the controller's write that restores the
  shape, on that one stream (one clock, one path).
- **Throttle.** The bench follows the cloud's change feed, answers every API call (\`/v1/shapes*\`, not the
  change feed) 429 with \`Retry-After: 1\`, and recolors ${o.driftEdits} Shapes in Kubernetes, so as many keys need a
  cloud PATCH. Calls per second: the cloud's own \`cloud_http_requests_total\` over the storm (the bench makes no
  API call meanwhile), against the configuration's \`--cloud-qps\`. Then the storm is switched off; time: until
  the change-feed event of the last recolor.
- **Restart.** SIGTERM, then a new process; a new Shape is created at the spawn. Timed from the spawn:
  \`/readyz\` 200 (the startup resync reconciled every Shape) and the new Shape's Ready event.
- **Soak.** On the first configuration only, after the throttle and before the restart (the process that
  converged): ${soaked ? formatNumber(soaked.ratePerSecond) : "`--soak-rate`"} cloud-side edits a second (a random owned shape recolored, or deleted one time in three; one
  gone at that moment, being re-created, is skipped) and as many spec changes (a random Shape's color or size,
  a merge patch), evenly spaced, for ${soaked ? formatDuration(soaked.durationMs) : "`--soak-minutes`"}. At each sample: VmRSS, V8 heap used, prom-client's
  \`nodejs_eventloop_lag_p99_seconds\` (its histogram restarts at each scrape, and nothing else scrapes the
  controller meanwhile, so it covers the interval) and the p99 of the interval's reconciles, nearest rank over
  the differences of the \`reconcile_duration_seconds\` bucket counts between two scrapes (the bucket's upper
  bound: 5 ms … 60 s). The RSS slope is the least-squares line through the samples after the warm-up (the first
  10%), in MB per hour; "no growth" is within 1% of their mean RSS per 10 minutes. Then the load stops and the
  bench waits until every Shape is Ready for its generation with its last spec and the cloud holds exactly them;
  "after the soak" is read once it did and the controller settled.
- **Memory.** VmRSS from \`/proc/<pid>/status\`, V8 heap from the controller's \`/metrics\`, read once the
  controller is quiet and its RSS stopped moving, and right after it the size of its decision history from
  its \`GET /why\` (objects, entries, bytes as JSON; "absent" when it answers 404): idle (ready, before the
  converge: no Shape yet), with the N Shapes, after the restart; then every Shape is deleted (until the cloud
  and the ShapeRefs are empty too) and they are read again, and compared with idle (target: within 20%).
- **Tracing.** The \`tracing\` column is the controller's defaults with \`OTEL_EXPORTER_OTLP_ENDPOINT\` set, for the
  controller and the mock cloud, to an OTLP/HTTP receiver in the bench's own process (\`stack/otlp-receiver.ts\`:
  it decodes and counts every span, keeps none); every other column has it empty (off). Spans exported: what
  the receiver got over the whole run, counted after the stack stopped (the exporters' last flush is in).
`;
}

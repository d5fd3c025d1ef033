/**
 * docs/benchmarks.md from one run or several (`npm run bench -- --markdown docs/benchmarks.md`, or
 * `--from A/results.json --from B/results.json --markdown docs/benchmarks.md`): the commands, the machine, the
 * result tables, the targets, where the CPU went, the soak with its chart (an SVG beside the document,
 * `<name>-soak.svg`, drawn by chart.ts from the results), and how each figure is measured — all generated, so
 * a re-run on another machine refreshes every number. The one hand-written part, the "Reading" section between
 * its markers, is carried over from the file being replaced.
 *
 * A "run" here is one results.json (one `npm run bench`): a document of several has a subsection per run,
 * named by its N ("10,000 Shapes"); a document of one has exactly the shape it always had.
 */
import { runLine } from "../scripts/evidence-pages.ts";
import { basename, dirname, extname, join } from "node:path";
import { CONTROLLER_NODE_FLAGS } from "@shapes/controller";
import { soakChart } from "./chart.ts";
import { CONFIGS } from "./configs.ts";
import type { BenchOptions, ScenarioName } from "./options.ts";
import {
  cpuTable,
  DECISION_HISTORY_HEADING,
  decisionHistoryLines,
  failures,
  renderResultMarkdown,
  resultTable,
} from "./report.ts";
import type { BenchResults, RunRecord, SoakResult } from "./results.ts";
import { RSS_SAMPLE_MS } from "./scenarios/restart.ts";
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

/**
 * Each run's name in a document of several, in the order given: its N ("1,000 Shapes"), and its start time
 * too when another run has the same N.
 */
export function runLabels(all: readonly BenchResults[]): string[] {
  return all.map((results) => {
    const shapes = `${results.options.shapes.toLocaleString("en-US")} Shapes`;
    const twins = all.filter((other) => other.options.shapes === results.options.shapes).length;
    return twins > 1 ? `${shapes}, started ${results.startedAt}` : shapes;
  });
}

/** A soak the document charts, with the run it belongs to. */
export interface ChartedSoak {
  /** The run (results.json) it is in. */
  results: BenchResults;
  /** The configuration and repeat that soaked. */
  run: RunRecord & { soak: SoakResult };
}

/**
 * The soak the document charts: of the first run (in the order given) that soaked, the first record with
 * samples (its first configuration's first repeat).
 */
export function chartedSoak(all: readonly BenchResults[]): ChartedSoak | undefined {
  for (const results of all) {
    const run = results.runs.find(
      (r): r is RunRecord & { soak: SoakResult } => (r.soak?.samples.length ?? 0) > 0,
    );
    if (run) return { results, run };
  }
  return undefined;
}

/** The chart of {@link chartedSoak} as SVG text, or undefined when no run soaked. */
export function soakChartSvg(all: readonly BenchResults[]): string | undefined {
  const charted = chartedSoak(all);
  if (!charted) return undefined;
  const { results, run } = charted;
  const s = run.soak;
  return soakChart(
    s,
    `Soak: ${s.shapes.toLocaleString("en-US")} Shapes, ${formatDuration(s.durationMs)} of steady load (${run.config} #${run.repeat})`,
    `${formatNumber(s.ratePerSecond)}/s cloud-side edits + ${formatNumber(s.ratePerSecond)}/s spec changes; a sample every ${formatDuration(s.sampleIntervalMs)}; ${results.machine.cores} × ${results.machine.cpuModel}; commit ${results.machine.gitCommit.slice(0, 12)}`,
  );
}

/** The "Soak" section: what ran, the chart (when written, as `chartFile` beside the document), its numbers. */
function soakSection(all: readonly BenchResults[], chartFile: string | undefined): string {
  const charted = chartedSoak(all);
  if (!charted) return "_No soak ran._\n";
  const { run } = charted;
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
  // With several runs, say which one this is (and that only the first that soaked is shown).
  let of = `${run.config} #${run.repeat}; the result table`;
  if (all.length > 1) {
    const label = runLabels(all)[all.indexOf(charted.results)] ?? "";
    const soakedRuns = all.filter((r) => chartedSoak([r]) !== undefined).length;
    of = `${run.config} #${run.repeat} of the ${label} run${soakedRuns > 1 ? " (the first given of the runs that soaked)" : ""}; its result table`;
  }
  // Where the soak sat among the scenarios of its run (they run in a fixed order: …, throttle, soak, restart).
  const ran = charted.results.options.scenarios;
  const before = (["steady", "drift", "throttle"] as const).filter((n) => ran.includes(n));
  const listed = before.length > 1 ? `${before.slice(0, -1).join(", ")} and ${before.at(-1)}` : before[0];
  const place = [
    "the process that converged them",
    ...(listed ? [`after the ${listed} scenario${before.length > 1 ? "s" : ""}`] : []),
    ...(ran.includes("restart") ? ["before the restart"] : []),
  ].join(", ");
  return `For ${formatDuration(s.durationMs)}, on the ${s.shapes.toLocaleString("en-US")} converged Shapes (${place}), the bench
recolors or deletes ${formatNumber(s.ratePerSecond)} random owned cloud shapes a second and changes the color or size of as many random
Shapes, evenly spaced; every ${formatDuration(s.sampleIntervalMs)} it reads the controller's RSS, V8 heap, event-loop lag p99 and the
p99 of the reconciles that finished in that interval. The first ${formatDuration(s.warmUpMs)} (shaded) are left out of the RSS slope.
It runs on the run's first configuration only. The chart and this table are of ${of}
holds the medians over repeats.

${image}${table}`;
}

/** What a run ran, in a sentence: N, repeats, resync period, drift edits, concurrency. */
function runSummary(o: BenchOptions): string {
  return `${o.shapes.toLocaleString("en-US")} Shapes, ${o.repeat} repeat(s) per configuration${o.repeat > 1 ? " (medians; min–max in parentheses)" : ""}, each on a fresh
stack; resync period ${formatDuration(o.resyncPeriodMs)} (the controller's default is 5 m: shortened so the steady-state
window covers ${o.steadyPeriods} periods), ${o.driftEdits} drift edits, ${o.concurrency} create requests in flight.`;
}

const RAW_RESULTS = "Raw results: `bench/results/<run>/results.json`";

/** "The command": the run's command and what it ran; of several, each run's, then the one that combined them. */
function commandSection(
  all: readonly BenchResults[],
  labels: readonly string[],
  combinedBy?: string,
): string {
  const [only] = all;
  if (all.length === 1 && only) {
    const o = only.options;
    return `\`\`\`sh
${only.command}
\`\`\`

${runSummary(o)} ${RAW_RESULTS}.
${o.smoke ? "\n**This is a smoke run: the numbers only prove that the bench works.**\n" : ""}`;
  }
  const commands = all.map((results, i) => `# ${labels[i]}\n${results.command}`);
  if (combinedBy) commands.push(`# this document, from the runs above\n${combinedBy}`);
  const summaries = all.map(
    (results, i) =>
      `**${labels[i]}:** ${runSummary(results.options)}${results.options.smoke ? "\n**A smoke run: its numbers only prove that the bench works.**" : ""}`,
  );
  return `\`\`\`sh
${commands.join("\n")}
\`\`\`

${summaries.join("\n\n")}

${RAW_RESULTS}, one folder per run.
`;
}

/**
 * The page's run line (`Run at commit <sha> (<date>, <runs>).`), which `npm run evidence:status` reads: one
 * commit when every run was of the same, else each run's commit with its label.
 */
export function benchRunLine(all: readonly BenchResults[], labels: readonly string[]): string {
  const dirty = all.some((r) => r.machine.gitDirty) ? ", with uncommitted changes" : "";
  const commits = new Set(all.map((r) => r.machine.gitCommit));
  const [first] = all;
  if (commits.size === 1 && first) {
    return runLine(first.machine.gitCommit, first.startedAt.slice(0, 10), `${labels.join(" and ")}${dirty}`);
  }
  const each = all.map(
    (r, i) =>
      `commit ${r.machine.gitCommit.slice(0, 7)} (${r.startedAt.slice(0, 10)}, ${labels[i]}${r.machine.gitDirty ? ", with uncommitted changes" : ""})`,
  );
  return `Run at ${each.join(" and ")}.`;
}

/** The machine's rows: label, value (undefined: not measured in that run). */
function machineRows(results: BenchResults): [string, string | undefined][] {
  const m = results.machine;
  const others = results.cpu;
  return [
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
    [
      "CPU used by other processes during the run",
      others?.otherSeconds !== undefined && others.capacitySeconds
        ? `${formatNumber((others.otherSeconds / others.capacitySeconds) * 100)}% of the machine (steal ${formatNumber(((others.stealSeconds ?? 0) / others.capacitySeconds) * 100)}%)`
        : undefined,
    ],
    ["started / finished", `${results.startedAt} / ${results.finishedAt}`],
  ];
}

/** "The machine": a table of label and value; of several runs, a value column per run. */
function machineTable(all: readonly BenchResults[], labels: readonly string[]): string {
  const perRun = all.map(machineRows);
  const rows = (perRun[0] ?? [])
    .map(([label], row) => [label, ...perRun.map((rows) => rows[row]?.[1])])
    .filter((cells) => cells.slice(1).some((cell) => cell !== undefined))
    .map((cells) => cells.map((cell) => cell ?? "—"));
  return renderMarkdown({ headers: ["", ...(all.length > 1 ? labels : [""])], rows });
}

/** A run's results: its configurations, its table, the decision history and the failed runs. */
function resultsBody(results: BenchResults): string {
  const failed = failures(results);
  const history = decisionHistoryLines(results);
  return `Columns are configurations: ${results.options.configs.map((c) => `\`${c}\` (${CONFIGS[c].description})`).join("; ")}.
Ablations show their ratio to \`default\` (×2.00 = twice the default's value). Targets are judged on \`default\`.
The controller runs from its sources (\`node controller/src/main.ts\`), not from the image's build; see "How each
figure is measured".

${renderResultMarkdown(results)}
${history.length > 0 ? `\n${DECISION_HISTORY_HEADING}:\n\n${history.map((l) => `- ${l}`).join("\n")}\n` : ""}${failed.length > 0 ? `\n**Failed runs:**\n\n${failed.map((f) => `- ${f}`).join("\n")}\n` : ""}`;
}

/** "Results": the run's; of several, a subsection per run. */
function resultsSection(all: readonly BenchResults[], labels: readonly string[]): string {
  const [only] = all;
  if (all.length === 1 && only) return resultsBody(only);
  return all.map((results, i) => `### ${labels[i]}\n\n${resultsBody(results).trimEnd()}\n`).join("\n");
}

/** A run's judged targets, one list item each. */
function targetLines(results: BenchResults): string[] {
  return resultTable(results).verdicts.map(
    (v) =>
      `- **${v.met === undefined ? "not judged" : v.met ? "met" : "missed"}**: ${v.figure} — ${v.value} (target ${v.target}; ${v.section.split(":")[0]})`,
  );
}

/** "Targets": the run's; of several, a sub-list per run headed by its name. */
function targetsSection(all: readonly BenchResults[], labels: readonly string[]): string {
  const [only] = all;
  if (all.length === 1 && only) return targetLines(only).join("\n");
  return all
    .map((results, i) => {
      const lines = targetLines(results);
      return lines.length === 0
        ? `- ${labels[i]}: no target judged`
        : `- ${labels[i]}:\n${lines.map((l) => `  ${l}`).join("\n")}`;
    })
    .join("\n");
}

/** "Where the time goes": the run's CPU table; of several, one per run, each headed by its name. */
function cpuSection(all: readonly BenchResults[], labels: readonly string[]): string {
  const tableOf = (results: BenchResults) => {
    const cpu = cpuTable(results);
    return cpu ? renderMarkdown(cpu) : "_No converge ran._\n";
  };
  const [only] = all;
  if (all.length === 1 && only) return tableOf(only);
  return all.map((results, i) => `**${labels[i]}:**\n\n${tableOf(results)}`).join("\n");
}

/**
 * An option of the runs, as "How each figure is measured" states it: the first run's value when every run
 * that reported one of `scenarios` (every run when none did) used the same, else each run's, named.
 */
function optionOf(
  all: readonly BenchResults[],
  labels: readonly string[],
  scenarios: readonly ScenarioName[] | undefined,
  pick: (o: BenchOptions) => number,
): string {
  const indexed = all.map((results, i) => ({ o: results.options, label: labels[i] ?? "" }));
  const reported = indexed.filter(({ o }) => !scenarios || o.scenarios.some((s) => scenarios.includes(s)));
  const runs = reported.length > 0 ? reported : indexed;
  const values = runs.map(({ o }) => pick(o));
  if (values.every((v) => v === values[0])) return String(values[0]);
  return runs.map(({ o, label }) => `${pick(o)} (${label})`).join(" or ");
}

/**
 * The whole document, from one run or several (in the order given: the first run's soak, if it soaked, is the
 * one charted). `previous`: the file being replaced, whose "Reading" is kept. `soakChartFile`: the chart's file
 * name beside the document (see soakChartPath), which the Soak section shows; without it the section has the
 * numbers only. `combinedBy`: of several runs, the command that rendered them into one document (shown after
 * the runs' own commands). One run renders the document it always did.
 */
export function renderMarkdownDocument(
  all: readonly BenchResults[],
  previous: string | undefined,
  soakChartFile?: string,
  combinedBy?: string,
): string {
  if (all.length === 0) throw new Error("cannot render a benchmarks document without results");
  const labels = runLabels(all);
  const soaked = chartedSoak(all)?.run.soak;
  const concurrency = optionOf(all, labels, undefined, (o) => o.concurrency);
  const floorConcurrency = optionOf(all, labels, ["converge"], (o) => o.concurrency);
  const steadyPeriods = optionOf(all, labels, ["steady"], (o) => o.steadyPeriods);
  const driftEdits = optionOf(all, labels, ["drift"], (o) => o.driftEdits);
  const throttleEdits = optionOf(all, labels, ["throttle"], (o) => o.driftEdits);

  return `# Benchmarks

What the controller costs, measured: time to converge, API calls per Shape on both sides, writes when nothing
changed, drift repair latency, minutes of steady load (the soak), restart, memory — and the same scenarios against ablations of our own
controller, so each design choice shows what it buys. Every number below was produced by the ${all.length > 1 ? "commands" : "command"} below;
nothing is edited by hand except the "Reading" section.

## The command

${commandSection(all, labels, combinedBy)}
${benchRunLine(all, labels)}

## The machine

${machineTable(all, labels)}
## Results

${resultsSection(all, labels)}
## Targets

${targetsSection(all, labels)}

## Where the time goes

CPU seconds each process used while converging (from \`/proc/<pid>/stat\`), and the share of one core over
the converge's wall time; beside it, per configuration, the same during the floor (the same Kubernetes writes
by a bare client before the controller started: no controller CPU) over the floor's wall time. The last row
is the API server's CPU per Shape in each: what the controller's requests cost it above the bare writes.
"Rest of the machine" is everyone else's work on the same cores.

${cpuSection(all, labels)}
## Soak

${soakSection(all, soakChartFile)}
## Reading

${READING_START}
${keptReading(previous) ?? PLACEHOLDER}
${READING_END}

## How each figure is measured

- **Stack.** Per configuration and repeat, a fresh kube-apiserver + etcd (envtest), the CRDs and \`deploy/\`
  RBAC, the mock cloud as its own process on a temp-file SQLite database, and the controller as its own
  process from its sources (\`node ${CONTROLLER_NODE_FLAGS.join(" ")} --import stack/record-modules.js
  controller/src/main.ts\`, as \`npm run controller\` and the test harnesses start it) or, in a run with
  \`--build\`, from the image's build (\`controller/dist/main.js\`, the bundle, built first, NODE_OPTIONS
  emptied); node without the first flags for \`default-semi-space\`) under the
  \`shapes-controller\` service account, log level info.
- **Converge.** The bench creates the N Shapes (POST, ${concurrency} in flight) and follows them with its own
  watch. The clock runs from the first create to the watch event that shows the last Shape Ready (for its
  generation); then the cloud must hold exactly N owned shapes with the right spec and owner tags, checked
  once the controller is quiet (the clock runs on if it does not yet). Latency: each create's answer → its
  Ready event.
- **Floor.** On the same stack, before the controller starts (so none runs), in a namespace of its own: a bare
  client (node:https, one keep-alive Agent of ${floorConcurrency} sockets, the admin's client certificate) makes for
  each of the N Shapes exactly the Kubernetes requests a converged Shape costs in that configuration — the
  Shape's create, then the controller's four writes: finalizer patch, ShapeRef create, Shape status, one Event
  — with the controller's bodies, ${floorConcurrency} Shapes in flight (each a chain of its requests), no cloud
  call. The clock runs from the first request to the last answer; every answer must be 2xx. Writes/s: 5 N over
  that time. Before it,
  one untimed Shape's requests pay the API server's one-time cost of its first Shape create (about 2 s on
  2 cores), which neither the floor nor the converge then carries. Then what it made is deleted, before the
  controller starts. **converge / floor** is the converge's time over the floor's,
  per run: what the controller costs above the API server's own price for the same writes, on the same machine
  at the same moment.
- **API cost.** \`apiserver_request_total\` from kube-apiserver's \`/metrics\` and \`cloud_http_requests_total\`
  from the cloud's, before and after the converge (after the controller went quiet), minus the bench's own
  requests (its N creates, its watch). Divided by N.
- **Steady state.** The same counters over ${steadyPeriods} resync periods with nothing to do. Cloud reads are
  lists and gets (the change feed's reconnects at each relist are not counted as reads).
- **Drift.** The bench follows the cloud's change feed and edits (recolor, or delete) ${driftEdits} random owned
  shapes, one every 50 ms. Latency: the edit's event → the event of the controller's write that restores the
  shape, on that one stream (one clock, one path).
- **Throttle.** The bench follows the cloud's change feed, answers every API call (\`/v1/shapes*\`, not the
  change feed) 429 with \`Retry-After: 1\`, and recolors ${throttleEdits} Shapes in Kubernetes, so as many keys need a
  cloud PATCH. Calls per second: the cloud's own \`cloud_http_requests_total\` over the storm (the bench makes no
  API call meanwhile), against the configuration's \`--cloud-qps\`. Then the storm is switched off; time: until
  the change-feed event of the last recolor.
- **Restart.** SIGTERM, then a new process; a new Shape is created at the spawn. Timed from the spawn:
  \`/readyz\` 200 (the startup resync reconciled every Shape) and the new Shape's Ready event. Over the
  initial sync, from just before the spawn to that first 200 — the informers' first lists of the N Shapes and
  their ShapeRefs (watch-lists where the API server serves them), then the startup resync — the CPU
  seconds of kube-apiserver, etcd and the controller (\`/proc/<pid>/stat\`), and the VmRSS of kube-apiserver
  and etcd read every ${RSS_SAMPLE_MS} ms (\`/proc/<pid>/status\`): the first reading (before the spawn) and the highest.
  Not VmHWM: that is the peak of the process's whole life, the converge's. A peak shorter than ${RSS_SAMPLE_MS} ms can be
  missed.
- **Soak.** On the first configuration only, after the throttle and before the restart when they run (the
  process that converged): ${soaked ? formatNumber(soaked.ratePerSecond) : "`--soak-rate`"} cloud-side edits a second (a random owned shape recolored, or deleted one time in three; one
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
- **Modules loaded.** Every configuration's controller runs with a \`node --import\` hook
  (\`stack/record-modules.js\`) that writes down each module URL node resolves; read once the controller is
  ready with no Shape yet (after the idle memory reading): the distinct URLs, node's builtins included, and
  those under \`node_modules/@kubernetes/client-node/\`.
- **Controller CPU per Shape.** The controller's CPU seconds (\`/proc/<pid>/stat\`) from just before the first
  create until every Shape is Ready and the controller went quiet (the converge's window in "Where the time
  goes"), over N; beside the converge time.
- **Tracing.** The \`tracing\` column is the controller's defaults with \`OTEL_EXPORTER_OTLP_ENDPOINT\` set, for the
  controller and the mock cloud, to an OTLP/HTTP receiver in the bench's own process (\`envtest/src/otlp-receiver.ts\`:
  it decodes and counts every span, keeps none); every other column has it empty (off). Spans exported: what
  the receiver got over the whole run, counted after the stack stopped (the exporters' last flush is in).
`;
}

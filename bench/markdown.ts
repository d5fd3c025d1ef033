/**
 * docs/benchmarks.md from a run (`npm run bench -- --markdown docs/benchmarks.md`): the command, the
 * machine, the result table, the targets, where the CPU went, and how each figure is measured — all
 * generated, so a re-run on another machine refreshes every number. The one hand-written part, the
 * "Reading" section between its markers, is carried over from the file being replaced.
 */
import { CONFIGS } from "./configs.ts";
import {
  cpuTable,
  DECISION_HISTORY_HEADING,
  decisionHistoryLines,
  failures,
  renderResultMarkdown,
  resultTable,
} from "./report.ts";
import type { BenchResults } from "./results.ts";
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

/** The whole document. */
export function renderMarkdownDocument(results: BenchResults, previous: string | undefined): string {
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

  return `# Benchmarks

What the controller costs, measured: time to converge, API calls per Shape on both sides, writes when nothing
changed, drift repair latency, restart, memory — and the same scenarios against ablations of our own
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
the converge's wall time. "Rest of the machine" is everyone else's work on the same cores.

${cpu ? renderMarkdown(cpu) : "_No converge ran._\n"}
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
  each of the N Shapes exactly the Kubernetes requests a converged Shape costs — the Shape's create, then the
  controller's five writes: finalizer patch, ShapeRef create, ShapeRef status, Shape status, one Event — with the
  controller's bodies, ${o.concurrency} Shapes in flight (each a chain of its six requests), no cloud call. The clock runs
  from the first request to the last answer; every answer must be 2xx. Writes/s: 6 N over that time. Before it,
  one untimed Shape's six requests pay the API server's one-time cost of its first Shape create (about 2 s on
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
- **Memory.** VmRSS from \`/proc/<pid>/status\`, V8 heap from the controller's \`/metrics\`, read once the
  controller is quiet and its RSS stopped moving, and right after it the size of its decision history from
  its \`GET /why\` (objects, entries, bytes as JSON; "absent" when it answers 404); then every Shape is deleted
  (until the cloud and the ShapeRefs are empty too) and they are read again.
- **Tracing.** The \`tracing\` column is the controller's defaults with \`OTEL_EXPORTER_OTLP_ENDPOINT\` set, for the
  controller and the mock cloud, to an OTLP/HTTP receiver in the bench's own process (\`stack/otlp-receiver.ts\`:
  it decodes and counts every span, keeps none); every other column has it empty (off). Spans exported: what
  the receiver got over the whole run, counted after the stack stopped (the exporters' last flush is in).
`;
}

/**
 * The figures of a chaos run, from its trial results: trials by topology, faults injected by kind, settle
 * time per fault kind (p50/p99, nearest rank), violations by invariant; rendered as a plain-text table for the terminal and as
 * Markdown for docs/reliability.md. Pure, no I/O.
 *
 * The few statistics and table helpers at the end duplicate the benchmark's (bench/stats.ts, bench/table.ts),
 * which were not committed yet when this was written; once they are, these can go.
 */
import { INVARIANTS, type Invariant, type Violation } from "./invariants.ts";
import { FAULT_KINDS, TOPOLOGIES, type FaultKind, type Topology } from "./plan.ts";
import type { TrialResult } from "./trial.ts";

/** The figures of one fault kind over the run. */
export interface KindFigures {
  kind: FaultKind;
  /** Injected as an episode's fault. */
  injected: number;
  /** Injected in the background of another episode (human edits only). */
  background: number;
  /** Episodes of this kind that settled within the settle timeout, and those that did not. */
  settled: number;
  unsettled: number;
  /** Settle times in ms (nearest-rank percentiles); undefined when none settled. */
  p50Ms?: number;
  p99Ms?: number;
  maxMs?: number;
}

/** The figures of one topology over the run. */
export interface TopologyFigures {
  topology: Topology;
  trials: number;
  /** Its trials the harness could not run to the end. */
  trialErrors: number;
  episodes: number;
  faultsInjected: number;
  violations: number;
}

/** The figures of a run. */
export interface RunFigures {
  trials: number;
  /** Trials the harness itself could not run to the end (they prove nothing). */
  trialErrors: number;
  episodes: number;
  faultsInjected: number;
  violations: number;
  violationsByInvariant: Record<Invariant, number>;
  /** Every topology, in the order of TOPOLOGIES, with the trials it had (maybe none). */
  topologies: TopologyFigures[];
  kinds: KindFigures[];
  /** Settle time of the initial Shapes of each trial. */
  initialSettle?: { p50Ms: number; p99Ms: number; maxMs: number };
}

/** Sums up the trials. */
export function summarize(results: readonly TrialResult[]): RunFigures {
  const violations: Violation[] = results.flatMap((r) => r.violations);
  const byInvariant = Object.fromEntries(INVARIANTS.map((i) => [i, 0])) as Record<Invariant, number>;
  for (const v of violations) byInvariant[v.invariant] += 1;
  const kinds = FAULT_KINDS.map((kind): KindFigures => {
    const records = results.flatMap((r) => r.faults).filter((f) => f.kind === kind);
    const settles = results.flatMap((r) => r.settles).filter((s) => s.kind === kind);
    const times = settles.flatMap((s) => (s.settleMs === undefined ? [] : [s.settleMs]));
    const p = percentiles(times);
    return {
      kind,
      injected: records.filter((f) => !f.background).length,
      background: records.filter((f) => f.background).length,
      settled: times.length,
      unsettled: settles.length - times.length,
      ...(p ? { p50Ms: p.p50, p99Ms: p.p99, maxMs: p.max } : {}),
    };
  });
  const topologies = TOPOLOGIES.map((topology): TopologyFigures => {
    const trials = results.filter((r) => r.topology === topology);
    return {
      topology,
      trials: trials.length,
      trialErrors: trials.filter((r) => r.error !== undefined).length,
      episodes: trials.reduce((n, r) => n + r.settles.length, 0),
      faultsInjected: trials.reduce((n, r) => n + r.faults.length, 0),
      violations: trials.reduce((n, r) => n + r.violations.length, 0),
    };
  });
  const initial = percentiles(
    results.flatMap((r) => (r.initialSettleMs === undefined ? [] : [r.initialSettleMs])),
  );
  return {
    trials: results.length,
    trialErrors: results.filter((r) => r.error !== undefined).length,
    episodes: results.reduce((n, r) => n + r.settles.length, 0),
    faultsInjected: results.reduce((n, r) => n + r.faults.length, 0),
    violations: violations.length,
    violationsByInvariant: byInvariant,
    topologies,
    kinds,
    ...(initial ? { initialSettle: { p50Ms: initial.p50, p99Ms: initial.p99, maxMs: initial.max } } : {}),
  };
}

/** The per-topology table: trials, episodes, faults, violations (topologies without a trial left out). */
export function topologiesTable(figures: RunFigures): Table {
  return {
    headers: ["topology", "trials", "episodes", "faults injected", "violations", "harness errors"],
    align: ["left", "right", "right", "right", "right", "right"],
    rows: figures.topologies
      .filter((t) => t.trials > 0)
      .map((t) => [
        t.topology,
        String(t.trials),
        String(t.episodes),
        String(t.faultsInjected),
        String(t.violations),
        String(t.trialErrors),
      ]),
  };
}

/** The per-kind table: injected, settled, settle p50/p99/max. */
export function kindsTable(figures: RunFigures): Table {
  const ms = (v: number | undefined) => (v === undefined ? "—" : formatDuration(v));
  return {
    headers: [
      "fault kind",
      "injected",
      "+ background",
      "settled",
      "not settled",
      "settle p50",
      "settle p99",
      "max",
    ],
    align: ["left", "right", "right", "right", "right", "right", "right", "right"],
    rows: figures.kinds
      .filter((k) => k.injected + k.background > 0)
      .map((k) => [
        k.kind,
        String(k.injected),
        String(k.background),
        String(k.settled),
        String(k.unsettled),
        ms(k.p50Ms),
        ms(k.p99Ms),
        ms(k.maxMs),
      ]),
  };
}

/** The violations table: one row per invariant. */
export function invariantsTable(figures: RunFigures): Table {
  return {
    headers: ["invariant", "violations"],
    align: ["left", "right"],
    rows: INVARIANTS.map((i) => [i, String(figures.violationsByInvariant[i])]),
  };
}

/** The run as people read it in a terminal: the three tables, the totals, and every violation. */
export function renderReport(figures: RunFigures, results: readonly TrialResult[]): string {
  const lines = [
    renderText(topologiesTable(figures)),
    renderText(kindsTable(figures)),
    renderText(invariantsTable(figures)),
    `${figures.trials} trial(s), ${figures.episodes} episodes, ${figures.faultsInjected} faults injected, ` +
      `${figures.violations} invariant violation(s)` +
      (figures.trialErrors > 0 ? `, ${figures.trialErrors} trial(s) the harness could not finish` : ""),
  ];
  for (const r of results) {
    const trial = `trial ${r.trial} (${r.topology}, seed ${r.seed})`;
    for (const v of r.violations) lines.push(`  ${trial}: ${v.invariant} — ${v.subject}: ${v.detail}`);
    if (r.error) lines.push(`  ${trial}: harness error — ${r.error.split("\n")[0]}`);
  }
  return lines.join("\n") + "\n";
}

/** The per-topology, per-kind and per-invariant tables as Markdown (for docs/reliability.md). */
export function renderMarkdownTables(figures: RunFigures): string {
  return [topologiesTable(figures), kindsTable(figures), invariantsTable(figures)]
    .map(renderMarkdown)
    .join("\n");
}

// ---- small helpers (see the module comment) -------------------------------------------------------

/** A table: a header row, body rows of the same width, and each column's alignment. */
export interface Table {
  headers: readonly string[];
  rows: readonly (readonly string[])[];
  align?: readonly ("left" | "right")[];
}

/**
 * p50, p99 and the maximum of a sample by the nearest-rank method (always one of the values: "p99 of 100
 * settle times" is the 99th smallest), or undefined when it is empty.
 */
export function percentiles(
  values: readonly number[],
): { p50: number; p99: number; max: number } | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (q: number) => sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1] as number;
  return { p50: rank(0.5), p99: rank(0.99), max: sorted[sorted.length - 1] as number };
}

/** A duration as people read it: "850 ms", "12.3 s". */
export function formatDuration(ms: number): string {
  return ms < 1_000 ? `${Math.round(ms)} ms` : `${(ms / 1_000).toFixed(1)} s`;
}

/** Plain text, columns padded to their widest cell, a dashed rule under the header. */
export function renderText(table: Table): string {
  const widths = table.headers.map((h, c) =>
    Math.max(h.length, ...table.rows.map((r) => (r[c] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => {
        const fill = " ".repeat((widths[c] ?? 0) - cell.length);
        return table.align?.[c] === "right" ? fill + cell : cell + fill;
      })
      .join("  ")
      .trimEnd();
  return (
    [line(table.headers), widths.map((w) => "-".repeat(w)).join("  "), ...table.rows.map(line)].join("\n") +
    "\n"
  );
}

/** A GitHub-flavoured Markdown table. */
export function renderMarkdown(table: Table): string {
  const row = (cells: readonly string[]) => `| ${cells.map((c) => c.replace(/\|/g, "\\|")).join(" | ")} |`;
  const rule = table.headers.map((_h, c) => (table.align?.[c] === "right" ? "---:" : "---"));
  return [row(table.headers), `| ${rule.join(" | ")} |`, ...table.rows.map(row)].join("\n") + "\n";
}

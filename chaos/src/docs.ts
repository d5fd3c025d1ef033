/**
 * docs/reliability.md's generated part, "the committed run", from a chaos run's results file: the run line
 * (its commit), the command, the totals (trials, Shapes per trial, process kills, faults, the workload,
 * violations) and the three tables of report.ts. Pure, no I/O: `npm run evidence` reads the file and
 * writes the page.
 */
import { KILL_KINDS, type ChaosOptions } from "./options.ts";
import { renderMarkdownTables, type RunFigures } from "./report.ts";
import type { TrialResult } from "./trial.ts";

/** What chaos/run.ts writes to its results file (the parts the page needs). */
export interface ChaosRunFile {
  command: string;
  code?: { commit: string; controllerChanged: boolean };
  options: ChaosOptions;
  startedAt: string;
  finishedAt: string;
  figures: RunFigures;
  trials: TrialResult[];
}

/** The controller processes the run SIGKILLed: its faults of the kinds that kill ({@link KILL_KINDS}). */
export function processKills(figures: RunFigures): number {
  return figures.kinds
    .filter((k) => KILL_KINDS.includes(k.kind))
    .reduce((n, k) => n + k.injected + k.background, 0);
}

/** Thousands with a comma, as the pages write them. */
function n(value: number): string {
  return value.toLocaleString("en-US");
}

/** "1 trial", "8 trials". */
export function plural(count: number, word: string): string {
  return `${n(count)} ${word}${count === 1 ? "" : "s"}`;
}

/** The wall time of a run, for people: "25 minutes", "40 s". */
function wall(ms: number): string {
  return ms >= 90_000 ? `${Math.round(ms / 60_000)} minutes` : `${Math.round(ms / 1_000)} s`;
}

/**
 * The generated part of docs/reliability.md. `runLine`: the page's run line (scripts/evidence-pages.ts
 * `runLine`), which names the commit.
 */
export function renderChaosSection(run: ChaosRunFile, runLine: string): string {
  const f = run.figures;
  const sum = (pick: (t: TrialResult) => number) => run.trials.reduce((s, t) => s + pick(t), 0);
  const workload = {
    creates: sum((t) => t.workload.creates),
    updates: sum((t) => t.workload.updates),
    deletes: sum((t) => t.workload.deletes),
    humanEdits: sum((t) => t.workload.humanEdits),
  };
  const cloudWrites = sum((t) => t.cloudWrites.byControllers);
  const ownerChecked = sum((t) => t.cloudWrites.ownerChecked);
  const processes = sum((t) => t.identities.length);
  const wallMs = Date.parse(run.finishedAt) - Date.parse(run.startedAt);
  const lines = [
    runLine,
    "",
    "```sh",
    run.command,
    "```",
    "",
    `- ${plural(f.trials, "trial")} of ${n(run.options.shapes)} Shapes each (kept alive, roughly; shared out between the clusters of a two-clusters trial), ` +
      `${Number.isFinite(wallMs) ? `${wall(wallMs)} of wall time, ` : ""}each on a fresh stack, the topologies in turn; ` +
      `${n(processes)} controller processes in all.`,
    `- ${n(f.episodes)} episodes, **${n(f.faultsInjected)} faults injected**, among them **${n(processKills(f))} process kills** ` +
      `(${KILL_KINDS.join(", ")}).`,
    `- The workload: ${n(workload.creates)} creates, ${n(workload.updates)} updates, ${n(workload.deletes)} deletes of Shapes, ` +
      `${n(workload.humanEdits)} human edits of owned cloud shapes; ${n(cloudWrites)} cloud writes by the controllers, ` +
      `${n(ownerChecked)} of them checked against the owner tag the shape carried just before.`,
    `- **Invariant violations: ${n(f.violations)}.**` +
      (f.trialErrors > 0
        ? ` ${n(f.trialErrors)} trial(s) the harness could not finish (they prove nothing).`
        : ""),
    "",
  ];
  const found = run.trials.flatMap((t) =>
    t.violations.map(
      (v) =>
        `- trial ${t.trial} (${t.topology}, seed ${t.seed}): \`${v.invariant}\` — ${v.subject}: ${v.detail.split("\n")[0]}`,
    ),
  );
  const errors = run.trials.flatMap((t) =>
    t.error ? [`- trial ${t.trial} (${t.topology}): harness error — ${t.error.split("\n")[0]}`] : [],
  );
  if (found.length + errors.length > 0)
    lines.push("The violations and harness errors:", "", ...found, ...errors, "");
  lines.push(renderMarkdownTables(f));
  return lines.join("\n");
}

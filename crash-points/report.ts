/**
 * The crash explorer's tables: a summary line per subject for the terminal, and docs/crash-points.md, the
 * page that walks every crash point of every lifecycle in order — which write, which moment, what the
 * controller finds when it comes back, what it does, and that it was tried. Pure: reports in, text out.
 */
import type { CrashReport, LifecycleResult, PointResult, TapFault } from "reconcile-kit/crash-points";

/** Where and how a run was made, for the page's header. */
export interface RunMeta {
  command: string;
  commit: string | undefined;
  /** True when the working tree differed from the commit. */
  dirty: boolean;
  date: string;
}

/** One line per subject: points tried, violations, not reached, time. */
export function summaryLine(report: CrashReport): string {
  const lifecycles = report.lifecycles.filter((l) => !l.skipped).length;
  return (
    `${report.subject}: ${count(report.tried, "crash point")} tried over ${count(lifecycles, "lifecycle")}, ` +
    `${count(report.violations, "violation")}` +
    (report.notReached ? `, ${report.notReached} not reached` : "") +
    ` (${Math.round(report.durationMs / 1000)} s)`
  );
}

/** What the controller finds when the fault has happened, by fault. */
export function findsAfter(fault: TapFault, status: number | undefined): string {
  const answered = status === undefined ? "" : ` (HTTP ${status})`;
  switch (fault) {
    case "crash-before":
      return "killed before the write reached the server: nothing committed; it restarts";
    case "crash-after":
      return `the write committed${answered}, killed before hearing it; it restarts`;
    case "fail":
      return "the write failed with a 503, nothing committed; the same process goes on";
    case "answer-lost":
      return `the write committed${answered}, the connection reset before the answer; the same process goes on`;
  }
}

/** "a → b ×2 → c": the writes after the fault, repeats folded. */
export function writesAfter(labels: readonly string[]): string {
  if (labels.length === 0) return "nothing more";
  const runs: { label: string; count: number }[] = [];
  for (const label of labels) {
    const last = runs.at(-1);
    if (last?.label === label) last.count++;
    else runs.push({ label, count: 1 });
  }
  return runs.map((r) => (r.count > 1 ? `${r.label} ×${r.count}` : r.label)).join(" → ");
}

/** `n` and the noun, plural unless one. */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** Text safe in a markdown table cell: no pipe, no line break. */
export function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");
}

function resultCell(point: PointResult): string {
  if (!point.reached) return "not reached";
  if (point.violations.length) {
    return cell(`**${count(point.violations.length, "violation")}**: ${point.violations.join("; ")}`);
  }
  return `ok, ${(point.recoveredMs ?? 0) / 1000} s`;
}

function lifecycleSection(lifecycle: LifecycleResult): string {
  const lines = [`### ${lifecycle.id}: ${lifecycle.title}`, ""];
  if (lifecycle.skipped)
    return [...lines, `Not explored: ${lifecycle.skipped.replace(/\.$/, "")}.`, ""].join("\n");
  lines.push(`Steps: ${lifecycle.steps.map((s, i) => `(${i + 1}) ${s}`).join("; ")}.`, "");
  lines.push(
    `The controller's writes while they run (recorded without a fault): ` +
      (lifecycle.recorded.length
        ? lifecycle.recorded
            .map((w, i) => `${i + 1}. ${w.side === "kube" ? "Kubernetes" : "external"} ${w.label}`)
            .join(", ")
        : "none") +
      ".",
    "",
  );
  if (lifecycle.recordingViolations.length) {
    lines.push(`**Without any fault the lifecycle broke:** ${lifecycle.recordingViolations.join("; ")}`, "");
  }
  if (lifecycle.points.length) {
    lines.push(
      "| # | write | fault | what it finds | what it does then | result |",
      "| --- | --- | --- | --- | --- | --- |",
    );
    for (const p of lifecycle.points) {
      lines.push(
        `| ${p.index} | ${p.side === "kube" ? "Kubernetes" : "external"} ${p.write}` +
          `${p.occurrence > 1 ? ` (${p.occurrence})` : ""} | ${p.fault} | ${p.reached ? findsAfter(p.fault, p.status) : "—"} | ` +
          `${p.reached ? writesAfter(p.after) : "—"} | ${resultCell(p)} |`,
      );
    }
    lines.push("");
  }
  return lines.join("\n");
}

/** docs/crash-points.md's generated part: one section per subject. */
export function renderCrashPoints(reports: readonly CrashReport[], meta: RunMeta): string {
  const total = reports.reduce((n, r) => n + r.tried, 0);
  const violations = reports.reduce((n, r) => n + r.violations, 0);
  const notReached = reports.reduce((n, r) => n + r.notReached, 0);
  const out = [
    `Made by \`${meta.command}\` at ${meta.commit ? `commit ${meta.commit.slice(0, 7)}` : "an unknown commit"}` +
      `${meta.dirty ? " (with uncommitted changes)" : ""} on ${meta.date}.`,
    "",
    `**${count(total, "crash point")} tried, ${count(violations, "violation")}${notReached ? `, ${notReached} not reached` : ""}.**`,
    "",
    ...reports.map((r) => `- ${summaryLine(r)}`),
    "",
  ];
  for (const report of reports) {
    out.push(`## ${report.subject}`, "");
    for (const lifecycle of report.lifecycles) out.push(lifecycleSection(lifecycle));
  }
  return out.join("\n");
}

/** Progress lines for people watching a slow step (a build, a control plane starting). */

/** A line of progress for a person watching (no trailing newline). */
export type ProgressLog = (line: string) => void;

/** Writes each line to stderr as `<prefix>: line`. The default log of start() and the CLI. */
export function stderrLog(prefix = "envtest"): ProgressLog {
  return (line) => process.stderr.write(`${prefix}: ${line}\n`);
}

/** A log that drops everything. */
export const silentLog: ProgressLog = () => {};

/** "4m 56s" / "3.2s": the time since `since` (ms epoch), for progress lines. */
export function elapsed(since: number, now = Date.now()): string {
  const seconds = Math.max(0, (now - since) / 1000);
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  const whole = Math.round(seconds);
  return `${Math.floor(whole / 60)}m ${String(whole % 60).padStart(2, "0")}s`;
}

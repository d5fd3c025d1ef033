/**
 * Tables for people: the same rows rendered as aligned plain text (the terminal) or as a Markdown table
 * (docs/benchmarks.md), and the few number formats the cells use. Pure functions, no I/O.
 */

/** How a column lines up: text to the left, numbers to the right. */
export type Align = "left" | "right";

/** A table: a header row, body rows of the same width, and each column's alignment. */
export interface Table {
  headers: readonly string[];
  rows: readonly (readonly string[])[];
  /** One per column; missing columns align left. */
  align?: readonly Align[];
}

function checkWidths(table: Table): void {
  table.rows.forEach((row, i) => {
    if (row.length !== table.headers.length) {
      throw new Error(
        `cannot render the table: row ${i + 1} has ${row.length} cells for ${table.headers.length} columns`,
      );
    }
  });
}

/** Display width of a cell: code points, so "×" and "–" count once. */
function width(text: string): number {
  return [...text].length;
}

function pad(text: string, size: number, align: Align): string {
  const fill = " ".repeat(Math.max(0, size - width(text)));
  return align === "right" ? fill + text : text + fill;
}

/**
 * Plain text with columns padded to their widest cell, separated by two spaces, and a dashed rule under
 * the header. Trailing spaces are trimmed.
 */
export function renderText(table: Table): string {
  checkWidths(table);
  const widths = table.headers.map((h, c) => Math.max(width(h), ...table.rows.map((r) => width(r[c] ?? ""))));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => pad(cell, widths[c] ?? 0, table.align?.[c] ?? "left"))
      .join("  ")
      .trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(table.headers), rule, ...table.rows.map(line)].join("\n") + "\n";
}

/** A cell for Markdown: pipes escaped, newlines turned into spaces. */
function markdownCell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
}

/** A GitHub-flavoured Markdown table, with `---:` under right-aligned columns. */
export function renderMarkdown(table: Table): string {
  checkWidths(table);
  const row = (cells: readonly string[]) => `| ${cells.map(markdownCell).join(" | ")} |`;
  const rule = table.headers.map((_h, c) => ((table.align?.[c] ?? "left") === "right" ? "---:" : "---"));
  return [row(table.headers), `| ${rule.join(" | ")} |`, ...table.rows.map(row)].join("\n") + "\n";
}

/** A figure with 3 significant digits, but whole numbers as they are and no fraction at 100 or more (1,234, 123, 12.3, 1.23, 7). */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (Number.isInteger(value)) return value.toLocaleString("en-US");
  if (abs >= 100) return Math.round(value).toLocaleString("en-US");
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  if (abs >= 0.01) return value.toFixed(3);
  return value.toPrecision(2);
}

/** A duration in milliseconds as a person reads it: "850 ms", "12.3 s", "2 m 05 s". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (Math.abs(ms) < 1000) return `${formatNumber(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 120) return `${formatNumber(seconds)} s`;
  const whole = Math.round(seconds);
  return `${Math.floor(whole / 60)} m ${String(whole % 60).padStart(2, "0")} s`;
}

/** Bytes in binary megabytes (the unit of RSS targets): "142 MB", "8.50 MB". */
export function formatBytes(bytes: number): string {
  return `${formatNumber(bytes / (1024 * 1024))} MB`;
}

/** A ratio to the default configuration, always with its decimals: "×1.00", "×0.25", "×12.3", "×125". */
export function formatRatio(value: number): string {
  const abs = Math.abs(value);
  return `×${abs >= 100 ? Math.round(value).toLocaleString("en-US") : value.toFixed(abs >= 10 ? 1 : 2)}`;
}

/** A summarized figure: the median, then the min–max spread when repeats disagree ("12.3 s (11.9–12.8)"). */
export function formatSpread(
  summary: { median: number; min: number; max: number; count: number },
  format: (value: number) => string,
): string {
  const median = format(summary.median);
  if (summary.count < 2 || summary.min === summary.max) return median;
  return `${median} (${format(summary.min)}–${format(summary.max)})`;
}

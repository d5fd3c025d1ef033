/**
 * Reading a controller's /metrics: the Prometheus text format parsed into samples, and sums over the
 * samples whose labels match. Enough for "how many Kubernetes writes so far" — not a full parser (no
 * escaped quotes in label values, which reconcile-kit's metrics never carry).
 */

/** One sample: a metric name, its labels and its value. */
export interface Sample {
  /** The metric's name (a histogram's `_bucket`, `_sum` and `_count` are samples of their own). */
  name: string;
  /** Its labels. */
  labels: Readonly<Record<string, string>>;
  /** Its value. */
  value: number;
}

/**
 * A parsed /metrics answer at one moment.
 *
 * # Assumptions
 * - Label values carry no escaped quote (`\"`): reconcile-kit's metrics never do. A line the parser cannot
 *   read is skipped, not an error.
 */
export class MetricsSnapshot {
  /** Every sample, in the order of the text. */
  readonly samples: readonly Sample[];

  /** A snapshot of these samples ({@link MetricsSnapshot.parse} reads them from the text format). */
  constructor(samples: readonly Sample[]) {
    this.samples = samples;
  }

  /** Parses the Prometheus text exposition format. */
  static parse(text: string): MetricsSnapshot {
    const samples: Sample[] = [];
    for (const line of text.split("\n")) {
      if (line === "" || line.startsWith("#")) continue;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
      if (!m?.[1] || m[3] === undefined) continue;
      const labels: Record<string, string> = {};
      for (const pair of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)) {
        if (pair[1] !== undefined) labels[pair[1]] = pair[2] ?? "";
      }
      samples.push({ name: m[1], labels, value: Number(m[3]) });
    }
    return new MetricsSnapshot(samples);
  }

  /**
   * The sum of every sample named `name` whose labels include `labels` (each value a string, or a list
   * of accepted strings). 0 when none matches (a counter nobody incremented yet).
   */
  sum(name: string, labels: Record<string, string | readonly string[]> = {}): number {
    let total = 0;
    for (const s of this.samples) {
      if (s.name !== name) continue;
      const matches = Object.entries(labels).every(([key, want]) => {
        const got = s.labels[key];
        return got !== undefined && (typeof want === "string" ? got === want : want.includes(got));
      });
      if (matches) total += s.value;
    }
    return total;
  }
}

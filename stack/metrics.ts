/**
 * Reading a controller's /metrics: the Prometheus text format parsed into samples, and sums over the
 * samples whose labels match. Enough for "how many Kubernetes writes so far" — not a full parser (no
 * escaped quotes in label values, which the controller never emits).
 */

/** One sample: a metric name, its labels and its value. */
export interface Sample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

/** A parsed /metrics answer at one moment. */
export class MetricsSnapshot {
  readonly samples: readonly Sample[];

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

/** The prefix of every controller metric. */
export const PREFIX = "shapes_controller_";

/** The cloud verbs that change something (as the controller's cloud client labels them). */
export const CLOUD_WRITE_VERBS = ["create", "patch", "update", "delete"] as const;

/** The counters the tests, the tour and the bench read, by their full names. */
export const METRIC = {
  kubeWrites: `${PREFIX}kube_writes_total`,
  externalRequests: `${PREFIX}external_requests_total`,
  driftRepairs: `${PREFIX}drift_repairs_total`,
  leaksRemoved: `${PREFIX}leaks_removed_total`,
  foreignObjectsSeen: `${PREFIX}foreign_objects_seen_total`,
  reconciles: `${PREFIX}reconcile_total`,
  informerRestarts: `${PREFIX}informer_restarts_total`,
  leader: `${PREFIX}leader`,
  ownerInfo: `${PREFIX}owner_info`,
  adoptions: `${PREFIX}adoptions_total`,
  ringMembers: `${PREFIX}ring_members`,
  ringOwnedShare: `${PREFIX}ring_owned_share`,
  ringOwnedObjects: `${PREFIX}ring_owned_objects`,
  ringHandovers: `${PREFIX}ring_handovers_total`,
} as const;

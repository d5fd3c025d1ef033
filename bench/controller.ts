/**
 * The controller under benchmark: the stack's ControllerProcess (a separate `node controller/src/main.ts`
 * under the least-privilege service account, logs in a file; its `nodeFlags` carry the configuration's node
 * flags and `--cpu-prof`/`--heap-prof`), and the few reads the scenarios time precisely: /readyz polled finely, RSS from /proc, heap
 * and counters from /metrics (and, for the soak, the event-loop lag and reconcile duration buckets).
 */
import { readdir, rename, stat } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ControllerProcess, type MetricsSnapshot } from "@shapes/stack";
import { memoryOf, type ProcessMemory } from "./proc.ts";

/** The prefix of the controller's metrics. */
export const METRIC_PREFIX = "shapes_controller_";

/** A controller process with the reads the scenarios time precisely. */
export class BenchController extends ControllerProcess {
  /**
   * Waits until /readyz answers 200, asking every `intervalMs` (finer than the harness's 100 ms, since the
   * restart scenario times this), and resolves with performance.now() of the first 200.
   */
  async readyAt({ timeoutMs, intervalMs = 20 }: { timeoutMs: number; intervalMs?: number }): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (!this.running) throw new Error(`cannot wait for ${this.options.name} to be ready: it exited`);
      if (await this.isReady()) return performance.now();
      if (performance.now() > deadline) {
        throw new Error(
          `timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${this.options.name}'s /readyz`,
        );
      }
      await sleep(intervalMs);
    }
  }

  /**
   * The size of the decision history from GET /why on the metrics port; null when it answers 404 (this
   * controller has none). Anything else that is not `{subjects, entries, bytes}` numbers throws.
   */
  async decisionHistory(): Promise<DecisionHistory | null> {
    const res = await fetch(`${this.url}/why`);
    return decisionHistoryOf(res.status, await res.text(), this.options.name);
  }

  /**
   * Writes a heap snapshot to `file`: sends SIGUSR2 to a controller started with `--heapsnapshot-signal=SIGUSR2
   * --diagnostic-dir=<dir of file>` and waits (up to `timeoutMs`) until node's file appeared there, stopped
   * growing and the process answers again (node writes it on the main thread: nothing else runs meanwhile).
   */
  async heapSnapshot(file: string, timeoutMs = 300_000): Promise<void> {
    const dir = join(file, "..");
    const isSnapshot = (name: string) => name.startsWith("Heap.") && name.endsWith(".heapsnapshot");
    const before = new Set((await readdir(dir)).filter(isSnapshot));
    process.kill(this.pid, "SIGUSR2");
    const deadline = performance.now() + timeoutMs;
    let size = -1;
    for (;;) {
      await sleep(500);
      const written = (await readdir(dir)).find((name) => isSnapshot(name) && !before.has(name));
      if (written) {
        const now = (await stat(join(dir, written))).size;
        if (now > 0 && now === size && (await this.isReady())) return await rename(join(dir, written), file);
        size = now;
      }
      if (performance.now() > deadline) {
        throw new Error(
          `timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${this.options.name}'s heap snapshot`,
        );
      }
    }
  }

  /**
   * RSS now and at its peak (from /proc), and V8's heap (from /metrics: `metrics` when the caller just
   * scraped them, so one scrape serves both — the soak's samples read the event-loop lag from the same one).
   */
  async memory(metrics?: MetricsSnapshot): Promise<ControllerMemory> {
    const m = metrics ?? (await this.metrics());
    return {
      ...memoryOf(this.pid),
      heapUsedBytes: m.sum(`${METRIC_PREFIX}nodejs_heap_size_used_bytes`),
      heapTotalBytes: m.sum(`${METRIC_PREFIX}nodejs_heap_size_total_bytes`),
    };
  }
}

/** The controller's memory at one moment, in bytes: /proc's view (see ProcessMemory) and V8's. */
export interface ControllerMemory extends ProcessMemory {
  /** V8 heap in use, from prom-client's default metrics. */
  heapUsedBytes: number;
  /** V8 heap reserved. */
  heapTotalBytes: number;
  /**
   * The size of its decision history (GET /why), read with the RSS once settled; null: /why answered 404
   * (a controller without one). Absent in readings that did not ask.
   */
  decisionHistory?: DecisionHistory | null;
}

/** The size of the controller's in-memory decision history, as its GET /why says. */
export interface DecisionHistory {
  /** Objects with a history. */
  subjects: number;
  /** Decisions kept, all objects together. */
  entries: number;
  /** Their size as JSON. */
  bytes: number;
}

/**
 * Reads the answer of `who`'s GET /why: its size, or null for a 404 (no decision history there). Throws
 * `cannot read <who>'s /why: ...` for any other status, or a body without the three numbers.
 */
export function decisionHistoryOf(status: number, text: string, who: string): DecisionHistory | null {
  const cannot = `cannot read ${who}'s /why`;
  if (status === 404) return null;
  if (status !== 200) throw new Error(`${cannot}: HTTP ${status}: ${text.slice(0, 200)}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${cannot}: not JSON: ${text.slice(0, 200)}`);
  }
  const { subjects, entries, bytes } = (body ?? {}) as Partial<Record<keyof DecisionHistory, unknown>>;
  if (typeof subjects !== "number" || typeof entries !== "number" || typeof bytes !== "number") {
    throw new Error(`${cannot}: expected numbers subjects, entries and bytes, got ${text.slice(0, 200)}`);
  }
  return { subjects, entries, bytes };
}

/** The counters of the controller's /metrics the scenarios compare before and after. */
export interface ControllerCounters {
  /** Kubernetes writes by `verb resource`. */
  kubeWrites: Record<string, number>;
  /** Cloud requests by verb (list, get, create, patch, update, delete, watch). */
  cloudRequests: Record<string, number>;
  /** Finished Shape reconciles. */
  shapeReconciles: number;
  /** Seconds spent in Shape reconciles, all added up (the duration histogram's sum). */
  shapeReconcileSeconds: number;
  /** Seconds Shape keys waited for a worker, all added up, and how many waits that was. */
  shapeQueueWaitSeconds: number;
  shapeQueueWaits: number;
  driftRepairs: number;
}

/** Reads the counters of one /metrics snapshot. */
export function countersOf(m: MetricsSnapshot): ControllerCounters {
  const kubeWrites: Record<string, number> = {};
  const cloudRequests: Record<string, number> = {};
  for (const s of m.samples) {
    if (s.name === `${METRIC_PREFIX}kube_writes_total`) {
      const key = `${s.labels.verb ?? "?"} ${s.labels.resource ?? "?"}`;
      kubeWrites[key] = (kubeWrites[key] ?? 0) + s.value;
    } else if (s.name === `${METRIC_PREFIX}external_requests_total`) {
      const key = s.labels.verb ?? "?";
      cloudRequests[key] = (cloudRequests[key] ?? 0) + s.value;
    }
  }
  return {
    kubeWrites,
    cloudRequests,
    shapeReconciles: m.sum(`${METRIC_PREFIX}reconcile_total`, { controller: "shape" }),
    shapeReconcileSeconds: m.sum(`${METRIC_PREFIX}reconcile_duration_seconds_sum`, { controller: "shape" }),
    shapeQueueWaitSeconds: m.sum(`${METRIC_PREFIX}queue_wait_seconds_sum`, { controller: "shape" }),
    shapeQueueWaits: m.sum(`${METRIC_PREFIX}queue_wait_seconds_count`, { controller: "shape" }),
    driftRepairs: m.sum(`${METRIC_PREFIX}drift_repairs_total`),
  };
}

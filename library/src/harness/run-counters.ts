/**
 * A controller's counters summed over all its runs: each run's /metrics starts at zero, so what a run
 * counted is kept when it ends.
 */
import type { ControllerProcess } from "./process.ts";

/** Where a controller's /metrics counts what {@link RunCounters} sums. */
export interface RunMetrics {
  /** The counter of Kubernetes writes (e.g. `dns_controller_kube_writes_total`). */
  kubeWrites: string;
  /** The counter of finished reconciles (e.g. `dns_controller_reconcile_total`). */
  reconciles: string;
  /** The `controller` label of the resource reconciler in {@link RunMetrics.reconciles} (e.g. "record"). */
  reconciler: string;
}

/**
 * A controller's Kubernetes writes and resource reconciles, summed over all its runs.
 *
 * # Guarantees
 * - `total()` never goes down across runs, as long as `closeRun()` was called before each stop or kill.
 *
 * # Assumptions
 * - The caller calls `closeRun()` before every stop or kill of the controller (a run's counts are read
 *   from its /metrics, which die with it). A run whose /metrics did not answer then loses its counts.
 */
export class RunCounters {
  readonly #controller: () => ControllerProcess | undefined;
  readonly #metrics: RunMetrics;
  readonly #earlier = { kubeWrites: 0, reconciles: 0 };

  /** Counts for the controller `controller()` returns (undefined: none yet), at the metrics `metrics` names. */
  constructor(controller: () => ControllerProcess | undefined, metrics: RunMetrics) {
    this.#controller = controller;
    this.#metrics = metrics;
  }

  /** The counters of every run so far, the current one included. */
  async total(): Promise<{ kubeWrites: number; reconciles: number }> {
    const now = await this.#current();
    return {
      kubeWrites: this.#earlier.kubeWrites + now.kubeWrites,
      reconciles: this.#earlier.reconciles + now.reconciles,
    };
  }

  /** Before a run ends: its counters so far become the earlier runs'. */
  async closeRun(): Promise<void> {
    try {
      const last = await this.#current();
      this.#earlier.kubeWrites += last.kubeWrites;
      this.#earlier.reconciles += last.reconciles;
    } catch {
      // Its /metrics did not answer: the run's counts are lost, which only the no-churn window (one run)
      // could notice, and it never ends a run.
    }
  }

  /** The counters of the running controller's current run (zero when none runs). */
  async #current(): Promise<{ kubeWrites: number; reconciles: number }> {
    const controller = this.#controller();
    if (!controller?.running) return { kubeWrites: 0, reconciles: 0 };
    const m = await controller.metrics();
    return {
      kubeWrites: m.sum(this.#metrics.kubeWrites),
      reconciles: m.sum(this.#metrics.reconciles, { controller: this.#metrics.reconciler }),
    };
  }
}

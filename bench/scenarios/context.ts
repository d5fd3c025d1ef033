/**
 * What every scenario gets (one configuration, one repeat, one fresh stack), and the measuring moves they
 * share: a snapshot of every counter and CPU clock, the difference of two snapshots, and "wait until the
 * controller is quiet" so a count includes the last write a step caused.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { ShapeSpec } from "@shapes/controller";
import { countersOf, METRIC_PREFIX, type BenchController, type ControllerCounters } from "../controller.ts";
import { cpuBetween, cpuSnapshot, type CpuSnapshot, type CpuUsage } from "../cpu.ts";
import type { BenchOptions } from "../options.ts";
import type { Progress } from "../progress.ts";
import {
  cloudRequests,
  diffCounts,
  SHAPES_RESOURCES,
  resourceOf,
  subtractCounts,
  type RequestCounts,
} from "../requests.ts";
import type { ShapeWatch } from "../shape-watch.ts";
import type { BenchStack } from "../stack.ts";
import type { Workload } from "../workload.ts";

/** One configuration's run on its own stack. */
export interface RunContext {
  /** "default #1": names progress lines. */
  label: string;
  options: BenchOptions;
  stack: BenchStack;
  controller: BenchController;
  watch: ShapeWatch;
  workload: Workload;
  progress: Progress;
  /** The N Shapes of the workload, and their specs. */
  names: readonly string[];
  specOf: (name: string) => ShapeSpec;
  /** CPUs of the machine. */
  cores: number;
}

/** Every counter a scenario compares, at one moment. */
export interface Snapshot {
  kube: RequestCounts;
  cloud: RequestCounts;
  controller: ControllerCounters;
  /** The bench's own Kubernetes requests so far (its Shape watch). */
  ownKube: RequestCounts;
  cpu: CpuSnapshot;
}

/** What happened between two snapshots. */
export interface Delta {
  /** Kubernetes requests for the Shapes' resources, the bench's own watch taken out. */
  kube: RequestCounts;
  /** Kubernetes requests for anything else (the API server's own business). */
  kubeBackground: RequestCounts;
  /** API requests the cloud answered (the bench makes none while a scenario measures). */
  cloud: RequestCounts;
  /** The controller's counters: kube writes, cloud requests by verb, reconciles, drift repairs. */
  controller: ControllerCounters;
  cpu: CpuUsage;
}

/** Takes every counter now. */
export async function snapshot(ctx: RunContext): Promise<Snapshot> {
  const [kube, cloud, metrics] = await Promise.all([
    ctx.stack.apiServerMetrics.requests(),
    cloudRequests(ctx.stack.cloud.url),
    ctx.controller.metrics(),
  ]);
  return {
    kube,
    cloud,
    controller: countersOf(metrics),
    ownKube: { ...ctx.watch.ownRequests },
    cpu: cpuSnapshot(ctx.stack.pids()),
  };
}

/**
 * The difference between two snapshots. `workload` holds the bench's own requests of the step (e.g.
 * `POST shapes` × N), taken out of `kube` along with its watch. A controller restarted in between counts from
 * zero (its counters start again).
 */
export function delta(ctx: RunContext, a: Snapshot, b: Snapshot, workload: RequestCounts = {}): Delta {
  const all = diffCounts(a.kube, b.kube);
  const ours: RequestCounts = {};
  const background: RequestCounts = {};
  for (const [key, n] of Object.entries(all))
    (SHAPES_RESOURCES.has(resourceOf(key)) ? ours : background)[key] = n;
  const own = diffCounts(a.ownKube, b.ownKube);
  for (const [key, n] of Object.entries(workload)) own[key] = (own[key] ?? 0) + n;
  const restarted = a.cpu.processes.controller?.pid !== b.cpu.processes.controller?.pid;
  const base = restarted ? emptyCounters() : a.controller;
  return {
    kube: subtractCounts(ours, own),
    kubeBackground: background,
    cloud: diffCounts(a.cloud, b.cloud),
    controller: {
      kubeWrites: diffCounts(base.kubeWrites, b.controller.kubeWrites),
      cloudRequests: diffCounts(base.cloudRequests, b.controller.cloudRequests),
      shapeReconciles: b.controller.shapeReconciles - base.shapeReconciles,
      shapeReconcileSeconds: b.controller.shapeReconcileSeconds - base.shapeReconcileSeconds,
      shapeQueueWaitSeconds: b.controller.shapeQueueWaitSeconds - base.shapeQueueWaitSeconds,
      shapeQueueWaits: b.controller.shapeQueueWaits - base.shapeQueueWaits,
      driftRepairs: b.controller.driftRepairs - base.driftRepairs,
    },
    cpu: cpuBetween(a.cpu, b.cpu, ctx.cores),
  };
}

function emptyCounters(): ControllerCounters {
  return {
    kubeWrites: {},
    cloudRequests: {},
    shapeReconciles: 0,
    shapeReconcileSeconds: 0,
    shapeQueueWaitSeconds: 0,
    shapeQueueWaits: 0,
    driftRepairs: 0,
  };
}

/**
 * Waits until the controller is quiet: no key waiting, and no reconcile, Kubernetes write or cloud request
 * for `quietMs` in a row. A step's counts are taken after this, so the last status write or Event of the
 * step is in them. Gives up silently after `timeoutMs` (a busy periodic resync is not an error).
 */
export async function waitQuiet(
  controller: BenchController,
  { quietMs = 1_000, timeoutMs = 30_000 }: { quietMs?: number; timeoutMs?: number } = {},
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = "";
  let since = performance.now();
  while (performance.now() < deadline) {
    const m = await controller.metrics();
    const depth = m.sum(`${METRIC_PREFIX}queue_depth`);
    const signature = [
      m.sum(`${METRIC_PREFIX}reconcile_total`),
      m.sum(`${METRIC_PREFIX}kube_writes_total`),
      m.sum(`${METRIC_PREFIX}external_requests_total`),
    ].join("/");
    const now = performance.now();
    if (depth > 0 || signature !== last) {
      last = signature;
      since = now;
    } else if (now - since >= quietMs) {
      return;
    }
    await sleep(200);
  }
}

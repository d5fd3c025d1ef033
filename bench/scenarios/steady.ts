/**
 * Scenario 3: steady state. N Shapes converged, nothing changes, for several resync periods. Every resync
 * reconciles each Shape again and the cloud is relisted; none of that may WRITE anything (target 0 on both
 * sides), and the cloud reads should be one listing per period: N / page size pages.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { SteadyResult } from "../results.ts";
import { CLOUD_WRITE_METHODS, WRITE_VERBS, total, verbOf } from "../requests.ts";
import { delta, snapshot, type RunContext } from "./context.ts";

/** Runs the steady-state window. */
export async function steady(ctx: RunContext): Promise<SteadyResult> {
  const periodMs = ctx.options.resyncPeriodMs;
  const windowMs = periodMs * ctx.options.steadyPeriods;
  const before = await snapshot(ctx);
  const start = performance.now();
  const bar = ctx.progress.task(`${ctx.label}: steady state`, Math.round(windowMs / 1000), "s");
  while (performance.now() - start < windowMs) {
    await sleep(Math.min(1_000, windowMs - (performance.now() - start)));
    bar.update(Math.floor((performance.now() - start) / 1000));
  }
  const after = await snapshot(ctx);
  const elapsedMs = performance.now() - start;
  const d = delta(ctx, before, after);
  const periods = elapsedMs / periodMs;
  const cloudReads = total(d.cloud, (key) => key.startsWith("GET ") && !key.endsWith("/v1/watch"));
  const result: SteadyResult = {
    windowMs: elapsedMs,
    resyncPeriodMs: periodMs,
    kube: d.kube,
    cloud: d.cloud,
    kubeWrites: total(d.kube, (key) => WRITE_VERBS.has(verbOf(key))),
    cloudWrites: total(d.cloud, (key) => CLOUD_WRITE_METHODS.has(verbOf(key))),
    cloudReadsPerPeriod: cloudReads / periods,
    reconcilesPerPeriod: d.controller.shapeReconciles / periods,
    cpu: d.cpu,
  };
  bar.end(`${result.kubeWrites} Kubernetes writes, ${result.cloudWrites} cloud writes`);
  return result;
}

/**
 * Scenario 5: restart with N Shapes present. The controller is stopped gracefully (SIGTERM) and started
 * again; at the very moment it is spawned, a new Shape is created. Measured from the spawn: when /readyz
 * answers 200 (the startup resync has reconciled every Shape: everything verified), and when the new Shape
 * is Ready (it waits behind the resync's N keys, or not). The initial sync (spawn → /readyz) is also what
 * kube-apiserver and etcd pay for a cold start's first lists with N present: their CPU seconds over it, and
 * their RSS before it and at its highest (read every {@link RSS_SAMPLE_MS} ms).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { cpuBetween, cpuSnapshot } from "../cpu.ts";
import { PeakRssSampler } from "../proc.ts";
import type { RestartResult } from "../results.ts";
import { convergeTimeoutMs } from "./converge.ts";
import { delta, snapshot, waitQuiet, type RunContext } from "./context.ts";

/** The Shape created at the restart. */
export const PROBE_NAME = "restart-probe";

/** How often the API server's and etcd's RSS is read during the initial sync. */
export const RSS_SAMPLE_MS = 100;

/** Runs the restart scenario. */
export async function restart(ctx: RunContext): Promise<RestartResult> {
  const timeoutMs = convergeTimeoutMs(ctx.names.length);
  await waitQuiet(ctx.controller);
  const before = await snapshot(ctx);
  ctx.progress.log(`${ctx.label}: restarting the controller with ${ctx.names.length} Shapes present`);

  const stopping = performance.now();
  await ctx.controller.stop(30_000);
  const stopMs = performance.now() - stopping;

  // No controller runs now: the window opens on the API server and etcd alone.
  const { apiServer, etcd } = ctx.stack.pids();
  const rssSampler = new PeakRssSampler({ apiServer, etcd }, { intervalMs: RSS_SAMPLE_MS }).start();
  const syncStart = cpuSnapshot(ctx.stack.pids());
  const spawn = performance.now();
  const creating = ctx.workload.create(PROBE_NAME, { type: "circle", color: "green" });
  creating.catch(() => {}); // awaited below
  let readyAt: number;
  let rss: ReturnType<typeof rssSampler.stop>;
  try {
    await ctx.controller.start({ waitReady: false, timeoutMs });
    readyAt = await ctx.controller.readyAt({ timeoutMs });
  } finally {
    // The window closes at the first 200, or with a start that failed: its timer must not outlive the run.
    rss = rssSampler.stop();
  }
  const initialSync = {
    cpu: cpuBetween(syncStart, cpuSnapshot(ctx.stack.pids()), ctx.cores),
    rss,
    sampleIntervalMs: RSS_SAMPLE_MS,
  };
  await creating;
  const probeReadyAt = await ctx.watch.until(
    `the Shape ${PROBE_NAME} created at the restart to be Ready`,
    () => ctx.watch.readyAt(PROBE_NAME),
    {
      timeoutMs,
    },
  );
  await waitQuiet(ctx.controller);
  // The cloud counts a request when it ends: the old controller's watch ended at its stop, the new one's
  // is still open. A moment lets the last answers be counted.
  await sleep(100);
  const after = await snapshot(ctx);
  const d = delta(ctx, before, after, { "POST shapes": 1 });
  const result: RestartResult = {
    stopMs,
    readyMs: readyAt - spawn,
    newShapeReadyMs: probeReadyAt - spawn,
    kube: d.kube,
    cloud: d.cloud,
    cpu: d.cpu,
    initialSync,
  };
  ctx.progress.log(
    `${ctx.label}: restarted: ready after ${(result.readyMs / 1000).toFixed(1)}s (kube-apiserver ${initialSync.cpu.seconds.apiServer ?? "?"} CPU s), the new Shape Ready after ${(result.newShapeReadyMs / 1000).toFixed(1)}s`,
  );
  return result;
}

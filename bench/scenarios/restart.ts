/**
 * Scenario 5: restart with N Shapes present. The controller is stopped gracefully (SIGTERM) and started
 * again; at the very moment it is spawned, a new Shape is created. Measured from the spawn: when /readyz
 * answers 200 (the startup resync has reconciled every Shape: everything verified), and when the new Shape
 * is Ready (it waits behind the resync's N keys, or not).
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { RestartResult } from "../results.ts";
import { convergeTimeoutMs } from "./converge.ts";
import { delta, snapshot, waitQuiet, type RunContext } from "./context.ts";

/** The Shape created at the restart. */
export const PROBE_NAME = "restart-probe";

/** Runs the restart scenario. */
export async function restart(ctx: RunContext): Promise<RestartResult> {
  const timeoutMs = convergeTimeoutMs(ctx.names.length);
  await waitQuiet(ctx.controller);
  const before = await snapshot(ctx);
  ctx.progress.log(`${ctx.label}: restarting the controller with ${ctx.names.length} Shapes present`);

  const stopping = performance.now();
  await ctx.controller.stop(30_000);
  const stopMs = performance.now() - stopping;

  const spawn = performance.now();
  const creating = ctx.workload.create(PROBE_NAME, { type: "circle", color: "green" });
  creating.catch(() => {}); // awaited below
  await ctx.controller.start({ waitReady: false, timeoutMs });
  const readyAt = await ctx.controller.readyAt({ timeoutMs });
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
  };
  ctx.progress.log(
    `${ctx.label}: restarted: ready after ${(result.readyMs / 1000).toFixed(1)}s, the new Shape Ready after ${(result.newShapeReadyMs / 1000).toFixed(1)}s`,
  );
  return result;
}

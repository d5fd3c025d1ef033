/**
 * Scenario 6: memory. The controller's RSS (/proc), V8 heap (/metrics) and decision history (/why) once idle
 * with no Shape yet (right after it became ready, before the converge), once idle with N Shapes, and after
 * every Shape was deleted (its cloud shape and ShapeRef too): does it come back down to where it started?
 * "Idle" means the controller is quiet and its RSS stopped moving (V8 frees memory lazily; a reading taken
 * mid-collection says little). The runner takes the readings (runner.ts); this file has the moves.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { TAG_OWNER } from "@shapes/controller";
import type { BenchController, ControllerMemory } from "../controller.ts";
import { convergeTimeoutMs } from "./converge.ts";
import { waitQuiet, type RunContext } from "./context.ts";
import { cloudByNameReads, type ByNameReads } from "../requests.ts";

/**
 * The controller's memory once it is quiet and its RSS moved less than 1% over three readings a second apart,
 * giving up waiting for that after `maxSeconds` (the smoke run's 3 s only proves the reading works), with the
 * size of its decision history (GET /why) read right after the last RSS.
 */
export async function settledMemory(controller: BenchController, maxSeconds = 10): Promise<ControllerMemory> {
  await waitQuiet(controller);
  let previous = await controller.memory();
  let steady = 0;
  for (let i = 0; i < maxSeconds && steady < 2; i++) {
    await sleep(1_000);
    const current = await controller.memory();
    steady = Math.abs(current.rssBytes - previous.rssBytes) / previous.rssBytes < 0.01 ? steady + 1 : 0;
    previous = current;
  }
  return { ...previous, decisionHistory: await controller.decisionHistory() };
}

/**
 * Deletes every Shape of the namespace and waits until the Shapes, their ShapeRefs and our cloud shapes are
 * all gone. Resolves with the time that took, and the cloud's reads by name meanwhile (from its /metrics: the
 * bench itself reads by id or lists, so every one is the controller's).
 */
export async function deleteEverything(ctx: RunContext): Promise<{ ms: number; byNameReads: ByNameReads }> {
  const names = ctx.watch.list().map((s) => s.metadata.name);
  const total = names.length;
  const timeoutMs = convergeTimeoutMs(total);
  const bar = ctx.progress.task(`${ctx.label}: delete all`, total, "gone");
  const readsBefore = await cloudByNameReads(ctx.stack.cloud.url);
  const start = performance.now();
  const deleting = ctx.workload.deleteAll(names);
  deleting.catch(() => {}); // awaited below
  await ctx.watch.until(
    `all ${total} Shapes to be gone`,
    () => (ctx.watch.counts().present === 0 ? true : undefined),
    {
      timeoutMs,
      onTick: () => bar.update(total - ctx.watch.counts().present),
      describe: () => `${ctx.watch.counts().present} Shapes left`,
    },
  );
  await deleting;
  bar.update(total);
  // The finalizer goes last, after the cloud shape and the ShapeRef: these are gone already, unless broken.
  for (;;) {
    const cloud = (await ctx.stack.cloud.api.list()).filter((c) => c.tags[TAG_OWNER] === "k8s").length;
    const refs = (await ctx.stack.kube.listShapeRefs()).length;
    if (cloud === 0 && refs === 0) break;
    if (performance.now() - start > timeoutMs) {
      throw new Error(`cannot finish deleting: ${cloud} owned cloud shapes and ${refs} ShapeRefs remain`);
    }
    await sleep(250);
  }
  const ms = performance.now() - start;
  const readsAfter = await cloudByNameReads(ctx.stack.cloud.url);
  const byNameReads = {
    total: readsAfter.total - readsBefore.total,
    notFound: readsAfter.notFound - readsBefore.notFound,
  };
  bar.end(
    `all gone in ${(ms / 1000).toFixed(1)}s; ${byNameReads.total} cloud GET by name (${byNameReads.notFound} answered 404)`,
  );
  return { ms, byNameReads };
}

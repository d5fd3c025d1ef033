/**
 * Scenarios 1 and 2: converge from cold, and what it cost.
 *
 * The N Shapes are created at once (`concurrency` requests in flight) while the controller runs. The clock
 * starts at the first create and stops when the last Shape is seen Ready; then the cloud must hold exactly
 * N shapes, each with its Shape's spec and our owner tags (checked once the controller is quiet; if it does
 * not hold them yet, the clock runs until it does). Each Shape's latency runs from its create's answer to
 * the watch event that showed it Ready.
 *
 * The cost is every request kube-apiserver and the cloud counted meanwhile, minus the bench's own (its N
 * creates and its watch).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { cloudNameOf, type Shape, TAG_NAME, TAG_OWNER, TAG_UID } from "@shapes/controller";
import type { CloudShape } from "@shapes/stack";
import type { ConvergeResult, CostResult } from "../results.ts";
import { percentiles } from "../stats.ts";
import { delta, snapshot, waitQuiet, type RunContext } from "./context.ts";

/** How long a converge may take before the run gives up: generous, since ablations are slow by design. */
export function convergeTimeoutMs(shapes: number): number {
  return 120_000 + shapes * 200;
}

/** Runs scenario 1 and measures scenario 2 on the way. */
export async function converge(ctx: RunContext): Promise<{ converge: ConvergeResult; cost: CostResult }> {
  const n = ctx.names.length;
  const before = await snapshot(ctx);
  const bar = ctx.progress.task(`${ctx.label}: converge`, n, "Ready");
  const start = performance.now();
  let createMs = 0;
  const creating = ctx.workload.createAll(ctx.names, ctx.specOf).then((createdAt) => {
    createMs = performance.now() - start;
    return createdAt;
  });
  creating.catch(() => {}); // awaited below; a failure must not go unhandled while we wait for Ready
  await ctx.watch.until(
    `all ${n} Shapes to be Ready`,
    () => (ctx.watch.counts().ready >= n ? true : undefined),
    {
      timeoutMs: convergeTimeoutMs(n),
      onTick: () => bar.update(ctx.watch.counts().ready),
      describe: () => `${ctx.watch.counts().ready} Ready of ${ctx.watch.counts().present} present`,
    },
  );
  const createdAt = await creating;
  const lastReady = Math.max(...ctx.names.map((name) => ctx.watch.readyAt(name) ?? Infinity));
  bar.update(n);

  // The cost counts every write the step caused, the last status write and Event included.
  await waitQuiet(ctx.controller);
  const after = await snapshot(ctx);
  const d = delta(ctx, before, after, { "POST shapes": n });

  // The cloud must hold exactly our N shapes. It does by now unless something is wrong: then the clock runs on.
  const verifiedAt = await untilCloudHolds(() => cloudProblem(ctx), lastReady, start + convergeTimeoutMs(n));
  const durationMs = verifiedAt - start;
  bar.end(`converged in ${(durationMs / 1000).toFixed(1)}s`);

  const latencies = ctx.names.map(
    (name) => (ctx.watch.readyAt(name) as number) - (createdAt.get(name) as number),
  );
  const refs = await ctx.stack.kube.listShapeRefs();
  const workload = new Set(ctx.names);
  return {
    converge: {
      shapes: n,
      durationMs,
      createMs,
      shapesPerSecond: n / (durationMs / 1000),
      latencyMs: percentiles(latencies.map((ms) => Math.max(0, ms))) as NonNullable<
        ReturnType<typeof percentiles>
      >,
      cloudVerified: true,
      // One ShapeRef per Shape, written before its create (the controller writes no status to it).
      shapeRefsCreated: refs.filter((r) => workload.has(r.spec?.shape?.name)).length,
      cpu: d.cpu,
      reconciles: {
        count: d.controller.shapeReconciles,
        meanMs: (d.controller.shapeReconcileSeconds * 1000) / Math.max(1, d.controller.shapeReconciles),
        meanQueueWaitMs:
          (d.controller.shapeQueueWaitSeconds * 1000) / Math.max(1, d.controller.shapeQueueWaits),
      },
    },
    cost: {
      shapes: n,
      kube: d.kube,
      kubeBackground: d.kubeBackground,
      cloud: d.cloud,
      controllerKubeWrites: d.controller.kubeWrites,
    },
  };
}

/**
 * Waits until `problem()` finds nothing wrong (the cloud holds exactly the Shapes), asking every 250 ms.
 * Resolves with `since` when the first answer is clean, else with performance.now() of the clean one. Throws
 * "cannot verify the converge: <problem>" once performance.now() passes `deadline`.
 */
export async function untilCloudHolds(
  problem: () => Promise<string | undefined>,
  since: number,
  deadline: number,
): Promise<number> {
  let verifiedAt = since;
  let found = await problem();
  while (found !== undefined) {
    if (performance.now() > deadline) throw new Error(`cannot verify the converge: ${found}`);
    await sleep(250);
    found = await problem();
    verifiedAt = performance.now();
  }
  return verifiedAt;
}

/** What is wrong with the cloud, seen from the Shapes, or undefined when it holds exactly them. */
export async function cloudProblem(ctx: RunContext): Promise<string | undefined> {
  return describeMismatch(ctx.watch.list(), await ctx.stack.cloud.api.list(), ctx.stack.ownerId);
}

/**
 * Compares the Shapes with the cloud: exactly one owned cloud shape per Shape (none more), each with the
 * Shape's type, color and size and our three owner tags. Returns the first problems, or undefined.
 */
export function describeMismatch(
  shapes: readonly Shape[],
  cloud: readonly CloudShape[],
  ownerId: string,
): string | undefined {
  const owned = cloud.filter((c) => c.tags[TAG_OWNER] === ownerId);
  const byName = new Map(owned.map((c) => [c.name, c]));
  const problems: string[] = [];
  if (owned.length !== shapes.length)
    problems.push(`the cloud holds ${owned.length} owned shapes for ${shapes.length} Shapes`);
  for (const shape of shapes) {
    const { namespace, name, uid } = shape.metadata;
    const c = byName.get(cloudNameOf(namespace, name));
    if (!c) problems.push(`no cloud shape for ${namespace}/${name}`);
    else if (c.type !== shape.spec.type || c.color !== shape.spec.color || c.size !== shape.spec.size)
      problems.push(
        `${c.name} is ${c.type}/${c.color}/${c.size ?? "-"}, not ${shape.spec.type}/${shape.spec.color}/${shape.spec.size ?? "-"}`,
      );
    else if (c.tags[TAG_UID] !== uid || c.tags[TAG_NAME] !== `${namespace}/${name}`)
      problems.push(`${c.name} lacks our owner tags`);
    if (problems.length >= 3) break;
  }
  return problems.length === 0 ? undefined : problems.join("; ");
}

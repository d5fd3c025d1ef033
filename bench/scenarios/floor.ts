/**
 * The floor, measured in the same run as the converge (bench/floor.ts says what it writes and how).
 *
 * Where it runs: FIRST on the fresh stack, before the controller is started — so the controller is stopped
 * (it sees none of the floor's objects) without a stop and a restart that would change what the later
 * scenarios measure (the memory after converging, the steady state, the restart) — in a namespace of its
 * own, and is cleaned up before the controller starts: every floor Shape (finalizer removed), ShapeRef and
 * Event is deleted, so the controller's startup sync finds nothing of it and the converge starts, like the
 * floor did, from zero Shapes and zero ShapeRefs. The converge's counters and CPU clocks start after it.
 *
 * What this order costs:
 * - The API server's one-time cost of its first Shape create (about 2 s here, once per process) is paid by
 *   an untimed warm-up Shape before the floor, so neither the floor nor the converge carries it. Earlier
 *   runs' converge did carry it: at 1,000 Shapes their converge times are about that much longer.
 * - etcd holds the floor's deleted N + 1 Shapes, ShapeRefs and Events as history until its next compaction
 *   (5 minutes): the store grows by N objects of each kind, as it would in any order; the live state the
 *   converge meets is as it was.
 * Running it after the converge instead would need the controller stopped between scenarios (a restart the
 * later ones would see), or, at the end of the run, a floor that meets whatever the scenarios left (N
 * Shapes, or none after the memory scenario) on a warm API server while the converge paid the cold one.
 */
import type { BenchOptions } from "../options.ts";
import type { Progress } from "../progress.ts";
import { cpuBetween, cpuSnapshot } from "../cpu.ts";
import {
  BareKubeClient,
  cleanUpFloor,
  convergeOverFloor,
  FLOOR_REQUESTS_PER_SHAPE,
  writeFloor,
} from "../floor.ts";
import {
  diffCounts,
  resourceOf,
  SHAPES_RESOURCES,
  verbOf,
  WRITE_VERBS,
  type RequestCounts,
} from "../requests.ts";
import type { ConvergeResult, FloorResult } from "../results.ts";
import type { BenchStack } from "../stack.ts";
import type { ShapeSpec } from "@shapes/controller";

/** What the floor needs of the run: the stack (no controller running yet) and the converge's workload. */
export interface FloorContext {
  label: string;
  options: BenchOptions;
  stack: BenchStack;
  progress: Progress;
  names: readonly string[];
  specOf: (name: string) => ShapeSpec;
  cores: number;
}

/** The server's count of each floor request per Shape, by `VERB resource`. */
export const FLOOR_KUBE_REQUESTS: readonly string[] = [
  "POST shapes",
  "PATCH shapes",
  "POST shaperefs",
  "POST events",
  "PATCH shapes/status",
];

/** The Shape of the warm-up, in the floor's namespace (removed with the floor's). */
export const WARM_UP_NAME = "floor-warm-up";

/**
 * One Shape's requests before the clock starts, through a client of its own: a fresh API server's first
 * Shape create takes about 2 s on 2 cores (measured: 2.0 s, then 4 ms for the second), a cost it pays once
 * per process, whoever asks first. Without this the floor would pay it, and the converge after it would not.
 * Returns how long it took.
 */
async function warmUp(ctx: FloorContext, namespace: string): Promise<number> {
  const client = BareKubeClient.of(ctx.stack.kubeConfig, 1);
  try {
    const first = ctx.names[0];
    const spec = first === undefined ? { type: "circle", color: "red" } : ctx.specOf(first);
    const { durationMs } = await writeFloor({
      client,
      namespace,
      names: [WARM_UP_NAME],
      specOf: () => spec,
      ownerId: ctx.stack.ownerId,
      concurrency: 1,
    });
    return durationMs;
  } finally {
    client.close();
  }
}

/** Measures the floor; the controller must not be running. */
export async function floor(ctx: FloorContext): Promise<FloorResult> {
  const n = ctx.names.length;
  const concurrency = ctx.options.concurrency;
  const namespace = await ctx.stack.kube.createNamespace("bench-floor");
  const warmUpMs = await warmUp(ctx, namespace);
  ctx.progress.log(
    `${ctx.label}: floor: the API server's first Shape (its requests, untimed) took ${(warmUpMs / 1000).toFixed(1)}s`,
  );
  const client = BareKubeClient.of(ctx.stack.kubeConfig, concurrency);
  try {
    const bar = ctx.progress.task(`${ctx.label}: floor (bare writes, no controller)`, n, "Shapes");
    const kubeBefore = await ctx.stack.apiServerMetrics.requests();
    const cpuBefore = cpuSnapshot(ctx.stack.pids());
    let written = 0;
    const timing = await writeFloor({
      client,
      namespace,
      names: ctx.names,
      specOf: ctx.specOf,
      ownerId: ctx.stack.ownerId,
      concurrency,
      onShape: () => bar.update(++written),
    });
    const cpu = cpuBetween(cpuBefore, cpuSnapshot(ctx.stack.pids()), ctx.cores);
    const kube = floorRequestsOf(diffCounts(kubeBefore, await ctx.stack.apiServerMetrics.requests()));
    const writesPerSecond = timing.requests / (timing.durationMs / 1000);
    bar.end(
      `${n} Shapes in ${(timing.durationMs / 1000).toFixed(1)}s (${writesPerSecond.toFixed(0)} writes/s)`,
    );
    const unexpected = unexpectedCounts(kube, n);
    if (unexpected) ctx.progress.log(`${ctx.label}: floor: the API server counted ${unexpected}`);

    const cleaning = performance.now();
    await cleanUpFloor(client, namespace, [WARM_UP_NAME, ...ctx.names], concurrency);
    const cleanupMs = performance.now() - cleaning;
    ctx.progress.log(`${ctx.label}: floor cleaned up in ${(cleanupMs / 1000).toFixed(1)}s`);
    return {
      shapes: n,
      requestsPerShape: FLOOR_REQUESTS_PER_SHAPE,
      concurrency,
      durationMs: timing.durationMs,
      writesPerSecond,
      kube,
      cpu,
      warmUpMs,
      cleanupMs,
    };
  } finally {
    client.close();
  }
}

/** The floor's record with its ratio to the converge of the same run. */
export function withConvergeRatio(result: FloorResult, converge: ConvergeResult): FloorResult {
  const convergeRatio = convergeOverFloor(converge.durationMs, result.durationMs);
  return convergeRatio === undefined ? result : { ...result, convergeRatio };
}

/**
 * The writes to the Shapes' resources (shapes, shaperefs, events) in a diff of the server's counts: the
 * floor's, since nothing else writes them meanwhile (the bench's watch only reads).
 */
export function floorRequestsOf(counts: RequestCounts): RequestCounts {
  return Object.fromEntries(
    Object.entries(counts).filter(
      ([key]) => WRITE_VERBS.has(verbOf(key)) && SHAPES_RESOURCES.has(resourceOf(key)),
    ),
  );
}

/**
 * What the server counted beyond (or short of) the floor's N of each request, as one phrase ("POST events
 * 999 (N = 1000)"), or undefined when it counted exactly them.
 */
export function unexpectedCounts(kube: RequestCounts, n: number): string | undefined {
  const off: string[] = [];
  for (const key of new Set([...FLOOR_KUBE_REQUESTS, ...Object.keys(kube)])) {
    const want = FLOOR_KUBE_REQUESTS.includes(key) ? n : 0;
    if ((kube[key] ?? 0) !== want) off.push(`${key} ${kube[key] ?? 0}`);
  }
  return off.length === 0 ? undefined : `${off.join(", ")} (N = ${n})`;
}

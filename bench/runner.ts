/**
 * One configuration, one repeat: a fresh stack, the floor (before the controller starts), the controller
 * under that configuration (its idle memory and the modules it loaded read once ready), and the scenarios in their order (each later
 * one needs what the earlier left: N converged Shapes). The soak runs on the first configuration only (see
 * scenarios/soak.ts). A scenario that fails
 * ends the run with its error recorded; what was measured before it still counts, and the next run starts
 * on a fresh stack anyway.
 */
import { join } from "node:path";
import { CONTROLLER_NODE_FLAGS } from "@shapes/controller";
import { type BinaryPaths, type OtlpReceiver, startOtlpReceiver } from "@shapes/envtest";
import {
  CONTROLLER_BUILD_MAIN,
  readRecordedModules,
  RECORD_MODULES_FILE,
  RECORD_MODULES_HOOK,
} from "@shapes/stack";
import { CONFIGS, type ConfigName } from "./configs.ts";
import type { BenchOptions, ScenarioName } from "./options.ts";
import { countModules } from "./modules.ts";
import type { Progress } from "./progress.ts";
import type { MemoryResult, RunRecord } from "./results.ts";
import { converge } from "./scenarios/converge.ts";
import type { RunContext } from "./scenarios/context.ts";
import { drift } from "./scenarios/drift.ts";
import { floor, withConvergeRatio } from "./scenarios/floor.ts";
import { deleteEverything, settledMemory } from "./scenarios/memory.ts";
import { restart } from "./scenarios/restart.ts";
import { soak } from "./scenarios/soak.ts";
import { steady } from "./scenarios/steady.ts";
import { throttle } from "./scenarios/throttle.ts";
import { ShapeWatch } from "./shape-watch.ts";
import { startBenchStack, type BenchStack } from "./stack.ts";
import { Workload, shapeName, shapeSpec } from "./workload.ts";

/** `--heap-prof`'s hook (heap-sampler.ts), by path: importing it here would start it in the bench's own process. */
const HEAP_SAMPLER_HOOK = join(import.meta.dirname, "heap-sampler.ts");

/** What every run shares. */
export interface RunnerSettings {
  options: BenchOptions;
  binaries: BinaryPaths;
  /** The run's folder: each configuration and repeat gets a sub-folder with its logs. */
  runDir: string;
  progress: Progress;
  cores: number;
}

/** Runs one configuration once, on a fresh stack, and returns what it measured. */
export async function runOnce(
  config: ConfigName,
  repeat: number,
  settings: RunnerSettings,
): Promise<RunRecord> {
  const { options, progress } = settings;
  const label = options.repeat > 1 ? `${config} #${repeat}` : config;
  const dir = join(settings.runDir, `${config}-${repeat}`);
  const record: RunRecord = { config, repeat, dir };
  const wants = (s: ScenarioName) => options.scenarios.includes(s);
  const started = performance.now();
  progress.log(
    `${label}: starting a fresh stack (control plane, cloud, controller: ${CONFIGS[config].description})`,
  );

  let stack: BenchStack | undefined;
  let watch: ShapeWatch | undefined;
  let receiver: OtlpReceiver | undefined;
  try {
    // Tracing: a receiver in this process (it keeps no span, only counts). Off, or to clear what the bench's
    // own environment says: the endpoints empty, OpenTelemetry's "unset".
    if (CONFIGS[config].tracing) receiver = await startOtlpReceiver({ maxSpans: 0 });
    stack = await startBenchStack(dir, settings.binaries, {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "", ...receiver?.env },
    });
    const namespace = await stack.kube.createNamespace("bench");
    watch = new ShapeWatch(stack.kubeConfig, namespace);
    await watch.start();
    const names = Array.from({ length: options.shapes }, (_v, i) => shapeName(i));
    const specs = new Map(names.map((name, i) => [name, shapeSpec(i)]));
    const specOf = (name: string) => {
      const spec = specs.get(name);
      if (!spec) throw new Error(`cannot find the spec of ${name}: not part of the workload`);
      return spec;
    };

    // The floor beside the converge: the same writes by a bare client, before the controller starts (so it
    // is stopped without a restart the later scenarios would see), cleaned up before it does. Why this
    // order, and what it leaves: scenarios/floor.ts.
    if (wants("converge")) {
      record.floor = await floor({
        label,
        options,
        stack,
        progress,
        names,
        specOf,
        cores: settings.cores,
      });
    }
    // Every configuration's controller runs with the module-recording hook (stack/record-modules.js): one
    // file append per module resolved, at load time, so each column pays the same for it.
    const modulesFile = join(dir, `${config}.modules`);
    const controller = stack.controller({
      name: config,
      flags: CONFIGS[config].flags,
      resyncPeriodMs: options.resyncPeriodMs,
      nodeFlags: [
        ...(CONFIGS[config].nodeFlags ?? CONTROLLER_NODE_FLAGS),
        "--import",
        RECORD_MODULES_HOOK,
        ...(options.cpuProf ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : []),
        ...(options.heapProf
          ? ["--import", HEAP_SAMPLER_HOOK, "--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${dir}`]
          : []),
        ...options.controllerNodeFlags,
      ],
      // --build: the image's script, with NODE_OPTIONS emptied so an npm script's source condition cannot
      // turn its library back into the sources.
      ...(options.build ? { script: CONTROLLER_BUILD_MAIN } : {}),
      env: {
        ...(options.build ? { NODE_OPTIONS: "" } : {}),
        [RECORD_MODULES_FILE]: modulesFile,
        ...(options.heapProf ? { HEAP_PROFILE_FILE: join(dir, `${config}.heapprofile`) } : {}),
      },
    });
    await controller.start({ timeoutMs: 120_000 });
    const memory: Partial<MemoryResult> = {};
    const settle = () => settledMemory(controller, options.smoke ? 3 : 10);
    // Idle: ready, no Shape yet. What "after deleting every Shape" is compared with.
    if (wants("memory")) memory.idle = await settle();
    // --heap-prof: what the idle process retains (after the reading: a snapshot collects garbage first).
    if (options.heapProf) await controller.heapSnapshot(join(dir, `${config}-idle.heapsnapshot`));
    // The modules loaded by then (the restart scenario's process appends to the same file later).
    record.modules = countModules(await readRecordedModules(modulesFile));

    const ctx: RunContext = {
      label,
      options,
      stack,
      controller,
      watch,
      workload: new Workload(stack.kubeConfig, namespace, options.concurrency),
      progress,
      names,
      specOf,
      cores: settings.cores,
    };

    // Every scenario needs N converged Shapes: the converge always runs, and is reported when asked for.
    const converged = await converge(ctx);
    if (wants("converge")) {
      record.converge = converged.converge;
      if (record.floor) record.floor = withConvergeRatio(record.floor, converged.converge);
    }
    if (wants("cost")) record.cost = converged.cost;
    if (wants("memory")) memory.afterConverge = await settle();
    if (options.heapProf) await controller.heapSnapshot(join(dir, `${config}-converged.heapsnapshot`));
    if (wants("steady")) record.steady = await steady(ctx);
    if (wants("drift")) record.drift = await drift(ctx);
    if (wants("throttle")) record.throttle = await throttle(ctx, CONFIGS[config].flags);
    if (wants("soak") && config === options.configs[0]) record.soak = await soak(ctx);
    if (wants("restart")) {
      record.restart = await restart(ctx);
      if (wants("memory")) memory.afterRestart = await settle();
    }
    if (wants("memory")) {
      const deleted = await deleteEverything(ctx);
      memory.deleteMs = deleted.ms;
      memory.deleteByNameReads = deleted.byNameReads;
      memory.afterDelete = await settle();
      record.memory = memory as MemoryResult;
    }
    const problems = await controller.problems();
    if (problems.length > 0) {
      progress.log(
        `${label}: the controller logged ${problems.length} warnings or errors, first: ${problems[0]}`,
      );
    }
  } catch (error) {
    record.error = error instanceof Error ? error.message : String(error);
    progress.log(`${label}: FAILED: ${record.error}`);
  } finally {
    watch?.stop();
    await stack?.stop();
    if (receiver) {
      // After the stop: the processes' last exports, on shutdown, are in.
      record.tracing = {
        spans: receiver.spansReceived,
        byService: receiver.spansByService,
        requests: receiver.requests,
        rejected: receiver.requestsRejected,
      };
      const byService = Object.entries(record.tracing.byService).map(([service, n]) => `${service} ${n}`);
      progress.log(
        `${label}: tracing: ${receiver.spansReceived} spans exported in ${receiver.requests} requests (${byService.join(", ") || "none"})` +
          (receiver.lastRejection
            ? `; ${receiver.requestsRejected} refused, last: ${receiver.lastRejection}`
            : ""),
      );
      await receiver.close();
    }
  }
  progress.log(`${label}: done in ${((performance.now() - started) / 1000).toFixed(0)}s (logs in ${dir})`);
  return record;
}

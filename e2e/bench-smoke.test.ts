/**
 * The benchmark never rots, and the smoke stays a smoke: two `node bench/run.ts --smoke` runs (5 Shapes, a
 * fresh real stack per configuration), one after the other.
 *
 * 1. Every scenario, in `default` and in ONE ablation, `tracing` (see {@link ABLATION}): its results JSON
 *    must hold a number for each figure (the soak, 15 s of it, on `default` only), its Markdown the soak's
 *    chart beside it.
 * 2. Every other configuration of bench/configs.ts, opt-in ones included (the list is CONFIG_NAMES, so
 *    one added or removed later is covered by itself): parsed by the bench's command line, its controller
 *    started under its flags and node flags and ready, and the smallest scenario, `cost`, reported: the
 *    converge every run makes (5 Shapes Ready, the cloud verified to hold exactly them, or the run fails),
 *    without the floor, steady state, drift, throttle, soak, restart and memory that only the ablation needs;
 *    and the modules each controller loaded once idle: none of `@kubernetes/client-node`'s (every
 *    configuration runs the lean client).
 *
 * Nothing here asserts a timing or a target: a smoke run's numbers mean nothing, only that they exist.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { REPO_ROOT } from "@shapes/stack";
import { BASELINE, CONFIG_NAMES, CONFIGS, type ConfigName } from "../bench/configs.ts";
import { controllerCpuPerShape } from "../bench/report.ts";
import type { BenchResults } from "../bench/results.ts";

const run = promisify(execFile);

/**
 * The ablation run through every scenario beside `default`: `tracing`, the configuration that exercises the
 * most code the others do not. In the bench: the in-process OTLP receiver the runner starts, the environment
 * it hands the controller and the cloud, the run record's `tracing` and the report's "Tracing" section. In the
 * controller and the mock cloud: the OpenTelemetry SDK, its exporter and every traced port, under each
 * scenario's load (drift repairs, a 429 storm, a restart, deleting everything). Every other configuration is
 * one controller flag or node flag that turns a path off or resizes it: the run below starts the controller
 * under it and converges, which is what a smoke can say about it; what it costs is the bench's to measure.
 */
const ABLATION: ConfigName = "tracing";
/** Every scenario, in these two: a third through every scenario would make the smoke some 2 minutes longer. */
const FULL_RUN: readonly ConfigName[] = [BASELINE, ABLATION];
/** Every other configuration: parsed, started, ready, converged. */
const STARTED_ONLY = CONFIG_NAMES.filter((c) => !FULL_RUN.includes(c));

/** What one smoke run left: its stdout, results JSON, and the folder its files went to. */
interface SmokeRun {
  dir: string;
  stdout: string;
  results: BenchResults;
}

/**
 * Runs `node bench/run.ts --smoke --json <dir>/results.json <args(dir)>` with `dir` a fresh temp folder, and
 * reads its results; a failed run throws with its whole output. `timeoutMs`: a deadline for a hung run, not
 * a measure.
 */
async function smokeRun(args: (dir: string) => readonly string[], timeoutMs: number): Promise<SmokeRun> {
  const dir = await mkdtemp(join(tmpdir(), "shapes-bench-smoke-"));
  const jsonFile = join(dir, "results.json");
  const out = await run(
    process.execPath,
    [join(REPO_ROOT, "bench", "run.ts"), "--smoke", "--json", jsonFile, ...args(dir)],
    { cwd: REPO_ROOT, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
  ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(
      `the smoke run failed: ${error.message}\n--- stderr ---\n${error.stderr ?? ""}\n--- stdout ---\n${error.stdout ?? ""}`,
    );
  });
  return { dir, stdout: out.stdout, results: JSON.parse(await readFile(jsonFile, "utf8")) as BenchResults };
}

/**
 * Deadlines, generous on 2 cores shared with others: about a minute per configuration through every scenario
 * (the soak's 15 s included), well under half that to start one and converge 5 Shapes; plus two minutes.
 */
const FULL_TIMEOUT_MS = (FULL_RUN.length * 90 + 120) * 1000;
const STARTED_TIMEOUT_MS = (STARTED_ONLY.length * 45 + 120) * 1000;

describe(`npm run bench -- --smoke --config ${FULL_RUN.join(",")}: every scenario`, () => {
  let smoke: SmokeRun;
  let markdown: string;
  let chart: string;

  beforeAll(async () => {
    smoke = await smokeRun(
      (dir) => ["--config", FULL_RUN.join(","), "--markdown", join(dir, "benchmarks.md")],
      FULL_TIMEOUT_MS,
    );
    markdown = await readFile(join(smoke.dir, "benchmarks.md"), "utf8");
    chart = await readFile(join(smoke.dir, "benchmarks-soak.svg"), "utf8");
  }, FULL_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    if (smoke) await rm(smoke.dir, { recursive: true, force: true });
  });

  test("ran each configuration once, without an error, and said where it ran", () => {
    const { results } = smoke;
    expect(results.options.configs).toEqual(FULL_RUN);
    expect(results.runs.map((r) => [r.config, r.repeat, r.error])).toEqual(
      FULL_RUN.map((config) => [config, 1, undefined]),
    );
    expect(results.machine.cores).toBeGreaterThan(0);
    expect(results.machine.kubernetes).toMatch(/^v1\.\d+\.\d+/);
    expect(results.machine.gitCommit).toMatch(/^[0-9a-f]{40}$/);
  });

  test("every run has every scenario, with numbers", () => {
    const { results } = smoke;
    const n = results.options.shapes;
    const number = expect.any(Number);
    for (const r of results.runs) {
      expect(r.floor, r.config).toMatchObject({ shapes: n, durationMs: number, convergeRatio: number });
      expect(r.converge, r.config).toMatchObject({
        shapes: n,
        durationMs: number,
        shapesPerSecond: number,
        latencyMs: { p50: number, p99: number, count: n },
        cloudVerified: true,
        shapeRefsCreated: n,
      });
      expect(r.converge?.cpu.seconds.controller, r.config).toEqual(number);
      // The controller's CPU per converged Shape, and the modules it loaded once idle.
      expect(controllerCpuPerShape(r), r.config).toBeGreaterThan(0);
      expect(r.modules, r.config).toMatchObject({ total: number, clientNode: number });
      expect(r.modules?.total, r.config).toBeGreaterThan(r.modules?.clientNode ?? 0);
      expect(r.modules?.clientNode, r.config).toBe(0);
      // Each created Shape cost the controller Kubernetes writes and exactly its cloud create.
      expect(r.cost?.kube["POST shaperefs"], r.config).toBe(n);
      expect(r.cost?.cloud["POST /v1/shapes"], r.config).toBeGreaterThanOrEqual(n);
      expect(r.steady, r.config).toMatchObject({
        kubeWrites: number,
        cloudWrites: number,
        cloudReadsPerPeriod: number,
      });
      expect(r.drift, r.config).toMatchObject({
        edits: results.options.driftEdits,
        repaired: number,
        latencyMs: { p99: number },
      });
      expect(r.throttle, r.config).toMatchObject({
        keys: results.options.driftEdits,
        cloudQps: CONFIGS[r.config].flags.includes("--cloud-qps=0") ? 0 : number,
        calls: number,
        callsPerSecond: number,
        heldMs: number,
        repaired: results.options.driftEdits,
        repairMs: number,
      });
      expect(r.restart, r.config).toMatchObject({ stopMs: number, readyMs: number, newShapeReadyMs: number });
      expect(r.memory, r.config).toMatchObject({
        idle: { rssBytes: number, heapUsedBytes: number },
        afterConverge: { rssBytes: number, heapUsedBytes: number },
        afterRestart: { rssBytes: number },
        afterDelete: { rssBytes: number, heapUsedBytes: number },
        deleteMs: number,
      });
      // The soak on the first configuration only: samples with every reading, and everything converged.
      if (r.config === results.options.configs[0]) {
        // The message names what kept it from converging (a Shape not Ready, a cloud row off), if anything.
        expect(r.soak, `${r.config}: ${r.soak?.problem ?? "converged"}`).toMatchObject({
          shapes: n,
          durationMs: number,
          specChanges: number,
          cloudEdits: { recolors: number, deletes: number, skipped: number },
          start: { rssBytes: number, heapUsedBytes: number },
          end: { rssBytes: number, heapUsedBytes: number },
          rssSlopeMbPerHour: number,
          rssMeanBytes: number,
          eventLoopLagP99MaxMs: number,
          reconcileP99MaxMs: number,
          converged: true,
        });
        const samples = r.soak?.samples ?? [];
        expect(samples.length, r.config).toBeGreaterThanOrEqual(3);
        for (const sample of samples.slice(1)) {
          expect(sample, r.config).toMatchObject({
            atMs: number,
            rssBytes: number,
            eventLoopLagP99Ms: number,
          });
        }
        expect(r.soak?.specChanges, r.config).toBeGreaterThan(0);
        expect(
          (r.soak?.cloudEdits.recolors ?? 0) + (r.soak?.cloudEdits.deletes ?? 0),
          r.config,
        ).toBeGreaterThan(0);
      } else {
        expect(r.soak, r.config).toBeUndefined();
      }
      // Tracing on in its column only: the receiver got spans from the controller and the cloud.
      if (CONFIGS[r.config].tracing) {
        expect(r.tracing?.spans, r.config).toBeGreaterThan(0);
        expect(r.tracing?.rejected, r.config).toBe(0);
        expect(Object.keys(r.tracing?.byService ?? {}).length, r.config).toBeGreaterThanOrEqual(2);
      } else {
        expect(r.tracing, r.config).toBeUndefined();
      }
    }
  });

  test("printed the table with a column per configuration, and the targets", () => {
    const columns = smoke.results.runs.map((r) => r.config).join(" +");
    expect(smoke.stdout).toMatch(new RegExp(`^figure +target +${columns}$`, "m"));
    expect(smoke.stdout).toContain("Targets (default configuration):");
    expect(smoke.stdout).toContain("RSS slope during the soak");
    expect(smoke.stdout).toContain("Tracing: spans exported");
    expect(smoke.stdout).toContain("controller CPU per Shape");
    expect(smoke.stdout).toContain("modules loaded, ready with 0 Shapes");
  });

  test("wrote the Markdown with the soak's chart beside it, drawn from the samples", () => {
    expect(markdown).toContain("## Soak");
    expect(markdown).toContain("](benchmarks-soak.svg)");
    expect(chart.startsWith("<svg ")).toBe(true);
    for (const series of [">RSS<", ">V8 heap used<", ">event-loop lag p99<", ">reconcile p99<"])
      expect(chart).toContain(series);
  });
});

describe.runIf(STARTED_ONLY.length > 0)(
  "npm run bench -- --smoke --config <every other configuration> --scenario cost: each starts and converges",
  () => {
    let smoke: SmokeRun;

    beforeAll(async () => {
      smoke = await smokeRun(
        () => ["--config", STARTED_ONLY.join(","), "--scenario", "cost"],
        STARTED_TIMEOUT_MS,
      );
    }, STARTED_TIMEOUT_MS + 60_000);

    afterAll(async () => {
      if (smoke) await rm(smoke.dir, { recursive: true, force: true });
    });

    test("parsed every configuration and ran each once, without an error", () => {
      expect(smoke.results.options.configs).toEqual(STARTED_ONLY);
      expect(smoke.results.options.scenarios).toEqual(["cost"]);
      expect(smoke.results.runs.map((r) => [r.config, r.repeat, r.error])).toEqual(
        STARTED_ONLY.map((config) => [config, 1, undefined]),
      );
    });

    test("printed the table with a column per configuration", () => {
      const columns = smoke.results.runs.map((r) => r.config).join(" +");
      expect(smoke.stdout).toMatch(new RegExp(`^figure +target +${columns}$`, "m"));
      expect(smoke.stdout).toContain("API cost per created Shape");
    });

    test("each controller converged the Shapes: one ShapeRef and one cloud create per Shape, nothing more run", () => {
      const n = smoke.results.options.shapes;
      for (const r of smoke.results.runs) {
        // Counted by kube-apiserver and the cloud, not by the controller: it ran under this configuration.
        expect(r.cost?.kube["POST shaperefs"], r.config).toBe(n);
        expect(r.cost?.cloud["POST /v1/shapes"], r.config).toBeGreaterThanOrEqual(n);
        // Only the converge: no floor, and none of the scenarios the full run above proves.
        expect(
          [r.floor, r.converge, r.steady, r.drift, r.throttle, r.soak, r.restart, r.memory],
          r.config,
        ).toEqual(Array.from({ length: 8 }, () => undefined));
        if (CONFIGS[r.config].tracing) expect(r.tracing?.spans, r.config).toBeGreaterThan(0);
        else expect(r.tracing, r.config).toBeUndefined();
      }
    });

    test("each controller's modules were counted once idle: none of client-node's on the lean client", () => {
      for (const r of smoke.results.runs) {
        expect(r.modules?.total, r.config).toBeGreaterThan(0);
        expect(r.modules?.clientNode, r.config).toBe(0);
      }
      expect(smoke.stdout).toContain("of which @kubernetes/client-node's");
    });
  },
);

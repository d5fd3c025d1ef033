/**
 * The benchmark never rots: `node bench/run.ts --smoke` runs every scenario against every default
 * configuration on a few Shapes (a fresh real stack each; the soak, 15 s of it, on the first configuration
 * only), and its results JSON must hold a number for each figure, and its Markdown the soak's chart beside it.
 * Nothing here asserts a timing or a target: a smoke run's numbers mean nothing, only that they exist.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { REPO_ROOT } from "@shapes/stack";
import { CONFIG_NAMES, CONFIGS } from "../bench/configs.ts";
import type { BenchResults } from "../bench/results.ts";

const run = promisify(execFile);
/** The configurations a run without --config runs (the opt-in what-ifs left out). */
const BY_DEFAULT = CONFIG_NAMES.filter((c) => !CONFIGS[c].optIn);
/**
 * The smoke run's deadline: about a minute per configuration on 2 cores (the first one's 15 s soak included),
 * far more when others share them, so 90 s per default configuration plus two minutes: it grows with the list.
 */
const SMOKE_TIMEOUT_MS = (BY_DEFAULT.length * 90 + 120) * 1000;

describe("npm run bench -- --smoke", () => {
  let dir: string;
  let results: BenchResults;
  let stdout: string;
  let markdown: string;
  let chart: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "shapes-bench-smoke-"));
    const jsonFile = join(dir, "results.json");
    const markdownFile = join(dir, "benchmarks.md");
    const out = await run(
      process.execPath,
      [join(REPO_ROOT, "bench", "run.ts"), "--smoke", "--json", jsonFile, "--markdown", markdownFile],
      {
        cwd: REPO_ROOT,
        timeout: SMOKE_TIMEOUT_MS,
        maxBuffer: 16 * 1024 * 1024,
      },
    ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(
        `the smoke run failed: ${error.message}\n--- stderr ---\n${error.stderr ?? ""}\n--- stdout ---\n${error.stdout ?? ""}`,
      );
    });
    stdout = out.stdout;
    results = JSON.parse(await readFile(jsonFile, "utf8")) as BenchResults;
    markdown = await readFile(markdownFile, "utf8");
    chart = await readFile(join(dir, "benchmarks-soak.svg"), "utf8");
  }, SMOKE_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("ran every default configuration once, without an error, and said where it ran", () => {
    expect(BY_DEFAULT[0]).toBe("default");
    expect(results.runs.map((r) => [r.config, r.repeat, r.error])).toEqual(
      BY_DEFAULT.map((config) => [config, 1, undefined]),
    );
    expect(results.machine.cores).toBeGreaterThan(0);
    expect(results.machine.kubernetes).toMatch(/^v1\.\d+\.\d+/);
    expect(results.machine.gitCommit).toMatch(/^[0-9a-f]{40}$/);
  });

  test("every run has every scenario, with numbers", () => {
    const n = results.options.shapes;
    const number = expect.any(Number);
    for (const r of results.runs) {
      expect(r.converge, r.config).toMatchObject({
        shapes: n,
        durationMs: number,
        shapesPerSecond: number,
        latencyMs: { p50: number, p99: number, count: n },
        cloudVerified: true,
        shapeRefsCreated: n,
      });
      expect(r.converge?.cpu.seconds.controller, r.config).toEqual(number);
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
        cloudQps: r.config === "no-rate-limit" ? 0 : number,
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
        expect(r.soak, r.config).toMatchObject({
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
      if (r.config === "tracing") {
        expect(r.tracing?.spans, r.config).toBeGreaterThan(0);
        expect(r.tracing?.rejected, r.config).toBe(0);
      } else {
        expect(r.tracing, r.config).toBeUndefined();
      }
    }
  });

  test("printed the table with a column per configuration, and the targets", () => {
    const columns = results.runs.map((r) => r.config).join(" +");
    expect(stdout).toMatch(new RegExp(`^figure +target +${columns}$`, "m"));
    expect(stdout).toContain("Targets (default configuration):");
    expect(stdout).toContain("RSS slope during the soak");
  });

  test("wrote the Markdown with the soak's chart beside it, drawn from the samples", () => {
    expect(markdown).toContain("## Soak");
    expect(markdown).toContain("](benchmarks-soak.svg)");
    expect(chart.startsWith("<svg ")).toBe(true);
    for (const series of [">RSS<", ">V8 heap used<", ">event-loop lag p99<", ">reconcile p99<"])
      expect(chart).toContain(series);
  });
});

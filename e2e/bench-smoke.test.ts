/**
 * The benchmark never rots: `node bench/run.ts --smoke` runs every scenario against every default
 * configuration on a few Shapes (a fresh real stack each), and its results JSON must hold a number for each
 * figure. Nothing here asserts a timing or a target: a smoke run's numbers mean nothing, only that they exist.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { REPO_ROOT } from "../stack/controller.ts";
import type { BenchResults } from "../bench/results.ts";

const run = promisify(execFile);

describe("npm run bench -- --smoke", () => {
  let dir: string;
  let results: BenchResults;
  let stdout: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "shapes-bench-smoke-"));
    const jsonFile = join(dir, "results.json");
    const out = await run(
      process.execPath,
      [join(REPO_ROOT, "bench", "run.ts"), "--smoke", "--json", jsonFile],
      {
        cwd: REPO_ROOT,
        timeout: 540_000, // about 2 minutes on 2 quiet cores; far more when others share them
        maxBuffer: 16 * 1024 * 1024,
      },
    ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(
        `the smoke run failed: ${error.message}\n--- stderr ---\n${error.stderr ?? ""}\n--- stdout ---\n${error.stdout ?? ""}`,
      );
    });
    stdout = out.stdout;
    results = JSON.parse(await readFile(jsonFile, "utf8")) as BenchResults;
  }, 600_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("ran every default configuration once, without an error, and said where it ran", () => {
    expect(results.runs.map((r) => [r.config, r.repeat, r.error])).toEqual([
      ["default", 1, undefined],
      ["no-watch", 1, undefined],
      ["one-worker", 1, undefined],
      ["observe-get", 1, undefined],
      ["no-kube-pool", 1, undefined],
      ["no-rate-limit", 1, undefined],
      ["tracing", 1, undefined],
    ]);
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
        afterConverge: { rssBytes: number, heapUsedBytes: number },
        afterRestart: { rssBytes: number },
        afterDelete: { rssBytes: number, heapUsedBytes: number },
        deleteMs: number,
      });
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
    expect(stdout).toMatch(
      /^figure +target +default +no-watch +one-worker +observe-get +no-kube-pool +no-rate-limit +tracing$/m,
    );
    expect(stdout).toContain("Targets (default configuration):");
  });
});

import { describe, expect, test } from "vitest";
import type { ConfigName } from "./configs.ts";
import {
  keptReading,
  READING_END,
  READING_START,
  renderMarkdownDocument,
  soakChartPath,
  soakChartSvg,
} from "./markdown.ts";
import {
  controllerCpuPerShape,
  cpuTable,
  decisionHistoryLines,
  renderReport,
  resultTable,
} from "./report.ts";
import type { BenchResults, RunRecord, SoakResult } from "./results.ts";
import { MB, optionsFor, TEST_MEMORY, testResults as results } from "./testing.ts";

const cpu = {
  wallSeconds: 10,
  seconds: { controller: 2, apiServer: 5, etcd: 1, cloud: 0.5, bench: 1 },
  otherSeconds: 3,
  stealSeconds: 0.1,
  capacitySeconds: 20,
};
const memory = TEST_MEMORY;

/** A 10-minute soak whose RSS grows `slope` MB/h around a mean of 100 MB and ends at `endMb`. */
function soakOf(slope: number, endMb = 110): SoakResult {
  return {
    shapes: 1000,
    durationMs: 600_000,
    sampleIntervalMs: 10_000,
    warmUpMs: 60_000,
    ratePerSecond: 2,
    cloudEdits: { recolors: 800, deletes: 400, skipped: 3 },
    specChanges: 1_200,
    failed: 0,
    samples: [0, 1, 2].map((i) => ({
      atMs: i * 300_000,
      rssBytes: (100 + i) * MB,
      heapUsedBytes: 40 * MB,
      reconciles: i === 0 ? 0 : 600,
      ...(i === 0 ? {} : { eventLoopLagP99Ms: 12 * i, reconcileP99Ms: 25 * i }),
    })),
    start: { ...memory, rssBytes: 100 * MB },
    end: { ...memory, rssBytes: endMb * MB },
    rssSlopeMbPerHour: slope,
    rssSlopeStdErrMbPerHour: 1.5,
    rssMeanBytes: 100 * MB,
    eventLoopLagP99MaxMs: 24,
    reconcileP99MedianMs: 37.5,
    reconcileP99MaxMs: 50,
    converged: true,
    convergeMs: 1_200,
    cpu: { ...cpu, wallSeconds: 600, seconds: { controller: 60 } },
  };
}

/** A run whose figures are scaled by `k` (a slower ablation: k > 1). */
function run(config: ConfigName, repeat: number, k: number, shapes: number): RunRecord {
  return {
    config,
    repeat,
    dir: `/tmp/${config}-${repeat}`,
    converge: {
      shapes,
      durationMs: 8_000 * k,
      createMs: 2_000,
      shapesPerSecond: shapes / (8 * k),
      latencyMs: { p50: 1_000 * k, p99: 3_000 * k, max: 3_500 * k, count: shapes },
      cloudVerified: true,
      shapeRefsCreated: shapes,
      cpu,
    },
    floor: {
      shapes,
      requestsPerShape: 6,
      concurrency: 32,
      durationMs: 2_000 * k,
      writesPerSecond: (shapes * 6) / (2 * k),
      kube: {},
      cpu,
      warmUpMs: 2_000,
      cleanupMs: 1_000,
      // The converge (8 s × k) over the floor of the same stack (2 s, and k slower here too).
      convergeRatio: 4,
    },
    cost: {
      shapes,
      kube: {
        "PATCH shapes": shapes,
        "POST shaperefs": shapes,
        "PATCH shaperefs/status": shapes,
        "PATCH shapes/status": shapes,
        "POST events": shapes,
        "LIST shapes": 1,
      },
      kubeBackground: { "PUT leases": 3 },
      cloud: { "POST /v1/shapes": shapes, "GET /v1/shapes": 2 },
      controllerKubeWrites: {},
    },
    steady: {
      windowMs: 30_000,
      resyncPeriodMs: 10_000,
      kube: {},
      cloud: { "GET /v1/shapes": 6 },
      kubeWrites: 0,
      cloudWrites: 0,
      cloudReadsPerPeriod: 2 * k,
      reconcilesPerPeriod: shapes,
      cpu,
    },
    drift: {
      edits: 10,
      recolors: 7,
      deletes: 3,
      repaired: 10,
      latencyMs: { p50: 20 * k, p99: 500 * k, max: 600 * k, count: 10 },
      cloudWrites: 10,
    },
    restart: {
      stopMs: 30,
      readyMs: 2_000 * k,
      newShapeReadyMs: 2_100 * k,
      kube: { "POST shaperefs": 1 },
      cloud: { "GET /v1/shapes": 2 },
      cpu,
    },
    memory: { afterConverge: memory, afterRestart: memory, afterDelete: memory, deleteMs: 9_000 },
  };
}

describe("resultTable", () => {
  const twoConfigs = results(optionsFor(["--config", "default,one-worker", "--repeat", "2"]), [
    run("default", 1, 1, 1000),
    run("one-worker", 1, 4, 1000),
    run("default", 2, 1.5, 1000),
    run("one-worker", 2, 4, 1000),
  ]);
  const { table, verdicts } = resultTable(twoConfigs);
  const row = (label: string) => table.rows.find((r) => r[0]?.trim() === label);

  test("one column per configuration after the figure and its target", () => {
    expect(table.headers).toEqual(["figure", "target", "default", "one-worker"]);
  });

  test("shows the median over repeats with the min–max spread, and the ablation's ratio to the default", () => {
    // default: 8 s and 12 s → median 10 s; one-worker: 32 s twice → ×3.2.
    expect(row("time until all Ready and the cloud verified")).toEqual([
      "  time until all Ready and the cloud verified",
      "≤ 10 s (100/s) ✓ met",
      "10 s (8 s–12 s)",
      "32 s ×3.20",
    ]);
  });

  test("judges each target on the default configuration", () => {
    const byFigure = Object.fromEntries(verdicts.map((v) => [v.figure, v.met]));
    expect(byFigure["time until all Ready and the cloud verified"]).toBe(true);
    // "Kubernetes writes" twice: 5 per created Shape against ≤ 4 (missed), then 0 in steady state (met).
    expect(verdicts.filter((v) => v.figure === "Kubernetes writes").map((v) => v.met)).toEqual([false, true]);
    expect(byFigure["repair latency p99"]).toBe(true);
  });

  test("shows the floor beside the converge, its writes per second, and converge / floor against ≤ 1.25", () => {
    // default: floors of 2 s and 3 s → 2.5 s; 6,000 writes in 2 s and in 3 s → 2,500/s.
    expect(row("floor: bare writes, 1,000 Shapes")?.slice(2)).toEqual(["2.50 s (2 s–3 s)", "8 s ×3.20"]);
    expect(
      row("floor writes/s (per Shape: the create and the controller's writes of that configuration)")?.slice(
        2,
        3,
      ),
    ).toEqual(["2,500 (2,000–3,000)"]);
    expect(row("converge / floor")?.slice(1)).toEqual(["≤ 1.25 ✗ missed", "4", "4 ×1.00"]);
    expect(verdicts.find((v) => v.figure === "converge / floor")).toMatchObject({ value: "4", met: false });
  });

  test.each([
    { reason: "met at 1,000 Shapes", shapes: 1000, ratio: 1.2, met: true },
    { reason: "missed at 10,000 Shapes", shapes: 10_000, ratio: 1.3, met: false },
    { reason: "not judged below 1,000 (fixed costs dominate)", shapes: 300, ratio: 1.2, met: undefined },
  ])("converge / floor: $reason", ({ shapes, ratio, met }) => {
    const r = run("default", 1, 1, shapes);
    const withRatio = {
      ...r,
      floor: { ...(r.floor as NonNullable<RunRecord["floor"]>), convergeRatio: ratio },
    };
    const options = optionsFor(["--config", "default", "--shapes", String(shapes)]);
    const verdict = resultTable(results(options, [withRatio])).verdicts.find(
      (v) => v.figure === "converge / floor",
    );
    expect(verdict?.met).toBe(met);
  });

  test("a target stated for 10,000 Shapes is not judged at 1,000", () => {
    const rss = verdicts.find((v) => v.figure.startsWith("RSS with"));
    expect(rss?.met).toBeUndefined();
  });

  test("breaks the Kubernetes writes down by verb and resource, per Shape", () => {
    expect(row("POST shaperefs")?.slice(2)).toEqual(["1", "1 ×1.00"]);
    expect(row("Kubernetes writes")?.slice(2, 3)).toEqual(["5"]);
  });

  test("a ratio to a zero is left out (0 writes vs 0 writes)", () => {
    const steadyWrites = table.rows.filter((r) => r[0]?.trim() === "cloud writes").at(-1);
    expect(steadyWrites?.slice(2)).toEqual(["0", "0"]);
  });
});

describe("the throttle section", () => {
  const storm = (cloudQps: number, callsPerSecond: number) => ({
    keys: 100,
    stormMs: 10_040,
    retryAfterMs: 1_000,
    cloudQps,
    calls: callsPerSecond * 10,
    callsPerSecond,
    heldMs: cloudQps > 0 ? 9_500 : 0,
    repaired: 100,
    repairMs: 1_200,
  });
  const r = results(optionsFor(["--config", "default,no-rate-limit"]), [
    { ...run("default", 1, 1, 1000), throttle: storm(100, 2) },
    { ...run("no-rate-limit", 1, 1, 1000), throttle: storm(0, 100) },
  ]);
  const { table } = resultTable(r);
  const row = (label: string) => table.rows.find((x) => x[0]?.trim() === label);

  test("titles the storm with its Retry-After, its length rounded, and M", () => {
    expect(table.rows.map((x) => x[0])).toContain(
      "Cloud-wide 429 storm: every cloud call answered 429 (Retry-After 1 s) for 10 s while 100 Shapes need a cloud write",
    );
  });

  test("shows calls per second during the storm beside the configured --cloud-qps", () => {
    expect(row("the controller's --cloud-qps (0: no rate limiter)")?.slice(2, 3)).toEqual(["100"]);
    expect(row("controller cloud calls per second during the storm")?.slice(2)).toEqual(["2", "100 ×50.0"]);
  });
});

describe("the tracing column", () => {
  const r = results(optionsFor(["--config", "default,tracing"]), [
    run("default", 1, 1, 1000),
    {
      ...run("tracing", 1, 1.1, 1000),
      tracing: {
        spans: 12_345,
        byService: { "shapes-controller": 9_000, "mock-cloud": 3_345 },
        requests: 40,
        rejected: 0,
      },
    },
  ]);
  const { table } = resultTable(r);
  const row = (label: string) => table.rows.find((x) => x[0]?.trim() === label);

  test("shows the spans exported, by process, only under tracing (off: no value, no ratio)", () => {
    expect(table.headers).toEqual(["figure", "target", "default", "tracing"]);
    expect(row("spans exported")?.slice(2)).toEqual(["—", "12,345"]);
    expect(row("by mock-cloud")?.slice(2)).toEqual(["—", "3,345"]);
    expect(row("by shapes-controller")?.slice(2)).toEqual(["—", "9,000"]);
  });

  test("describes the column in the Markdown document", () => {
    expect(renderMarkdownDocument([r], undefined)).toContain(
      "`tracing` (tracing exporting every span to an in-process OTLP receiver (OTEL_EXPORTER_OTLP_ENDPOINT) vs. off",
    );
  });
});

describe("modules loaded at idle, controller CPU per Shape, beside an ablation", () => {
  // The default is the lean client (no client-node module, 1.2 s of controller CPU).
  const r = results(optionsFor(["--config", "default,tracing"]), [
    {
      ...run("default", 1, 0.5, 1000),
      modules: { total: 600, clientNode: 0 },
      converge: {
        ...(run("default", 1, 0.5, 1000).converge as NonNullable<RunRecord["converge"]>),
        cpu: { ...cpu, seconds: { ...cpu.seconds, controller: 1.2 } },
      },
    },
    { ...run("tracing", 1, 1, 1000), modules: { total: 1_200, clientNode: 400 } },
  ]);
  const { table } = resultTable(r);
  const row = (label: string) => table.rows.find((x) => x[0]?.trim() === label);

  test("shows the modules loaded and client-node's among them, with the ratio to default", () => {
    expect(table.headers).toEqual(["figure", "target", "default", "tracing"]);
    expect(row("modules loaded, ready with 0 Shapes (distinct, node: builtins included)")?.slice(2)).toEqual([
      "600",
      "1,200 ×2.00",
    ]);
    // No ratio over the default's none.
    expect(row("of which @kubernetes/client-node's")?.slice(2)).toEqual(["0", "400"]);
  });

  test.each([
    {
      reason: "the run's CPU over N (default: 1.2 s of controller CPU in the fixture, 1,000 Shapes)",
      config: "default",
      want: "1.20 ms",
    },
    {
      reason: "the ablation's (2 s over 1,000), beside it with its ratio",
      config: "tracing",
      want: "2 ms ×1.67",
    },
  ])("controller CPU per Shape: $reason", ({ config, want }) => {
    const cell = row("controller CPU per Shape (its CPU seconds while converging / N)")?.[
      table.headers.indexOf(config)
    ];
    expect(cell).toBe(want);
  });

  test.each([
    {
      reason: "the controller's CPU seconds over N",
      converge: { shapes: 500, cpu: { ...cpu, seconds: { controller: 1.5 } } },
      want: 0.003,
    },
    {
      reason: "no controller CPU read (its process was gone): no figure, not a zero",
      converge: { shapes: 500, cpu: { ...cpu, seconds: { apiServer: 3 } } },
      want: undefined,
    },
    { reason: "no converge", converge: undefined, want: undefined },
  ])("controllerCpuPerShape: $reason", ({ converge, want }) => {
    const base = run("default", 1, 1, 500);
    const record: RunRecord = {
      ...base,
      converge: converge && { ...(base.converge as NonNullable<RunRecord["converge"]>), ...converge },
    };
    expect(controllerCpuPerShape(record)).toBe(want);
  });

  test("results without a modules reading (older runs) show no modules row", () => {
    const old = resultTable(results(optionsFor(["--config", "default"]), [run("default", 1, 1, 1000)]));
    expect(old.table.rows.some((x) => x[0]?.includes("modules loaded"))).toBe(false);
  });

  test("describes the default column as the lean client's, in the Markdown", () => {
    const doc = renderMarkdownDocument([r], undefined);
    expect(doc).toContain("`default` (the controller's defaults:");
    expect(doc).toContain(
      "every Kubernetes call (loader, list-watch, writes, Lease, cluster identity) over the library's lean",
    );
  });
});

describe("the restart's initial sync, against an ablation", () => {
  const MiB = 1024 * 1024;
  /** A restart whose initial sync cost the API server `apiServer` CPU seconds and `peakMb` MB at its highest. */
  const withSync = (config: ConfigName, apiServer: number, peakMb: number): RunRecord => {
    const base = run(config, 1, 1, 1000);
    const restart = base.restart as NonNullable<RunRecord["restart"]>;
    return {
      ...base,
      restart: {
        ...restart,
        initialSync: {
          cpu: { ...cpu, wallSeconds: 4, seconds: { apiServer, etcd: 0.5, controller: 1 } },
          rss: {
            apiServer: { beforeBytes: 300 * MiB, peakBytes: peakMb * MiB, samples: 40 },
            etcd: { beforeBytes: 80 * MiB, peakBytes: 90 * MiB, samples: 40 },
          },
          sampleIntervalMs: 100,
        },
      },
    };
  };
  const r = results(optionsFor(["--config", "default,one-worker"]), [
    withSync("default", 2, 350),
    withSync("one-worker", 3, 450),
  ]);
  const { table } = resultTable(r);
  const row = (label: string) => table.rows.find((x) => x[0]?.trim() === label)?.slice(2);

  test.each([
    {
      reason: "the API server's CPU over spawn → /readyz, both ways, with the ratio",
      label: "kube-apiserver CPU, the restart's initial sync (spawn → /readyz)",
      want: ["2 s", "3 s ×1.50"],
    },
    { reason: "etcd's CPU beneath it", label: "etcd CPU, the same", want: ["0.500 s", "0.500 s ×1.00"] },
    {
      reason: "the API server's RSS before the spawn",
      label: "kube-apiserver RSS before the spawn",
      want: ["300 MB", "300 MB ×1.00"],
    },
    {
      reason: "its highest sampled RSS in the window, the interval named",
      label: "kube-apiserver peak RSS during the initial sync (VmRSS every 100 ms)",
      want: ["350 MB", "450 MB ×1.29"],
    },
    {
      reason: "the peak above the RSS before",
      label: "above its RSS before",
      want: ["50 MB", "150 MB ×3.00"],
    },
    { reason: "etcd's peak", label: "etcd peak RSS during it", want: ["90 MB", "90 MB ×1.00"] },
  ])("$reason", ({ label, want }) => {
    expect(row(label)).toEqual(want);
  });

  test("results without an initial-sync reading (older runs) still render, without those rows", () => {
    const old = resultTable(results(optionsFor(["--config", "default"]), [run("default", 1, 1, 1000)]));
    expect(old.table.rows.some((x) => x[0]?.includes("initial sync"))).toBe(false);
    expect(old.table.rows.some((x) => x[0]?.includes("spawn → /readyz (every Shape verified)"))).toBe(true);
  });
});

describe("decisionHistoryLines", () => {
  const size = (subjects: number) => ({ subjects, entries: subjects * 4, bytes: subjects * 1_000 });
  const withHistory = (config: ConfigName, repeat: number, afterConverge: unknown, afterDelete: unknown) => {
    const r = run(config, repeat, 1, 1000);
    return {
      ...r,
      memory: {
        afterConverge: { ...memory, decisionHistory: afterConverge },
        afterDelete: { ...memory, decisionHistory: afterDelete },
        deleteMs: 9_000,
      },
    } as RunRecord;
  };

  test.each([
    {
      reason: "after converging and after deleting, the median over repeats",
      runs: [
        withHistory("default", 1, size(1000), size(0)),
        withHistory("default", 2, size(1200), size(0)),
        withHistory("default", 3, size(1100), size(2)),
      ],
      want: [
        "default, after converging — decision history: 1,100 objects, 4,400 entries, 1,100,000 bytes (as JSON)",
        "default, after deleting every Shape — decision history: 0 objects, 0 entries, 0 bytes (as JSON)",
      ],
    },
    {
      reason: "a controller whose /why answered 404: absent, not zero",
      runs: [withHistory("default", 1, null, null)],
      want: ["default — decision history: absent (/why answered 404)"],
    },
    {
      reason: "results from before /why was read: nothing to say",
      runs: [run("default", 1, 1, 1000)],
      want: [],
    },
  ])("$reason", ({ runs, want }) => {
    expect(decisionHistoryLines(results(optionsFor(["--config", "default"]), runs))).toEqual(want);
  });

  test("the text report and the Markdown show them under the table", () => {
    const r = results(optionsFor(["--config", "default"]), [withHistory("default", 1, size(10), size(0))]);
    const line =
      "default, after converging — decision history: 10 objects, 40 entries, 10,000 bytes (as JSON)";
    expect(renderReport(r)).toContain(
      `Controller decision history (GET /why, read with the RSS; medians):\n  ${line}`,
    );
    expect(renderMarkdownDocument([r], undefined)).toContain(`- ${line}`);
  });
});

describe("renderReport", () => {
  test("lists a failed run with its reason, and what it measured before failing still counts", () => {
    const failed: RunRecord = {
      ...run("default", 1, 1, 1000),
      error: "timed out after 320 s waiting for all 1000 Shapes to be Ready",
    };
    delete failed.memory;
    const text = renderReport(results(optionsFor(["--config", "default"]), [failed]));
    expect(text).toContain("FAILED runs:");
    expect(text).toContain("default #1: timed out after 320 s");
    expect(text).toContain("time until all Ready and the cloud verified");
    expect(text).not.toContain("Controller memory");
  });
});

describe("the Markdown document", () => {
  const r = results(optionsFor(["--config", "default"]), [run("default", 1, 1, 1000)]);

  test("has the command, the machine, the table and the targets", () => {
    const doc = renderMarkdownDocument([r], undefined);
    expect(doc).toContain("```sh\nnpm run bench\n```");
    expect(doc).toContain("| CPU | 2 × Test CPU |");
    expect(doc).toContain("| **Converge from cold: 1,000 Shapes applied at once** |");
    expect(doc).toContain("- **missed**: Kubernetes writes — 5 (target ≤ 4;");
    expect(doc).toContain("| floor: bare writes, 1,000 Shapes |  | 2 s |");
    expect(doc).toContain("| converge / floor | ≤ 1.25 ✗ missed | 4 |");
    expect(doc).toContain("- **Floor.** ");
  });

  test("keeps the hand-written reading of the file it replaces", () => {
    const first = renderMarkdownDocument([r], undefined);
    const edited = first.replace(
      /(reading:start[^\n]*\n)[\s\S]*?(\n<!-- reading:end)/,
      "$1The API server is the bottleneck.$2",
    );
    expect(keptReading(edited)).toBe("The API server is the bottleneck.");
    const regenerated = renderMarkdownDocument([r], edited);
    expect(regenerated).toContain(`${READING_START}\nThe API server is the bottleneck.\n${READING_END}`);
  });

  test("without a previous reading, a placeholder says what to write", () => {
    expect(keptReading(undefined)).toBeUndefined();
    expect(renderMarkdownDocument([r], "# an older file without markers")).toContain("_Not written yet");
  });
});

describe("the memory targets of issue 16", () => {
  const withMemory = (shapes: number, mb: { idle?: number; converged: number; deleted: number }) => {
    const r = run("default", 1, 1, shapes);
    return {
      ...r,
      memory: {
        ...(mb.idle === undefined ? {} : { idle: { ...memory, rssBytes: mb.idle * MB } }),
        afterConverge: { ...memory, rssBytes: mb.converged * MB },
        afterDelete: { ...memory, rssBytes: mb.deleted * MB },
        deleteMs: 9_000,
      },
    } as RunRecord;
  };
  const verdict = (r: RunRecord, shapes: number, figure: string) =>
    resultTable(results(optionsFor(["--config", "default", "--shapes", String(shapes)]), [r])).verdicts.find(
      (v) => v.figure.startsWith(figure),
    );

  test.each([
    { reason: "at 10,000, 190 MB meets ≤ 200 MB", shapes: 10_000, mb: 190, met: true },
    { reason: "at 10,000, 210 MB misses it", shapes: 10_000, mb: 210, met: false },
    { reason: "at 1,000 it is not judged (stated for 10,000)", shapes: 1_000, mb: 190, met: undefined },
  ])("RSS with N Shapes: $reason", ({ shapes, mb, met }) => {
    const v = verdict(withMemory(shapes, { idle: 60, converged: mb, deleted: 60 }), shapes, "RSS with");
    expect(v).toMatchObject({ target: "≤ 200 MB at 10,000", met });
  });

  test.each([
    { reason: "20% above idle is within", idle: 100, deleted: 120, met: true, target: "≤ 120 MB" },
    { reason: "more than 20% above idle is not", idle: 100, deleted: 121, met: false, target: "≤ 120 MB" },
    { reason: "below idle is within", idle: 100, deleted: 80, met: true, target: "≤ 120 MB" },
  ])("RSS after deleting every Shape: $reason", ({ idle, deleted, met, target }) => {
    const v = verdict(withMemory(1000, { idle, converged: 150, deleted }), 1000, "RSS after deleting");
    expect(v).toMatchObject({ target: `within 20% of idle (${target})`, met });
  });

  test("without an idle reading (older results) the after-delete target is not judged", () => {
    const v = verdict(withMemory(1000, { converged: 150, deleted: 90 }), 1000, "RSS after deleting");
    expect(v).toMatchObject({ target: "within 20% of idle", met: undefined });
  });

  test("the idle reading is the memory section's first row", () => {
    const r = withMemory(1000, { idle: 60, converged: 150, deleted: 70 });
    const { table } = resultTable(results(optionsFor(["--config", "default"]), [r]));
    const first = table.rows.findIndex((row) => row[0] === "Controller memory") + 1;
    expect(table.rows[first]?.slice(0, 3)).toEqual(["  RSS idle (ready, 0 Shapes)", "", "60 MB"]);
  });
});

describe("the soak section", () => {
  const soaked = (slope: number, endMb?: number) =>
    results(optionsFor(["--config", "default,one-worker"]), [
      { ...run("default", 1, 1, 1000), soak: soakOf(slope, endMb) },
      run("one-worker", 1, 4, 1000),
    ]);
  const rowOf = (r: BenchResults, label: string) =>
    resultTable(r).table.rows.find((x) => x[0]?.trim() === label);
  const verdictOf = (r: BenchResults, figure: string) =>
    resultTable(r).verdicts.find((v) => v.figure.startsWith(figure));

  test("titles the section with the load and the configuration it ran on", () => {
    expect(resultTable(soaked(0)).table.rows.map((x) => x[0])).toContain(
      "Soak: 10 m 00 s of steady load on 1,000 Shapes (2/s cloud-side edits + as many spec changes; default only)",
    );
  });

  test.each([
    { reason: "+5 MB/h on a mean of 100 MB is within 1% per 10 minutes (6 MB/h)", slope: 5, met: true },
    { reason: "a shrinking RSS counts the same: -5 MB/h", slope: -5, met: true },
    { reason: "+7 MB/h is growth", slope: 7, met: false },
  ])("RSS slope: $reason", ({ slope, met }) => {
    expect(verdictOf(soaked(slope), "RSS slope during the soak")).toMatchObject({
      target: "≈ 0 (no growth: within ±6 MB/h, 1% of the mean RSS per 10 min)",
      met,
    });
  });

  test("a soak shorter than 10 minutes: the slope is not judged (warming up reads as growth)", () => {
    const short = results(optionsFor(["--config", "default", "--soak-minutes", "2"]), [
      { ...run("default", 1, 1, 1000), soak: soakOf(100) },
    ]);
    expect(verdictOf(short, "RSS slope during the soak")?.met).toBeUndefined();
  });

  test.each([
    { reason: "180 MB after the soak meets ≤ 200 MB", endMb: 180, met: true },
    { reason: "220 MB misses it", endMb: 220, met: false },
  ])("$reason", ({ endMb, met }) => {
    expect(verdictOf(soaked(0, endMb), "RSS after the soak")).toMatchObject({ target: "≤ 200 MB", met });
  });

  test("shows the readings in the soaked column only, and the slope signed with its error", () => {
    const r = soaked(1.25);
    expect(rowOf(r, "RSS slope during the soak (least squares, after the warm-up)")?.slice(2)).toEqual([
      "+1.25 MB/h",
      "—",
    ]);
    expect(rowOf(r, "its standard error (garbage collection's ups and downs)")?.slice(2, 3)).toEqual([
      "±1.50 MB/h",
    ]);
    expect(rowOf(r, "event-loop lag p99, the worst interval")?.slice(2, 3)).toEqual(["24 ms"]);
    expect(rowOf(r, "reconcile p99 per interval (bucket bound), median interval")?.slice(2, 3)).toEqual([
      "37.5 ms",
    ]);
    expect(rowOf(r, "cloud-side edits (recolors and deletes)")?.slice(2, 3)).toEqual(["1,200"]);
    expect(rowOf(r, "all converged after the load (Ready, cloud matched)")?.slice(2, 3)).toEqual(["yes"]);
    expect(rowOf(r, "controller CPU during the load (share of one core)")?.slice(2, 3)).toEqual(["10%"]);
  });

  test("no soak, no section", () => {
    const r = results(optionsFor(["--config", "default"]), [run("default", 1, 1, 1000)]);
    expect(resultTable(r).table.rows.some((x) => x[0]?.startsWith("Soak"))).toBe(false);
  });

  test("the Markdown document embeds the chart beside it and lists the charted run's numbers", () => {
    const doc = renderMarkdownDocument([soaked(1.25)], undefined, "benchmarks-soak.svg");
    expect(doc).toContain("## Soak");
    expect(doc).toContain(
      "![Soak of default #1: RSS and V8 heap used, event-loop lag p99 and reconcile p99 over time](benchmarks-soak.svg)",
    );
    expect(doc).toContain("| RSS: the load's start → after the soak | 100 MB → 110 MB |");
    expect(doc).toContain("| RSS slope after the warm-up | +1.25 MB/h (±1.50 standard error) |");
    expect(doc).toContain("| all converged after the load | yes, in 1.20 s |");
  });

  test("the chart is drawn from the results, and goes beside the document", () => {
    expect(soakChartSvg([soaked(0)])).toContain(
      "<title>Soak: 1,000 Shapes, 10 m 00 s of steady load (default #1)</title>",
    );
    expect(
      soakChartSvg([results(optionsFor(["--config", "default"]), [run("default", 1, 1, 1000)])]),
    ).toBeUndefined();
    expect(soakChartPath("/repo/docs/benchmarks.md")).toBe("/repo/docs/benchmarks-soak.svg");
  });

  test("without a soak the Markdown says so, and embeds nothing", () => {
    const doc = renderMarkdownDocument(
      [results(optionsFor(["--config", "default"]), [run("default", 1, 1, 1000)])],
      undefined,
    );
    expect(doc).toContain("## Soak\n\n_No soak ran._");
    expect(doc).not.toContain("![");
  });
});

describe("cpuTable", () => {
  const floorCpu = {
    wallSeconds: 4,
    seconds: { apiServer: 2, etcd: 0.5, cloud: 0.1, bench: 1 },
    otherSeconds: 0.2,
    stealSeconds: 0,
    capacitySeconds: 8,
  };
  const withFloorCpu = (config: ConfigName, k: number) => {
    const r = run(config, 1, k, 1000);
    return { ...r, floor: { ...(r.floor as NonNullable<RunRecord["floor"]>), cpu: floorCpu } };
  };
  const table = cpuTable(
    results(optionsFor(["--config", "default,one-worker"]), [
      withFloorCpu("default", 1),
      withFloorCpu("one-worker", 4),
    ]),
  );
  const row = (label: string) => table?.rows.find((r) => r[0] === label);

  test("puts the floor's CPU beside the converge's, per configuration", () => {
    expect(table?.headers).toEqual([
      "CPU: floor and converge (s, % of one core)",
      "default: floor",
      "default: converge",
      "one-worker: floor",
      "one-worker: converge",
    ]);
    expect(row("kube-apiserver")?.slice(1, 3)).toEqual(["2 s (50%)", "5 s (50%)"]);
    expect(row("controller")?.slice(1, 3)).toEqual(["—", "2 s (20%)"]);
    expect(row("wall time")?.slice(1, 3)).toEqual(["4 s", "10 s"]);
  });

  test("compares the API server's CPU per Shape: floor vs converge", () => {
    // 2 s for 1,000 Shapes in the floor, 5 s for the converge's 1,000.
    expect(row("per Shape: API server CPU ms (floor vs converge)")?.slice(1, 3)).toEqual([
      "2 ms",
      "5 ms (×2.50 the floor)",
    ]);
  });

  test("results without a floor keep one column per configuration", () => {
    const r = run("default", 1, 1, 1000);
    delete r.floor;
    const plain = cpuTable(results(optionsFor(["--config", "default"]), [r]));
    expect(plain?.headers).toEqual(["CPU while converging (s, % of one core)", "default"]);
    expect(plain?.rows.some((x) => x[0]?.startsWith("per Shape"))).toBe(false);
  });
});

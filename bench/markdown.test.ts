import { describe, expect, test } from "vitest";
import type { ConfigName } from "./configs.ts";
import {
  chartedSoak,
  READING_END,
  READING_START,
  renderMarkdownDocument,
  runLabels,
  soakChartSvg,
} from "./markdown.ts";
import type { BenchResults, RunRecord, SoakResult } from "./results.ts";
import { MB, optionsFor, TEST_MEMORY, testResults } from "./testing.ts";

// Small fixtures: the document's shape is under test here, not the figures (report.test.ts checks those).
const cpu = { wallSeconds: 10, seconds: { controller: 2, apiServer: 5 }, capacitySeconds: 20 };
const memory = TEST_MEMORY;

function soakOf(shapes: number): SoakResult {
  return {
    shapes,
    durationMs: 600_000,
    sampleIntervalMs: 10_000,
    warmUpMs: 60_000,
    ratePerSecond: 2,
    cloudEdits: { recolors: 800, deletes: 400, skipped: 0 },
    specChanges: 1_200,
    failed: 0,
    samples: [0, 1].map((i) => ({
      atMs: i * 600_000,
      rssBytes: 100 * MB,
      heapUsedBytes: 40 * MB,
      reconciles: 0,
    })),
    start: { ...memory, rssBytes: 100 * MB },
    end: { ...memory, rssBytes: 101 * MB },
    rssSlopeMbPerHour: 0.5,
    rssMeanBytes: 100 * MB,
    converged: true,
    convergeMs: 1_000,
    cpu,
  };
}

function runOf(config: ConfigName, shapes: number, soak?: SoakResult): RunRecord {
  return {
    config,
    repeat: 1,
    dir: `/tmp/${config}-1`,
    converge: {
      shapes,
      durationMs: shapes * 20,
      createMs: shapes,
      shapesPerSecond: 50,
      latencyMs: { p50: 1_000, p99: 3_000, max: 3_500, count: shapes },
      cloudVerified: true,
      shapeRefsCreated: shapes,
      cpu,
    },
    memory: { afterConverge: memory, afterDelete: memory, deleteMs: 1_000 },
    ...(soak ? { soak } : {}),
  };
}

/** One run (one results.json): `argv` as typed after `npm run bench --`. */
function resultsOf(argv: string[], runs: RunRecord[], startedAt = "2026-11-22T10:00:00.000Z"): BenchResults {
  const options = optionsFor(argv);
  return testResults(options, runs, {
    startedAt,
    finishedAt: startedAt.replace("T10", "T11"),
    command: ["npm run bench --", ...argv].join(" "),
    gitCommit: String(options.shapes).padStart(16, "0"),
  });
}

// Issue 16's document: the 1,000-Shape run of every configuration (no soak), and the 10,000-Shape soak.
const thousand = resultsOf(
  ["--config", "default,one-worker", "--markdown", "docs/benchmarks.md"],
  [runOf("default", 1000), runOf("one-worker", 1000)],
);
const tenThousand = resultsOf(
  [
    "--shapes",
    "10000",
    "--config",
    "default",
    "--scenario",
    "converge,steady,soak,memory",
    "--steady-periods",
    "2",
    "--drift-edits",
    "50",
  ],
  [runOf("default", 10_000, soakOf(10_000))],
  "2026-11-23T10:00:00.000Z",
);
const combinedBy =
  "npm run bench -- --from a/results.json --from b/results.json --markdown docs/benchmarks.md";
const previous = `# Benchmarks\n\n${READING_START}\nThe API server is the bottleneck.\n${READING_END}\n`;
const both = renderMarkdownDocument([thousand, tenThousand], previous, "benchmarks-soak.svg", combinedBy);

describe("a document of several runs", () => {
  test.each([
    {
      reason: "every run's command in the code block, in the order given, then the one that combined them",
      want: `\`\`\`sh
# 1,000 Shapes
npm run bench -- --config default,one-worker --markdown docs/benchmarks.md
# 10,000 Shapes
npm run bench -- --shapes 10000 --config default --scenario converge,steady,soak,memory --steady-periods 2 --drift-edits 50
# this document, from the runs above
${combinedBy}
\`\`\``,
    },
    { reason: "what the first run ran, in a sentence", want: "**1,000 Shapes:** 1,000 Shapes, 1 repeat(s)" },
    {
      reason: "the run line, each run's commit with its label (evidence:status reads it)",
      want: "\nRun at commit 0000000 (2026-11-22, 1,000 Shapes) and commit 0000000 (2026-11-23, 10,000 Shapes).\n",
    },
    { reason: "what the second run ran", want: "**10,000 Shapes:** 10,000 Shapes, 1 repeat(s)" },
    { reason: "the commands, plural", want: "produced by the commands below" },
    { reason: "the machine: a column per run", want: "|  | 1,000 Shapes | 10,000 Shapes |" },
    { reason: "the machine: each run's value", want: "| commit | `0000000000001000` | `0000000000010000` |" },
    {
      reason: "a Results subsection per run, each with its configurations",
      want: "### 1,000 Shapes\n\nColumns are configurations: `default` (",
    },
    { reason: "…and its own table", want: "| figure | target | default | one-worker |" },
    {
      reason: "the second run's subsection",
      want: "### 10,000 Shapes\n\nColumns are configurations: `default` (",
    },
    { reason: "the targets of the first run, as a sub-list", want: "- 1,000 Shapes:\n  - **" },
    { reason: "the targets of the second run", want: "- 10,000 Shapes:\n  - **" },
    { reason: "where the time goes, per run", want: "**1,000 Shapes:**\n\n| CPU while converging" },
    { reason: "…the second run's CPU", want: "**10,000 Shapes:**\n\n| CPU while converging" },
    {
      reason: "the soak of the run that soaked (the second), named, placed among the scenarios that run ran",
      want: "on the 10,000 converged Shapes (the process that converged them, after the steady scenario), the bench",
    },
    {
      reason: "…and said which run it is",
      want: "The chart and this table are of default #1 of the 10,000 Shapes run;",
    },
    { reason: "the chart embedded", want: "](benchmarks-soak.svg)" },
    {
      reason: "the hand-written reading of the file it replaces, kept",
      want: `${READING_START}\nThe API server is the bottleneck.\n${READING_END}`,
    },
    {
      reason: "an option the runs that reported its scenario set differently: each run's value",
      want: "over 3 (1,000 Shapes) or 2 (10,000 Shapes) resync periods",
    },
    {
      reason:
        "an option only one run's scenarios used (the 10,000 run's 50 drift edits went unused): its value",
      want: "edits (recolor, or delete) 100 random owned",
    },
  ])("has $reason", ({ want }) => {
    expect(both).toContain(want);
  });

  test("the runs' sections come in the order given", () => {
    const reversed = renderMarkdownDocument([tenThousand, thousand], undefined);
    const at = (doc: string, heading: string) => doc.indexOf(`### ${heading}\n`);
    expect(at(both, "1,000 Shapes")).toBeLessThan(at(both, "10,000 Shapes"));
    expect(at(reversed, "10,000 Shapes")).toBeLessThan(at(reversed, "1,000 Shapes"));
  });

  test("without the combining command, the runs' own commands only", () => {
    const doc = renderMarkdownDocument([thousand, tenThousand], undefined);
    expect(doc).not.toContain("# this document");
    expect(doc).toContain("--drift-edits 50\n```");
  });

  test("nothing to render is an error, not an empty document", () => {
    expect(() => renderMarkdownDocument([], undefined)).toThrow("cannot render");
  });
});

describe("the soak charted", () => {
  const thousandSoaked = resultsOf(["--config", "default"], [runOf("default", 1000, soakOf(1000))]);

  test.each([
    { reason: "none soaked: none", all: [thousand], shapes: undefined },
    { reason: "the only run that soaked, though given second", all: [thousand, tenThousand], shapes: 10_000 },
    { reason: "of two that soaked, the first given", all: [thousandSoaked, tenThousand], shapes: 1_000 },
    { reason: "the first given, whatever its N", all: [tenThousand, thousandSoaked], shapes: 10_000 },
  ])("$reason", ({ all, shapes }) => {
    expect(chartedSoak(all)?.run.soak.shapes).toBe(shapes);
    const svg = soakChartSvg(all);
    if (shapes === undefined) expect(svg).toBeUndefined();
    else expect(svg).toContain(`<title>Soak: ${shapes.toLocaleString("en-US")} Shapes,`);
  });

  test("of several that soaked, the document says it shows the first given", () => {
    expect(renderMarkdownDocument([thousandSoaked, tenThousand], undefined)).toContain(
      "default #1 of the 1,000 Shapes run (the first given of the runs that soaked)",
    );
  });
});

describe("runLabels", () => {
  test.each([
    {
      reason: "a run is named by its N",
      all: [thousand, tenThousand],
      want: ["1,000 Shapes", "10,000 Shapes"],
    },
    {
      reason: "two runs of the same N are told apart by their start",
      all: [
        thousand,
        resultsOf(["--config", "default"], [runOf("default", 1000)], "2026-11-24T10:00:00.000Z"),
      ],
      want: [
        "1,000 Shapes, started 2026-11-22T10:00:00.000Z",
        "1,000 Shapes, started 2026-11-24T10:00:00.000Z",
      ],
    },
  ])("$reason", ({ all, want }) => {
    expect(runLabels(all)).toEqual(want);
  });
});

describe("a document of one run", () => {
  const one = renderMarkdownDocument([thousand], previous, undefined, combinedBy);

  test.each([
    {
      reason: "its command alone (no run names, no combining command)",
      want: "## The command\n\n```sh\nnpm run bench -- --config default,one-worker --markdown docs/benchmarks.md\n```\n\n1,000 Shapes, 1 repeat(s)",
    },
    { reason: "the single-run sentence", want: "Raw results: `bench/results/<run>/results.json`.\n" },
    { reason: "the run line, its one commit", want: "\nRun at commit 0000000 (2026-11-22, 1,000 Shapes).\n" },
    { reason: "the machine as label and value", want: "|  |  |\n| --- | --- |\n| CPU | 2 × Test CPU |" },
    {
      reason: "the results under their heading, no subsection",
      want: "## Results\n\nColumns are configurations:",
    },
    { reason: "the targets as one list", want: "## Targets\n\n- **" },
    { reason: "the CPU table right under its text", want: "on the same cores.\n\n| CPU while converging" },
    {
      reason: "the reading kept",
      want: `${READING_START}\nThe API server is the bottleneck.\n${READING_END}`,
    },
  ])("has $reason", ({ want }) => {
    expect(one).toContain(want);
  });

  test.each([
    { reason: "no run subsection", unwanted: "### " },
    { reason: "no combining command", unwanted: combinedBy },
    { reason: "no per-run targets", unwanted: "- 1,000 Shapes:" },
  ])("has $reason", ({ unwanted }) => {
    expect(one).not.toContain(unwanted);
  });
});

import { describe, expect, test } from "vitest";
import { CONFIG_NAMES } from "./configs.ts";
import { DEFAULTS, SCENARIOS, SMOKE_DEFAULTS, parseBenchArgs, usage, type BenchOptions } from "./options.ts";

function parsed(argv: string[]): BenchOptions {
  const options = parseBenchArgs(argv);
  if (options === "help") throw new Error("expected options, got help");
  return options;
}

describe("parseBenchArgs", () => {
  test("no flags: the defaults, every scenario and configuration", () => {
    expect(parsed([])).toEqual({
      shapes: DEFAULTS.shapes,
      scenarios: [...SCENARIOS],
      configs: ["default", "one-worker", "workers-4", "default-semi-space", "no-rate-limit", "tracing"],
      repeat: 1,
      driftEdits: DEFAULTS.driftEdits,
      resyncPeriodMs: DEFAULTS.resyncPeriodMs,
      steadyPeriods: DEFAULTS.steadyPeriods,
      concurrency: DEFAULTS.concurrency,
      soakMinutes: 10,
      soakRate: 2,
      jsonFile: undefined,
      markdownFile: undefined,
      fromFiles: [],
      smoke: false,
      cpuProf: false,
      heapProf: false,
      build: false,
      controllerNodeFlags: [],
    });
  });

  test.each([
    { reason: "--shapes takes a number", argv: ["--shapes", "10000"], want: { shapes: 10_000 } },
    {
      reason: "--shapes=N works too, with a thousands separator",
      argv: ["--shapes=10_000"],
      want: { shapes: 10_000 },
    },
    {
      reason: "--scenario may repeat",
      argv: ["--scenario", "drift", "--scenario", "converge"],
      want: { scenarios: ["converge", "drift"] },
    },
    {
      reason: "--scenario takes a comma list, in run order whatever the order given",
      argv: ["--scenario", "memory,steady"],
      want: { scenarios: ["steady", "memory"] },
    },
    {
      reason: "a scenario named twice runs once",
      argv: ["--scenario", "drift,drift"],
      want: { scenarios: ["drift"] },
    },
    {
      reason: "--config picks configurations, the default first",
      argv: ["--config", "one-worker,default"],
      want: { configs: ["default", "one-worker"] },
    },
    {
      reason: "the rate limiter's ablation is one of them",
      argv: ["--config", "no-rate-limit,default", "--scenario", "throttle"],
      want: { configs: ["default", "no-rate-limit"], scenarios: ["throttle"] },
    },
    {
      reason: "an ablation runs alone with the default when named",
      argv: ["--config", "default,workers-4"],
      want: { configs: ["default", "workers-4"] },
    },
    {
      reason: "tracing is an ablation like the others, the last one",
      argv: ["--config", "tracing,default", "--scenario", "memory"],
      want: { configs: ["default", "tracing"], scenarios: ["memory"] },
    },
    { reason: "--repeat", argv: ["--repeat", "3"], want: { repeat: 3 } },
    {
      reason: "--json and --markdown name files",
      argv: ["--json", "/tmp/r.json", "--markdown", "docs/benchmarks.md"],
      want: { jsonFile: "/tmp/r.json", markdownFile: "docs/benchmarks.md" },
    },
    {
      reason: "--from names an earlier run's results",
      argv: ["--from", "bench/results/a/results.json"],
      want: { fromFiles: ["bench/results/a/results.json"] },
    },
    {
      reason: "--from may repeat: one document from several runs, in the order given",
      argv: [
        "--from",
        "bench/results/10k/results.json",
        "--from=bench/results/1k/results.json",
        "--markdown",
        "docs/benchmarks.md",
      ],
      want: {
        fromFiles: ["bench/results/10k/results.json", "bench/results/1k/results.json"],
        markdownFile: "docs/benchmarks.md",
      },
    },
    {
      reason: "--resync-period takes a duration",
      argv: ["--resync-period", "30s"],
      want: { resyncPeriodMs: 30_000 },
    },
    {
      reason:
        "without it, 10 ms per Shape when longer than 10 s: no resync in the middle of a 10,000 converge",
      argv: ["--shapes", "10000"],
      want: { resyncPeriodMs: 100_000 },
    },
    {
      reason: "--resync-period wins over the per-Shape default",
      argv: ["--shapes", "10000", "--resync-period", "10s"],
      want: { resyncPeriodMs: 10_000 },
    },
    { reason: "--cpu-prof is a switch", argv: ["--cpu-prof"], want: { cpuProf: true } },
    { reason: "--heap-prof is a switch", argv: ["--heap-prof"], want: { heapProf: true } },
    {
      reason: "--build runs the controller's build, as the image does",
      argv: ["--build"],
      want: { build: true },
    },
    {
      reason: "--controller-node-flag may repeat (a value starting with -- needs the = form)",
      argv: [
        "--controller-node-flag=--max-semi-space-size=8",
        "--controller-node-flag=--heapsnapshot-signal=SIGUSR2",
      ],
      want: { controllerNodeFlags: ["--max-semi-space-size=8", "--heapsnapshot-signal=SIGUSR2"] },
    },
    {
      reason: "--smoke changes the defaults to a few Shapes and short periods",
      argv: ["--smoke"],
      want: {
        smoke: true,
        shapes: SMOKE_DEFAULTS.shapes,
        driftEdits: SMOKE_DEFAULTS.driftEdits,
        resyncPeriodMs: SMOKE_DEFAULTS.resyncPeriodMs,
        steadyPeriods: SMOKE_DEFAULTS.steadyPeriods,
        soakMinutes: 0.25,
      },
    },
    {
      reason: "--soak-minutes takes a fraction, and --soak-rate too",
      argv: ["--soak-minutes", "30", "--soak-rate", "0.5"],
      want: { soakMinutes: 30, soakRate: 0.5 },
    },
    {
      reason: "the soak is a scenario, run after the throttle and before the restart",
      argv: ["--scenario", "memory,restart,soak,throttle"],
      want: { scenarios: ["throttle", "soak", "restart", "memory"] },
    },
    {
      reason: "a flag still wins over --smoke's defaults",
      argv: ["--smoke", "--shapes", "8"],
      want: { smoke: true, shapes: 8 },
    },
  ])("$reason", ({ argv, want }) => {
    expect(parsed(argv)).toMatchObject(want);
  });

  test.each([
    { reason: "--help", argv: ["--help"] },
    { reason: "-h", argv: ["-h"] },
    { reason: "--help wins over other flags", argv: ["--shapes", "5", "--help"] },
  ])("$reason asks for the help", ({ argv }) => {
    expect(parseBenchArgs(argv)).toBe("help");
  });

  test.each([
    {
      reason: "an unknown flag",
      argv: ["--shape", "5"],
      message: "cannot parse the command line: Unknown option '--shape'",
    },
    {
      reason: "a stray argument",
      argv: ["converge"],
      message: 'cannot parse the command line: unexpected argument "converge"',
    },
    {
      reason: "--shapes that is not a number",
      argv: ["--shapes", "10k"],
      message: 'cannot use --shapes "10k": it must be a whole number from 1 to 100000',
    },
    { reason: "--shapes 0", argv: ["--shapes", "0"], message: "cannot use --shapes" },
    {
      reason: "--repeat too large",
      argv: ["--repeat", "50"],
      message: 'cannot use --repeat "50": it must be a whole number from 1 to 20',
    },
    {
      reason: "an unknown scenario names the choices",
      argv: ["--scenario", "speed"],
      message:
        'cannot use --scenario "speed": choose from converge, cost, steady, drift, throttle, soak, restart, memory',
    },
    {
      reason: "an unknown configuration names the choices",
      argv: ["--config", "fast"],
      message:
        'cannot use --config "fast": choose from default, one-worker, workers-4, default-semi-space, no-rate-limit, tracing',
    },
    { reason: "an empty comma list", argv: ["--scenario", ","], message: "cannot use an empty --scenario" },
    {
      reason: "a resync period that is not a duration",
      argv: ["--resync-period", "soon"],
      message: 'cannot use --resync-period "soon": it must be a duration of at least 1s',
    },
    {
      reason: "more drift edits than Shapes",
      argv: ["--shapes", "10", "--drift-edits", "11"],
      message: "cannot edit 11 cloud shapes: --drift-edits must be at most --shapes (10)",
    },
    {
      reason: "a soak of no time",
      argv: ["--soak-minutes", "0"],
      message: 'cannot use --soak-minutes "0": it must be a number from 0.05 to 1440, like 0.5 or 10',
    },
    {
      reason: "a soak rate in another notation",
      argv: ["--soak-rate", "1e1"],
      message: 'cannot use --soak-rate "1e1": it must be a number from 0.1 to 100',
    },
    { reason: "a value missing after a flag", argv: ["--shapes"], message: "cannot parse the command line" },
    {
      reason: "--from without a file",
      argv: ["--from", "a/results.json", "--from"],
      message: "cannot parse the command line",
    },
    {
      reason: "an empty --from",
      argv: ["--from="],
      message: "cannot use an empty --from: give the results.json of an earlier run",
    },
    {
      reason: "a node flag without its dashes",
      argv: ["--controller-node-flag=cpu-prof"],
      message: 'cannot use --controller-node-flag "cpu-prof": give a node flag',
    },
  ])("refuses $reason with one line", ({ argv, message }) => {
    expect(() => parseBenchArgs(argv)).toThrow(message);
  });
});

describe("usage", () => {
  test("names every option, scenario and configuration", () => {
    const text = usage();
    for (const flag of [
      "--shapes",
      "--scenario",
      "--config",
      "--repeat",
      "--json",
      "--markdown",
      "--from",
      "--soak-minutes",
      "--soak-rate",
      "--smoke",
      "--cpu-prof",
      "--heap-prof",
      "--build",
      "--help",
    ]) {
      expect(text).toContain(flag);
    }
    for (const name of [...SCENARIOS, ...CONFIG_NAMES]) expect(text).toContain(`  ${name} `);
  });

  test("says --from repeats, and what several make", () => {
    expect(usage()).toMatch(/--from FILE[^\n]*\n[^\n]*repeatable: one document from several runs/);
  });
});

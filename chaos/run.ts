/**
 * `npm run chaos` — randomized fault-injection trials against a fresh local stack, checked against the
 * invariants of issue 7. See chaos/README.md, or `npm run chaos -- --help`.
 *
 * Progress goes to stderr, the results table to stdout, and the full results (figures, every trial's plan,
 * faults, settle times and violations) to a JSON file, rewritten after each trial so that an interrupted
 * run keeps what it measured.
 */
import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { parseChaosArgs, topologyOf, usage, UsageError, type ChaosOptions } from "./src/options.ts";
import { FAULT_KINDS, planTrial, type TrialPlan } from "./src/plan.ts";
import { deriveSeed } from "./src/prng.ts";
import { renderReport, summarize } from "./src/report.ts";
import { runTrial, type TrialResult } from "./src/trial.ts";

/** Where results and kept logs go (git-ignored). */
const RESULTS_DIR = join(import.meta.dirname, "results");

async function main(argv: readonly string[]): Promise<number> {
  let options: ChaosOptions | "help";
  try {
    options = parseChaosArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`chaos: ${error.message}\n`);
    return 2;
  }
  if (options === "help") {
    process.stdout.write(usage());
    return 0;
  }

  const startedAt = new Date();
  const runId = `${startedAt.toISOString().replace(/[:.]/g, "-")}-seed-${options.seed}`;
  const jsonPath = resolve(options.json ?? join(RESULTS_DIR, `${runId}.json`));
  const artifactsDir = join(RESULTS_DIR, runId);
  const progress = (line: string) => process.stderr.write(`chaos: ${line}\n`);
  const command = reproduceCommand(options);
  const code = codeVersion();
  progress(
    `${options.trials} trial(s) of ${options.durationMs / 1000} s, ${options.shapes} Shapes, seed ${options.seed}` +
      `${options.randomSeed ? " (random)" : ""}; reproduce with: ${command}`,
  );

  const results: TrialResult[] = [];
  const plans: TrialPlan[] = [];
  for (let i = 0; i < options.trials; i++) {
    const trial = options.firstTrial + i;
    const plan = planTrial({
      trial,
      seed: deriveSeed(options.seed, trial),
      topology: topologyOf(options.topology, trial),
      shapes: options.shapes,
      durationMs: options.durationMs,
      kinds: options.faults,
    });
    plans.push(plan);
    progress(
      `trial ${trial} (${i + 1}/${options.trials}, ${plan.topology}, seed ${plan.seed}): ` +
        `${plan.episodes.length} episodes: ${plan.episodes.map((e) => e.fault.kind).join(", ")}`,
    );
    results.push(
      await runTrial(plan, {
        settleTimeoutMs: options.settleTimeoutMs,
        artifactsDir,
        keepLogs: options.keepLogs,
        logLevel: options.logLevel,
        leakGrace: options.leakGrace,
        progress,
      }),
    );
    await writeResults(jsonPath, { command, options, startedAt, code, results, plans });
  }

  const figures = summarize(results);
  process.stdout.write(renderReport(figures, results));
  progress(`results: ${jsonPath}`);
  return figures.violations > 0 || figures.trialErrors > 0 ? 1 : 0;
}

/** The command that replays this run's plans. */
function reproduceCommand(o: ChaosOptions): string {
  return [
    "npm run chaos --",
    `--seed ${o.seed}`,
    `--trials ${o.trials}`,
    ...(o.firstTrial !== 1 ? [`--first-trial ${o.firstTrial}`] : []),
    `--shapes ${o.shapes}`,
    `--duration ${o.durationMs / 1000}s`,
    ...(o.topology !== "mixed" ? [`--topology ${o.topology}`] : []),
    ...(o.faults.length < FAULT_KINDS.length ? [`--faults ${o.faults.join(",")}`] : []),
  ].join(" ");
}

async function writeResults(
  path: string,
  run: {
    command: string;
    options: ChaosOptions;
    startedAt: Date;
    code: ReturnType<typeof codeVersion>;
    results: TrialResult[];
    plans: TrialPlan[];
  },
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const json = {
    tool: "chaos",
    command: run.command,
    code: run.code,
    seed: run.options.seed,
    options: run.options,
    startedAt: run.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    figures: summarize(run.results),
    trials: run.results.map((r, i) => ({ ...r, plan: run.plans[i] })),
  };
  await writeFile(path, JSON.stringify(json, null, 2) + "\n");
}

/** The commit the run tested, and whether the controller's files differed from it (uncommitted changes). */
function codeVersion(): { commit: string; controllerChanged: boolean } | undefined {
  try {
    const git = (...args: string[]) =>
      execFileSync("git", args, { cwd: import.meta.dirname, encoding: "utf8" });
    return {
      commit: git("rev-parse", "HEAD").trim(),
      controllerChanged: git("status", "--porcelain", "--", "../controller").trim() !== "",
    };
  } catch {
    return undefined; // not a git checkout
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `chaos: cannot run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);

/**
 * `npm run bench`: the benchmark's command. Parses the flags, finds (or builds) the Kubernetes binaries,
 * runs every configuration × repeat on a fresh stack, then writes results.json (always, under
 * bench/results/<run>/), prints the tables on stdout, and writes --json / --markdown files when asked.
 *
 * With --from, nothing runs: the report and the Markdown are rendered from an earlier results.json; with
 * several --from, each run's report is printed and the Markdown is one document of them all, in the order given.
 *
 * Exit codes: 0 when every run finished (whatever the targets say: they are reported, never asserted),
 * 1 when a run failed, 2 for a bad command line (or an unreadable --from file).
 */
import { execFileSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { ensureBinaries, stderrLog } from "@shapes/envtest";
import { REPO_ROOT } from "@shapes/stack";
import { cpuBetween, cpuSnapshot } from "./cpu.ts";
import { describeMachine } from "./machine.ts";
import { renderMarkdownDocument, soakChartPath, soakChartSvg } from "./markdown.ts";
import { parseBenchArgs, usage, UsageError, type BenchOptions } from "./options.ts";
import { Progress } from "./progress.ts";
import { renderReport } from "./report.ts";
import type { BenchResults, RunRecord } from "./results.ts";
import { runOnce } from "./runner.ts";

/** Where every run's folder goes (git-ignored). */
export const RESULTS_DIR = join(REPO_ROOT, "bench", "results");

async function main(argv: readonly string[]): Promise<number> {
  let options: BenchOptions | "help";
  try {
    options = parseBenchArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`bench: ${error.message}\n(see npm run bench -- --help)\n`);
    return 2;
  }
  if (options === "help") {
    process.stdout.write(usage());
    return 0;
  }

  const command = ["npm run bench", ...(argv.length > 0 ? ["--", ...argv] : [])].join(" ");
  if (options.fromFiles.length > 0) return fromResults(options.fromFiles, options.markdownFile, command);

  const progress = new Progress();
  const startedAt = new Date();
  const runDir = join(RESULTS_DIR, startedAt.toISOString().replace(/[:.]/g, "-"));
  await mkdir(runDir, { recursive: true });
  const binaries = await ensureBinaries({ log: stderrLog("bench: envtest") });
  if (options.build) {
    // The controller as its image runs it: the library's build, then the controller's (tsc, then the bundle).
    progress.log("building the controller (npm run build -w reconcile-kit -w @shapes/controller)");
    execFileSync("npm", ["run", "-s", "build", "-w", "reconcile-kit", "-w", "@shapes/controller"], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "inherit", "inherit"],
    });
  }
  const machine = await describeMachine(binaries);
  progress.log(
    `${options.shapes} Shapes × [${options.configs.join(", ")}] × ${options.repeat} repeat(s) on ${machine.cores} cores (load ${machine.loadAverage.toFixed(1)}); results in ${runDir}`,
  );

  const cpuStart = cpuSnapshot({});
  const runs: RunRecord[] = [];
  // Repeats outermost: a burst of load from elsewhere then hits every configuration alike, not one of them.
  for (let repeat = 1; repeat <= options.repeat; repeat++) {
    for (const config of options.configs) {
      runs.push(await runOnce(config, repeat, { options, binaries, runDir, progress, cores: machine.cores }));
    }
  }
  const results: BenchResults = {
    format: 1,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    command,
    options,
    machine,
    cpu: cpuBetween(cpuStart, cpuSnapshot({}), machine.cores),
    runs,
  };

  const json = `${JSON.stringify(results, null, 2)}\n`;
  await writeFile(join(runDir, "results.json"), json);
  if (options.jsonFile) await writeOut(options.jsonFile, json);
  process.stdout.write(renderReport(results));
  if (options.markdownFile) await writeMarkdown(options.markdownFile, [results]);
  progress.log(`results: ${join(runDir, "results.json")}`);
  return runs.some((r) => r.error !== undefined) ? 1 : 0;
}

/**
 * `--from`: the report of each earlier run, and the Markdown of them all (`command`, the one that combined
 * them, is shown in it when there are several), without running anything. Every file is read before anything
 * is printed: one unreadable file and nothing is written.
 */
async function fromResults(
  files: readonly string[],
  markdownFile: string | undefined,
  command: string,
): Promise<number> {
  const all: BenchResults[] = [];
  for (const file of files) {
    let results: BenchResults;
    try {
      results = JSON.parse(await readFile(file, "utf8")) as BenchResults;
    } catch (error) {
      process.stderr.write(`bench: cannot read the results in ${file}: ${(error as Error).message}\n`);
      return 2;
    }
    if (results.format !== 1) {
      process.stderr.write(
        `bench: cannot read the results in ${file}: format ${String(results.format)} is not 1\n`,
      );
      return 2;
    }
    all.push(results);
  }
  for (const results of all) process.stdout.write(renderReport(results));
  if (markdownFile) await writeMarkdown(markdownFile, all, all.length > 1 ? command : undefined);
  return 0;
}

/**
 * Writes the Markdown document of one run or several, keeping the hand-written reading of the file it
 * replaces, and the soak's chart beside it (`<name>-soak.svg`) when a run soaked (the first given that did).
 * `combinedBy`: the command that rendered several runs into one document.
 */
async function writeMarkdown(file: string, all: readonly BenchResults[], combinedBy?: string): Promise<void> {
  const path = resolve(file);
  const previous = await readFile(path, "utf8").catch(() => undefined);
  const chart = soakChartSvg(all);
  const chartPath = soakChartPath(path);
  await writeOut(
    path,
    renderMarkdownDocument(all, previous, chart ? basename(chartPath) : undefined, combinedBy),
  );
  process.stderr.write(`bench: wrote ${path}\n`);
  if (chart) {
    await writeOut(chartPath, chart);
    process.stderr.write(`bench: wrote ${chartPath}\n`);
  }
}

async function writeOut(path: string, text: string): Promise<void> {
  await mkdir(dirname(resolve(path)), { recursive: true });
  await writeFile(path, text);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);

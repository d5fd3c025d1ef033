/**
 * The command line of `npm run bench`: flags parsed and checked up front, with one-line errors a person
 * can act on (never a stack trace), and `--help`. Pure: no I/O, so the table of defaults is tested.
 */
import { parseArgs } from "node:util";
import { parseDuration } from "@shapes/controller";
import { CONFIG_NAMES, CONFIGS, type ConfigName } from "./configs.ts";

/** The scenarios of issues 6 and 16, in the order a run performs them. */
export const SCENARIOS = [
  "converge",
  "cost",
  "steady",
  "drift",
  "throttle",
  "soak",
  "restart",
  "memory",
] as const;
/** One scenario's name. */
export type ScenarioName = (typeof SCENARIOS)[number];

/** Everything a run needs to know. */
export interface BenchOptions {
  /** N: Shapes applied at once. */
  shapes: number;
  /** The scenarios to report (the converge always runs: every other scenario needs N converged Shapes). */
  scenarios: ScenarioName[];
  /** The controller configurations to compare, the default one first. */
  configs: ConfigName[];
  /** K: each configuration runs this many times on a fresh stack; tables show medians. */
  repeat: number;
  /** M: cloud-side edits and deletes of the drift scenario, and the Shapes the throttle scenario recolors. */
  driftEdits: number;
  /** The controller's --resync-period (and so the cloud relist period), in ms. */
  resyncPeriodMs: number;
  /** The steady-state window, in resync periods. */
  steadyPeriods: number;
  /** Concurrent create and delete requests of the workload; the floor's Shapes in flight and sockets. */
  concurrency: number;
  /** How long the soak's steady load lasts, in minutes (fractions allowed: the smoke run's is 0.25). */
  soakMinutes: number;
  /** The soak's rate: cloud-side edits per second, and as many Shape spec changes per second. */
  soakRate: number;
  /** Also write the results here (they always go to bench/results/<run>/results.json). */
  jsonFile: string | undefined;
  /** Write docs-style Markdown of the results here (e.g. docs/benchmarks.md). */
  markdownFile: string | undefined;
  /** A few Shapes and short periods: checks that the bench works, measures nothing worth reading. */
  smoke: boolean;
  /** Run the controller under `node --cpu-prof`; the profiles land in the run's folder. */
  cpuProf: boolean;
  /**
   * Sample what the controller allocates over its life, garbage included (heap-sampler.ts: a `.heapprofile`
   * written on exit), and write a heap snapshot (`--heapsnapshot-signal`) once idle and once converged: what it retains.
   * All in the run's folder.
   */
  heapProf: boolean;
  /**
   * Run the controller as its image does: its build (`controller/dist/main.js`, the bundle), built first, with
   * NODE_OPTIONS emptied; without it, from its sources (`controller/src/main.ts`), as `npm run controller` does.
   */
  build: boolean;
  /**
   * Do not run: print the report of each of these results.json of earlier runs, and render --markdown from
   * all of them, in this order (one document, a section per run). Empty: run.
   */
  fromFiles: string[];
  /** More flags for the controller's node (experiments: `--max-semi-space-size=8`, `--heapsnapshot-signal=SIGUSR2`). */
  controllerNodeFlags: string[];
}

/** A bad command line: the message is the whole story. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** The defaults of a normal run, and of `--smoke` (which only changes the defaults; flags still win). */
export const DEFAULTS = {
  shapes: 1000,
  repeat: 1,
  driftEdits: 100,
  resyncPeriodMs: 10_000,
  steadyPeriods: 3,
  concurrency: 32,
  soakMinutes: 10,
  // A few changes per second on each side: steady work the controller keeps up with (the converge runs at
  // 100 Shapes/s and more), so the soak measures what running costs over time, not a backlog.
  soakRate: 2,
} as const;
/** What `--smoke` changes. */
export const SMOKE_DEFAULTS = {
  shapes: 5,
  driftEdits: 4,
  resyncPeriodMs: 2_000,
  steadyPeriods: 2,
  soakMinutes: 0.25,
} as const;

/** Limits that keep a typo from running for a day. */
const LIMITS = {
  shapes: [1, 100_000],
  repeat: [1, 20],
  driftEdits: [1, 10_000],
  steadyPeriods: [1, 100],
  concurrency: [1, 256],
  soakMinutes: [0.05, 24 * 60],
  soakRate: [0.1, 100],
} as const;

/** The text of `--help`. */
export function usage(): string {
  return `Usage: npm run bench -- [options]

Starts a fresh local stack (kube-apiserver + etcd, the mock cloud, the controller as its own process under
the least-privilege service account) for each configuration and repeat, runs the scenarios, and prints a
table. Results go to bench/results/<run>/results.json (with controller and cloud logs beside them).

Scenarios (all by default; the converge always runs, as the others need N converged Shapes):
  converge   apply N Shapes at once; time until all are Ready and the cloud holds exactly N of ours;
             with it, first, the floor: the same Kubernetes writes per Shape by a bare client, no
             controller, no cloud (converge / floor: target ≤ 1.25)
  cost       Kubernetes requests (kube-apiserver's /metrics) and cloud requests per created Shape
  steady     writes and reads over several resync periods with nothing to do (target: 0 writes)
  drift      M random cloud-side edits and deletes; time from each cloud write to its repair
  throttle   every cloud call answered 429 while M Shapes need a cloud write: the controller's calls/s
             against its --cloud-qps, then time until all are written once the storm is over
  soak       --soak-minutes of steady load (--soak-rate cloud-side edits and as many spec changes per
             second): the controller's RSS, heap, event-loop lag p99 and reconcile p99 sampled over
             time, the RSS slope, and all converged at the end; on the run's first configuration only
             (default whenever it runs); --markdown draws its chart beside the document (<doc>-soak.svg)
  restart    restart the controller with N present: time to /readyz, and to a new Shape's Ready
  memory     controller RSS idle (ready, 0 Shapes), with N Shapes, and after deleting them all

Configurations (all but the opt-in what-ifs by default; each is also shown as a ratio to default):
${CONFIG_NAMES.map((name) => `  ${name.padEnd(13)} ${CONFIGS[name].description}`).join("\n")}

Options:
  --shapes N            Shapes applied at once [default: ${DEFAULTS.shapes}; 10000 for the big run]
  --scenario NAME       a scenario to report; repeat the flag or give a comma list [default: all]
  --config NAME         a configuration to run; repeat or comma list [default: all]
  --repeat K            fresh-stack runs per configuration; tables show medians, min–max [default: ${DEFAULTS.repeat}]
  --drift-edits M       cloud-side edits of the drift scenario, and Shapes recolored by throttle [default: ${DEFAULTS.driftEdits}]
  --resync-period D     the controller's --resync-period, e.g. 10s [default: ${DEFAULTS.resyncPeriodMs / 1000}s, or 10 ms per Shape when longer]
  --steady-periods P    length of the steady-state window, in resync periods [default: ${DEFAULTS.steadyPeriods}]
  --concurrency C       parallel create/delete requests of the workload, and the floor's [default: ${DEFAULTS.concurrency}]
  --soak-minutes M      length of the soak's load, in minutes (fractions allowed) [default: ${DEFAULTS.soakMinutes}]
  --soak-rate R         the soak's cloud-side edits per second, and as many spec changes per second [default: ${DEFAULTS.soakRate}]
  --json FILE           also write the results JSON here
  --markdown FILE       write the results as Markdown (e.g. docs/benchmarks.md; its "Reading" section is kept)
  --from FILE           run nothing: print the report (and write --markdown) from an earlier results.json;
                        repeatable: one document from several runs, in the order given (e.g. 1,000 and 10,000)
  --smoke               ${SMOKE_DEFAULTS.shapes} Shapes, ${SMOKE_DEFAULTS.driftEdits} edits, ${SMOKE_DEFAULTS.resyncPeriodMs / 1000}s resync, a ${SMOKE_DEFAULTS.soakMinutes * 60}s soak: proves the bench runs, in a few minutes
  --cpu-prof            run the controller under node --cpu-prof (profiles in the run's folder)
  --heap-prof           sample what the controller allocates (its .heapprofile, written on exit), and write a
                        heap snapshot once idle and once converged (all in the run's folder)
  --build               run the controller as its image does: its build (controller/dist/main.js, the bundle),
                        built first (npm run build -w reconcile-kit -w @shapes/controller); default: its sources
  --controller-node-flag F
                        one more flag for the controller's node, repeatable (e.g. --max-semi-space-size=8)
  --help                show this help
`;
}

/** Parses the command line into options, or "help". Throws UsageError with one line for a person. */
export function parseBenchArgs(argv: readonly string[]): BenchOptions | "help" {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    // node:util's messages are good ("Unknown option '--shape'"); only the prefix is ours.
    throw new UsageError(`cannot parse the command line: ${(error as Error).message}`);
  }
  const v = parsed.values;
  if (v.help) return "help";
  if (parsed.positionals.length > 0) {
    throw new UsageError(
      `cannot parse the command line: unexpected argument ${JSON.stringify(parsed.positionals[0])}`,
    );
  }
  const smoke = v.smoke ?? false;
  const base = smoke ? { ...DEFAULTS, ...SMOKE_DEFAULTS } : DEFAULTS;
  const shapes = integer("shapes", v.shapes, base.shapes, LIMITS.shapes);
  const driftEdits = integer("drift-edits", v["drift-edits"], base.driftEdits, LIMITS.driftEdits);
  if (driftEdits > shapes) {
    throw new UsageError(
      `cannot edit ${driftEdits} cloud shapes: --drift-edits must be at most --shapes (${shapes})`,
    );
  }
  return {
    shapes,
    scenarios: names("scenario", v.scenario, SCENARIOS),
    configs: names(
      "config",
      v.config,
      CONFIG_NAMES,
      CONFIG_NAMES.filter((c) => !CONFIGS[c].optIn),
    ),
    repeat: integer("repeat", v.repeat, base.repeat, LIMITS.repeat),
    driftEdits,
    // Long enough that a resync does not land in the middle of the converge (a real controller's is 5 min):
    // 10 s, or 10 ms per Shape when that is longer (100 s at 10,000).
    resyncPeriodMs: duration(
      "resync-period",
      v["resync-period"],
      smoke ? base.resyncPeriodMs : Math.max(base.resyncPeriodMs, shapes * 10),
    ),
    steadyPeriods: integer("steady-periods", v["steady-periods"], base.steadyPeriods, LIMITS.steadyPeriods),
    concurrency: integer("concurrency", v.concurrency, base.concurrency, LIMITS.concurrency),
    soakMinutes: decimal("soak-minutes", v["soak-minutes"], base.soakMinutes, LIMITS.soakMinutes),
    soakRate: decimal("soak-rate", v["soak-rate"], base.soakRate, LIMITS.soakRate),
    jsonFile: v.json,
    markdownFile: v.markdown,
    fromFiles: (v.from ?? []).map((file) => {
      if (file.trim() === "") {
        throw new UsageError("cannot use an empty --from: give the results.json of an earlier run");
      }
      return file;
    }),
    smoke,
    cpuProf: v["cpu-prof"] ?? false,
    heapProf: v["heap-prof"] ?? false,
    build: v.build ?? false,
    controllerNodeFlags: (v["controller-node-flag"] ?? []).map((flag) => {
      if (!flag.startsWith("--")) {
        throw new UsageError(
          `cannot use --controller-node-flag ${JSON.stringify(flag)}: give a node flag such as --max-semi-space-size=8`,
        );
      }
      return flag;
    }),
  };
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      shapes: { type: "string" },
      scenario: { type: "string", multiple: true },
      config: { type: "string", multiple: true },
      repeat: { type: "string" },
      "drift-edits": { type: "string" },
      "resync-period": { type: "string" },
      "steady-periods": { type: "string" },
      concurrency: { type: "string" },
      "soak-minutes": { type: "string" },
      "soak-rate": { type: "string" },
      json: { type: "string" },
      markdown: { type: "string" },
      from: { type: "string", multiple: true },
      smoke: { type: "boolean" },
      "cpu-prof": { type: "boolean" },
      "heap-prof": { type: "boolean" },
      build: { type: "boolean" },
      "controller-node-flag": { type: "string", multiple: true },
      help: { type: "boolean", short: "h" },
    },
  });
}

/** A whole-number flag (`fallback` when absent): digits only, in `[min, max]`, else a {@link UsageError}. */
export function integer(
  flag: string,
  text: string | undefined,
  fallback: number,
  [min, max]: readonly [number, number],
): number {
  if (text === undefined) return fallback;
  // "10k" and "1e4" are easy to mean and easy to misread: digits only (underscores and commas allowed).
  const cleaned = text.replace(/[_,]/g, "");
  const n = /^\d+$/.test(cleaned) ? Number(cleaned) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(
      `cannot use --${flag} ${JSON.stringify(text)}: it must be a whole number from ${min} to ${max}`,
    );
  }
  return n;
}

function decimal(
  flag: string,
  text: string | undefined,
  fallback: number,
  [min, max]: readonly [number, number],
): number {
  if (text === undefined) return fallback;
  // Plain decimals only ("0.5", "10"): no exponents, units or separators to misread.
  const n = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new UsageError(
      `cannot use --${flag} ${JSON.stringify(text)}: it must be a number from ${min} to ${max}, like 0.5 or 10`,
    );
  }
  return n;
}

function duration(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const ms = parseDuration(text);
  if (ms === undefined || ms < 1_000) {
    throw new UsageError(
      `cannot use --${flag} ${JSON.stringify(text)}: it must be a duration of at least 1s, like 10s or 1m`,
    );
  }
  return ms;
}

/** A repeatable flag whose values may also be comma lists; each must be known. `byDefault` when absent. */
function names<T extends string>(
  flag: string,
  given: readonly string[] | undefined,
  known: readonly T[],
  byDefault: readonly T[] = known,
): T[] {
  if (given === undefined) return [...byDefault];
  const wanted = new Set<string>();
  for (const item of given.flatMap((g) => g.split(","))) {
    const name = item.trim();
    if (name === "") continue;
    if (!(known as readonly string[]).includes(name)) {
      throw new UsageError(`cannot use --${flag} ${JSON.stringify(name)}: choose from ${known.join(", ")}`);
    }
    wanted.add(name);
  }
  if (wanted.size === 0)
    throw new UsageError(`cannot use an empty --${flag}: choose from ${known.join(", ")}`);
  // The known order, whatever order they were given in: the default configuration first, scenarios in run order.
  return known.filter((k) => wanted.has(k));
}

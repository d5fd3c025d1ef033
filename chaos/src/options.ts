/**
 * The command line of `npm run chaos` (util.parseArgs): flags, defaults, `--help`, and one-line errors
 * for bad values. Pure: `parseChaosArgs(argv)` returns the options or throws a UsageError.
 */
import { parseArgs } from "node:util";
import { parseDuration } from "@shapes/controller";
import { FAULT_DESCRIPTIONS, FAULT_KINDS, TOPOLOGIES, type FaultKind, type Topology } from "./plan.ts";

/** A bad command line: the message is for people, one line. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/**
 * Which topologies the trials use: `mixed` takes them in turn (trial 1 single, 2 ha, 3 two-clusters, 4
 * sharded, 5 single, ...: a quarter of the trials each), or always the one named.
 */
export type TopologyChoice = "mixed" | Topology;

/**
 * Named runs: a profile sets the defaults of a run's flags (flags given beside it win). `scale`, the run
 * `npm run evidence` commits: 200 Shapes per trial, two trials of each topology, faults weighted to process
 * kills (the kinds that SIGKILL a controller, a person's edits so that kills land during repairs), so that
 * the run has well over 100 kills.
 */
export const PROFILES = {
  scale: {
    trials: 8,
    seed: 2026,
    shapes: 200,
    duration: "120s",
    faults: [
      "controller-kill",
      "leader-kill",
      "kill-after-cloud-write",
      "missed-deletion",
      "cloud-human-edit",
    ] as readonly FaultKind[],
  },
} as const;

/** A profile's name. */
export type ProfileName = keyof typeof PROFILES;

/**
 * The kinds of fault that SIGKILL controller processes (a missed deletion kills the cluster's controllers
 * before deleting behind their back): what "process kills" counts.
 */
export const KILL_KINDS: readonly FaultKind[] = [
  "controller-kill",
  "leader-kill",
  "kill-after-cloud-write",
  "missed-deletion",
];

/** Everything a chaos run is told. */
export interface ChaosOptions {
  /** The profile the run's defaults came from, if any. */
  profile?: ProfileName;
  trials: number;
  /** The run's seed; each trial's plan is drawn from a seed derived from it and the trial number. */
  seed: number;
  /** True when the seed was drawn at random (not given). */
  randomSeed: boolean;
  /** The number of the first trial (to replay trial N alone: `--first-trial N --trials 1`). */
  firstTrial: number;
  shapes: number;
  durationMs: number;
  settleTimeoutMs: number;
  topology: TopologyChoice;
  faults: FaultKind[];
  /** Where the JSON results go; undefined: chaos/results/<time>-seed-<seed>.json. */
  json: string | undefined;
  keepLogs: boolean;
  logLevel: string;
  leakGrace: string;
}

const DEFAULTS = {
  trials: 8,
  shapes: 8,
  duration: "40s",
  settleTimeout: "60s",
  topology: "mixed",
  logLevel: "debug",
  leakGrace: "5s",
} as const;

/** The `--help` text. */
export function usage(): string {
  const kinds = FAULT_KINDS.map((k) => `  ${k.padEnd(24)}${FAULT_DESCRIPTIONS[k]}`).join("\n");
  return `npm run chaos -- [flags]

Randomized fault-injection trials against a fresh local stack (kube-apiserver + etcd, or two of them
sharing the cloud; the mock cloud; the controller as separate processes). Each trial runs a steady workload
of Shape creates, updates and deletes with faults mixed in at random, then checks the invariants of issues 7
and 11 after each episode and at the end.
Same seed, same plan. Exit code: 0 no violation, 1 violations or a harness error, 2 bad command line.

Flags:
  --profile P           a named run whose values are the defaults of the flags below: ${Object.keys(PROFILES).join(", ")}
                        (scale: ${profileText("scale")})
  --trials N            trials to run (default ${DEFAULTS.trials})
  --seed N              seed of the run, 0 to 4294967295 (default: random, printed)
  --first-trial N       number of the first trial (default 1); replay trial N: --first-trial N --trials 1
  --shapes N            Shapes the workload keeps alive, roughly, shared out between the clusters of a
                        two-clusters trial (default ${DEFAULTS.shapes})
  --duration D          workload-and-faults time of each trial, e.g. 40s, 2m (default ${DEFAULTS.duration})
  --settle-timeout D    how long the system may take to settle after an episode (default ${DEFAULTS.settleTimeout})
  --topology T          mixed, single, ha, two-clusters or sharded (default ${DEFAULTS.topology}).
                        single: one controller; ha: two replicas with leader election; two-clusters: two
                        control planes sharing the cloud, one controller each under its default owner id;
                        sharded: three replicas with --sharding, each writing for its part of the ring.
                        mixed takes them in turn (trial 1 single, 2 ha, 3 two-clusters, 4 sharded,
                        5 single, ...)
  --faults K,K,...      only these fault kinds (default: all)
  --json FILE           write the results there (default chaos/results/<time>-seed-<seed>.json)
  --keep-logs           keep the controller logs of trials without violations too (chaos/results/<run>/)
  --log-level L         the controllers' log level (default ${DEFAULTS.logLevel})
  --leak-grace D        the controllers' --leak-grace (default ${DEFAULTS.leakGrace})
  --help                this text

Fault kinds:
${kinds}
`;
}

/** Parses the command line; "help" for --help. Throws {@link UsageError} on a bad one. */
export function parseChaosArgs(
  argv: readonly string[],
  random: () => number = Math.random,
): ChaosOptions | "help" {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        profile: { type: "string" },
        trials: { type: "string" },
        seed: { type: "string" },
        "first-trial": { type: "string" },
        shapes: { type: "string" },
        duration: { type: "string" },
        "settle-timeout": { type: "string" },
        topology: { type: "string" },
        faults: { type: "string" },
        json: { type: "string" },
        "keep-logs": { type: "boolean" },
        "log-level": { type: "string" },
        "leak-grace": { type: "string" },
        help: { type: "boolean" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError(`cannot parse the command line: ${(error as Error).message} (see --help)`);
  }
  if (values.help) return "help";
  const profileName = values.profile as string | undefined;
  if (profileName !== undefined && !Object.hasOwn(PROFILES, profileName)) {
    throw new UsageError(
      `cannot use --profile ${JSON.stringify(profileName)}: it must be ${Object.keys(PROFILES).join(", ")}`,
    );
  }
  const profile = profileName === undefined ? undefined : PROFILES[profileName as ProfileName];
  const fromProfile: Record<string, string | undefined> = profile
    ? {
        trials: String(profile.trials),
        seed: String(profile.seed),
        shapes: String(profile.shapes),
        duration: profile.duration,
        faults: profile.faults.join(","),
      }
    : {};
  const str = (name: string): string | undefined => (values[name] as string | undefined) ?? fromProfile[name];

  const seedText = str("seed");
  const seed =
    seedText === undefined ? Math.floor(random() * 0x100000000) : integer("seed", seedText, 0, 0xffffffff);
  const topology = str("topology") ?? DEFAULTS.topology;
  if (!["mixed", ...TOPOLOGIES].includes(topology)) {
    throw new UsageError(
      `cannot use --topology ${JSON.stringify(topology)}: it must be mixed, ${TOPOLOGIES.join(", ")}`,
    );
  }
  const faults = (str("faults") ?? FAULT_KINDS.join(","))
    .split(",")
    .map((k) => k.trim())
    .filter(Boolean);
  const unknown = faults.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0 || faults.length === 0) {
    throw new UsageError(
      `cannot use --faults ${JSON.stringify(str("faults"))}: ${unknown.length > 0 ? `unknown kind(s) ${unknown.join(", ")}` : "no kind given"}; the kinds are ${FAULT_KINDS.join(", ")}`,
    );
  }
  const logLevel = str("log-level") ?? DEFAULTS.logLevel;
  if (!["debug", "info", "warn", "error"].includes(logLevel)) {
    throw new UsageError(
      `cannot use --log-level ${JSON.stringify(logLevel)}: it must be debug, info, warn or error`,
    );
  }
  const leakGrace = str("leak-grace") ?? DEFAULTS.leakGrace;
  duration("leak-grace", leakGrace, 0);
  return {
    ...(profileName === undefined ? {} : { profile: profileName as ProfileName }),
    trials: integer("trials", str("trials") ?? String(DEFAULTS.trials), 1, 10_000),
    seed,
    randomSeed: seedText === undefined,
    firstTrial: integer("first-trial", str("first-trial") ?? "1", 1, 1_000_000),
    shapes: integer("shapes", str("shapes") ?? String(DEFAULTS.shapes), 1, 500),
    durationMs: duration("duration", str("duration") ?? DEFAULTS.duration, 1_000),
    settleTimeoutMs: duration("settle-timeout", str("settle-timeout") ?? DEFAULTS.settleTimeout, 1_000),
    topology: topology as TopologyChoice,
    faults: faults as FaultKind[],
    json: str("json"),
    keepLogs: values["keep-logs"] === true,
    logLevel,
    leakGrace,
  };
}

/** A profile's values, as `--help` shows them. */
function profileText(name: ProfileName): string {
  const p = PROFILES[name];
  return `--trials ${p.trials} --seed ${p.seed} --shapes ${p.shapes} --duration ${p.duration} --faults ${p.faults.join(",")}`;
}

/** The topology of trial `trial` (1-based): with `mixed`, each topology in turn. */
export function topologyOf(choice: TopologyChoice, trial: number): Topology {
  if (choice !== "mixed") return choice;
  return TOPOLOGIES[(trial - 1) % TOPOLOGIES.length] as Topology;
}

function integer(flag: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(
      `cannot use --${flag} ${JSON.stringify(text)}: it must be a whole number from ${min} to ${max}`,
    );
  }
  return n;
}

function duration(flag: string, text: string, min: number): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms < min) {
    throw new UsageError(
      `cannot use --${flag} ${JSON.stringify(text)}: it must be a duration like 500ms, 40s or 2m (at least ${min} ms)`,
    );
  }
  return ms;
}

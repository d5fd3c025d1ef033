/**
 * The command line of `npm run crash-points` (util.parseArgs): flags, `--help`, and one-line errors for
 * bad values. Pure: `parseCrashArgs(argv)` returns the options or throws a UsageError.
 */
import { parseArgs } from "node:util";
import { LIFECYCLES, TAP_FAULTS, type TapFault } from "reconcile-kit/crash-points";

/** The subjects the explorer can run: the Shapes controller, the DNS example and the etcd example. */
export const SUBJECTS = ["shapes", "dns", "etcd"] as const;
export type SubjectName = (typeof SUBJECTS)[number];
/** The subjects of a run without --subject: those docs/crash-points.md reports. */
export const DEFAULT_SUBJECTS: readonly SubjectName[] = ["shapes", "dns"];

/** A bad command line: the message is for people, one line. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Everything a run is told. */
export interface CrashOptions {
  subjects: SubjectName[];
  lifecycles: string[] | undefined;
  faults: TapFault[];
  sample: boolean;
  /** Where the JSON results go; undefined: crash-points/results/<time>.json. */
  json: string | undefined;
  /** Rewrite the generated part of docs/crash-points.md. */
  writeDocs: boolean;
  /** Run nothing: rewrite the page from this results file of an earlier run. */
  render: string | undefined;
  stepTimeoutMs: number;
}

/** The `--help` text. */
export function usage(): string {
  const lifecycles = LIFECYCLES.map((l) => `  ${l.id.padEnd(18)}${l.title}`).join("\n");
  return `npm run crash-points -- [flags]

The crash explorer. For each lifecycle of a managed resource it records every write the controller makes
(to Kubernetes and to the external API), then runs the lifecycle again once per write and fault: a SIGKILL
before the write reaches the server (crash-before), a SIGKILL after the server committed it but before the
controller hears the answer (crash-after), the write failing with a 503 (fail), and the write committed but
its answer lost to a reset connection (answer-lost). After every step it checks: converged within a bound,
Ready/Synced true, no external object created twice, nothing leaked, nothing foreign written, nothing stuck.
Each subject runs on its own fresh local control plane. Exit code: 0 no violation, 1 violations or a harness
error, 2 bad command line.

Flags:
  --subject S,S       shapes, dns, etcd (default: shapes, dns, the subjects of docs/crash-points.md)
  --lifecycle L,L     only these lifecycles (default: all):
${lifecycles}
  --fault F,F         only these faults: ${TAP_FAULTS.join(", ")} (default: all)
  --sample            one point per lifecycle (what npm test runs) instead of every point
  --step-timeout D    seconds a step may take to converge (default 60)
  --json FILE         write the results there (default crash-points/results/<time>.json)
  --write-docs        rewrite the generated part of docs/crash-points.md from this run
  --render FILE       run nothing: rewrite that part from the results file of an earlier run
  -h, --help          this text

Examples:
  npm run crash-points                                   # the full run, shapes and dns (about an hour)
  npm run crash-points -- --subject dns --lifecycle delete --fault crash-after
  npm run crash-points -- --sample                       # one point per lifecycle, a few minutes
`;
}

function list<T extends string>(
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
): T[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);
  for (const item of items) {
    if (!allowed.includes(item as T)) {
      throw new UsageError(`--${flag}: unknown "${item}" (one of ${allowed.join(", ")})`);
    }
  }
  if (items.length === 0) throw new UsageError(`--${flag}: give at least one of ${allowed.join(", ")}`);
  return items as T[];
}

/** Parses the command line; "help" for --help. */
export function parseCrashArgs(argv: readonly string[]): CrashOptions | "help" {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        subject: { type: "string" },
        lifecycle: { type: "string" },
        fault: { type: "string" },
        sample: { type: "boolean" },
        "step-timeout": { type: "string" },
        json: { type: "string" },
        "write-docs": { type: "boolean" },
        render: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    // parseArgs may say it in three lines (a value starting with a dash): the first says what is wrong.
    throw new UsageError((error as Error).message.split("\n")[0] ?? "bad command line");
  }
  if (values.help) return "help";
  const timeout = values["step-timeout"] ?? "60";
  const seconds = Number(timeout);
  if (!/^\d+$/.test(timeout) || seconds < 1 || seconds > 3600) {
    throw new UsageError(`--step-timeout: "${timeout}" is not a whole number of seconds from 1 to 3600`);
  }
  if (values["write-docs"] && (values.sample || values.lifecycle || values.fault || values.subject)) {
    throw new UsageError(
      "--write-docs takes the full run only (no --sample, --subject, --lifecycle or --fault)",
    );
  }
  if (values.render !== undefined && Object.keys(values).some((k) => k !== "render")) {
    throw new UsageError("--render takes no other flag: it runs nothing");
  }
  return {
    render: values.render,
    subjects: list("subject", values.subject, SUBJECTS) ?? [...DEFAULT_SUBJECTS],
    lifecycles: list(
      "lifecycle",
      values.lifecycle,
      LIFECYCLES.map((l) => l.id),
    ),
    faults: list("fault", values.fault, TAP_FAULTS) ?? [...TAP_FAULTS],
    sample: values.sample ?? false,
    json: values.json,
    writeDocs: values["write-docs"] ?? false,
    stepTimeoutMs: seconds * 1000,
  };
}

/**
 * The command lines of `npm start` (start.ts) and `npm run tour` (tour.ts): flags, defaults, `--help`
 * texts, and errors a person can act on. Pure functions, so the tests can call them directly.
 */
import { parseArgs } from "node:util";
import { STATE_DIR_ENV, stateDirFrom } from "./paths.ts";

/** A bad command line: the message starts with "cannot" and says which flag and why. Exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** What `npm start` was asked to do. */
export interface StartOptions {
  /** The state folder (absolute). */
  stateDir: string;
  /** The mock cloud's port; 0 picks a free one. */
  port: number;
  /** The controller's /healthz, /readyz, /metrics port; 0 picks a free one. */
  metricsPort: number;
  /** The two-worlds page's port (127.0.0.1 only); 0 picks a free one. */
  viewPort: number;
  /** The controller's --log-level. */
  logLevel: LogLevel;
}

/** What `npm run tour` was asked to do. */
export interface TourOptions {
  stateDir: string;
  /** Run only this step (1-based); undefined: every step. */
  step: number | undefined;
  /** Print the steps and exit. */
  list: boolean;
  /** Never pause for Enter (pausing happens only on a terminal anyway). */
  yes: boolean;
  /** How long to wait for each thing the controller should do. */
  timeoutMs: number;
  /** Leave the tour's namespace and objects in place afterwards, to look at them. */
  keep: boolean;
}

/** A parse result: the options, or a request for help. */
export type Parsed<T> = { help: true } | { help: false; options: T };

/** The controller's log levels. */
export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error"] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The cloud's default port (the console's URL is http://127.0.0.1:8080/). */
export const DEFAULT_CLOUD_PORT = 8080;
/** The controller's default metrics port (its own default, 127.0.0.1:8081). */
export const DEFAULT_METRICS_PORT = 8081;
/** The two-worlds page's default port. */
export const DEFAULT_VIEW_PORT = 8082;
/** The tour's default deadline for each wait, in seconds. */
export const DEFAULT_TOUR_TIMEOUT_S = 60;

/** `npm start --help`. */
export const START_USAGE = `Usage: npm start -- [options]

Runs the whole Shapes demo on this machine, without Docker, until Ctrl-C:
  1. Kubernetes: a local control plane (etcd + kube-apiserver, built from Go modules on first use, then
     cached; data in <state-dir>/cluster), or your cluster when KUBECONFIG is set;
  2. the Shape and ShapeRef CRDs, deploy/namespace.yaml and deploy/rbac.yaml;
  3. the mock Shapes cloud (database in <state-dir>/cloud) with its console at http://127.0.0.1:<port>/;
  4. the controller as its own process, running as the least-privilege service account
     shapes-system/shapes-controller (log: <state-dir>/logs/controller.log);
  5. the two-worlds page at http://127.0.0.1:<view-port>/: Kubernetes and the cloud side by side, live,
     with the controller's decisions between them (its link carries a token: use the one it prints).
Then it prints what to try, and a feed of what the controller does. Ctrl-C (or SIGTERM) stops every
process it started; the data stays, and the next npm start resumes with it.

Options:
  --port <n>           The mock cloud's port (default ${DEFAULT_CLOUD_PORT}; 0 picks a free one).
  --metrics-port <n>   The controller's /metrics, /healthz and /readyz port (default ${DEFAULT_METRICS_PORT}; 0 picks one).
  --view-port <n>      The two-worlds page's port, on 127.0.0.1 (default ${DEFAULT_VIEW_PORT}; 0 picks one).
  --state-dir <path>   Where the demo keeps its data (default .demo/ in the repo; env ${STATE_DIR_ENV}).
  --log-level <level>  The controller's log level: ${LOG_LEVELS.join(", ")} (default info).
  -h, --help           Show this help.

Environment:
  KUBECONFIG            Use this cluster instead of starting one (the CRDs and RBAC are installed there).
  USE_EXISTING_CLUSTER  false: start the local control plane even when KUBECONFIG is set.
  KUBEBUILDER_ASSETS    A folder with etcd and kube-apiserver to use instead of building them.

Next to it:
  npm run tour                 A guided tour of the scenarios, against the running demo.
  npm run kubectl -- <args>    kubectl (built with the control plane) against the demo's cluster.
`;

/** `npm run tour -- --help`. */
export function tourUsage(steps: readonly { title: string }[]): string {
  return `Usage: npm run tour -- [options]

A guided tour of bidirectional reconciliation, against the demo that \`npm start\` runs (start it first,
in another terminal). Each step does what a person or another system would do, waits for the controller
to react, and shows the evidence: Kubernetes Events, Shape conditions, ShapeRefs and the cloud's state.
The tour works in a namespace of its own and deletes it (and its cloud shapes) at the end.

Steps:
${steps.map((s, i) => `  ${i + 1}. ${s.title}`).join("\n")}

Options:
  --step <n>          Run only step n.
  --list              List the steps and exit.
  --yes, -y           Run straight through (it pauses for Enter between steps only on a terminal).
  --timeout <s>       How long to wait for each reaction of the controller (default ${DEFAULT_TOUR_TIMEOUT_S}).
  --keep              Leave the tour's namespace and shapes in place afterwards, to look at them.
  --state-dir <path>  The running demo's state folder (default .demo/ in the repo; env ${STATE_DIR_ENV}).
  -h, --help          Show this help.
`;
}

/** Parses `npm start`'s flags. Throws UsageError. */
export function parseStartArgs(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<StartOptions> {
  const values = parse(argv, {
    port: { type: "string" },
    "metrics-port": { type: "string" },
    "view-port": { type: "string" },
    "state-dir": { type: "string" },
    "log-level": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help === true) return { help: true };
  const logLevel = str(values["log-level"]) ?? "info";
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new UsageError(`cannot use --log-level ${logLevel}: use one of ${LOG_LEVELS.join(", ")}`);
  }
  return {
    help: false,
    options: {
      stateDir: stateDirFrom(nonEmpty("--state-dir", str(values["state-dir"])), env),
      port: portOf("--port", str(values.port), DEFAULT_CLOUD_PORT),
      metricsPort: portOf("--metrics-port", str(values["metrics-port"]), DEFAULT_METRICS_PORT),
      viewPort: portOf("--view-port", str(values["view-port"]), DEFAULT_VIEW_PORT),
      logLevel: logLevel as LogLevel,
    },
  };
}

/** Parses `npm run tour`'s flags against a tour of `stepCount` steps. Throws UsageError. */
export function parseTourArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  stepCount: number,
): Parsed<TourOptions> {
  const values = parse(argv, {
    step: { type: "string" },
    list: { type: "boolean" },
    yes: { type: "boolean", short: "y" },
    timeout: { type: "string" },
    keep: { type: "boolean" },
    "state-dir": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help === true) return { help: true };
  let step: number | undefined;
  const rawStep = str(values.step);
  if (rawStep !== undefined) {
    step = Number(rawStep);
    if (!Number.isInteger(step) || step < 1 || step > stepCount) {
      throw new UsageError(`cannot run --step ${rawStep}: the tour has steps 1 to ${stepCount} (see --list)`);
    }
  }
  let timeoutS = DEFAULT_TOUR_TIMEOUT_S;
  const rawTimeout = str(values.timeout);
  if (rawTimeout !== undefined) {
    timeoutS = Number(rawTimeout);
    if (!Number.isFinite(timeoutS) || timeoutS <= 0) {
      throw new UsageError(`cannot use --timeout ${rawTimeout}: give a number of seconds above 0`);
    }
  }
  return {
    help: false,
    options: {
      stateDir: stateDirFrom(nonEmpty("--state-dir", str(values["state-dir"])), env),
      step,
      list: values.list === true,
      yes: values.yes === true,
      timeoutMs: Math.round(timeoutS * 1000),
      keep: values.keep === true,
    },
  };
}

type Spec = Record<string, { type: "string" | "boolean"; short?: string }>;

function parse(argv: readonly string[], options: Spec): Record<string, string | boolean | undefined> {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options,
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length > 0) {
      throw new UsageError(`cannot understand "${positionals.join(" ")}": this command takes only flags`);
    }
    return values;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    // node:util's messages are good ("Unknown option '--x'"); say it our way, with the way out.
    throw new UsageError(`cannot parse the command line: ${(error as Error).message} (see --help)`);
  }
}

function str(value: string | boolean | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function nonEmpty(flag: string, value: string | undefined): string | undefined {
  if (value !== undefined && value.trim() === "") throw new UsageError(`cannot use an empty ${flag}`);
  return value;
}

function portOf(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const port = Number(value);
  if (value.trim() === "" || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(
      `cannot use ${flag} ${value}: give a port number from 0 to 65535 (0: any free port)`,
    );
  }
  return port;
}

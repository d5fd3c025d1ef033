/**
 * The command line of the mock cloud: flags (node's util.parseArgs), each also settable by an environment
 * variable (a flag wins over its variable). Pure: `parseCommandLine` reads only its arguments (and the
 * token file, when one is named), so tests call it directly.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { DEFAULTS } from "./options.ts";
import { CLOUD_TRACING_HELP } from "./tracing.ts";

/** A bad command line: the CLI prints the message and exits 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** The CLI's default port (the library's default is 0: any free port). */
export const CLI_DEFAULT_PORT = 8080;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

interface FlagSpec {
  readonly flag: string;
  readonly env: string;
  readonly value: string;
  readonly help: string;
  readonly default?: string;
}

const FLAGS: readonly FlagSpec[] = [
  {
    flag: "port",
    env: "CLOUD_PORT",
    value: "N",
    default: String(CLI_DEFAULT_PORT),
    help: "port to listen on (0: any free port)",
  },
  { flag: "host", env: "CLOUD_HOST", value: "ADDR", default: DEFAULTS.host, help: "interface to listen on" },
  {
    flag: "allowed-hosts",
    env: "CLOUD_ALLOWED_HOSTS",
    value: "NAMES",
    help: "host names, comma-separated, the routes without a token answer for besides localhost, IP addresses and --host (421 otherwise: no DNS rebinding)",
  },
  {
    flag: "db",
    env: "CLOUD_DB",
    value: "FILE",
    default: DEFAULTS.db,
    help: "SQLite file (created with its directory); :memory: keeps nothing",
  },
  {
    flag: "token",
    env: "CLOUD_TOKEN",
    value: "T",
    help: "bearer token of the API (required, or --token-file)",
  },
  {
    flag: "token-file",
    env: "CLOUD_TOKEN_FILE",
    value: "FILE",
    help: "read the token from FILE (surrounding whitespace trimmed)",
  },
  {
    flag: "admin-token",
    env: "CLOUD_ADMIN_TOKEN",
    value: "T",
    default: "none: /admin/* answers 401",
    help: "bearer token of /admin/* (faults, request log); best not the API token",
  },
  {
    flag: "admin-token-file",
    env: "CLOUD_ADMIN_TOKEN_FILE",
    value: "FILE",
    help: "read the admin token from FILE (surrounding whitespace trimmed)",
  },
  {
    flag: "history",
    env: "CLOUD_HISTORY",
    value: "N",
    default: String(DEFAULTS.historyLimit),
    help: "changes kept for watch resume (older: 410 Gone)",
  },
  {
    flag: "heartbeat-ms",
    env: "CLOUD_HEARTBEAT_MS",
    value: "MS",
    default: String(DEFAULTS.heartbeatMs),
    help: "interval of the watch's heartbeat comments",
  },
  {
    flag: "request-log",
    env: "CLOUD_REQUEST_LOG",
    value: "N",
    default: String(DEFAULTS.requestLogLimit),
    help: "writes kept in GET /admin/requests",
  },
  {
    flag: "body-limit",
    env: "CLOUD_BODY_LIMIT",
    value: "BYTES",
    default: String(DEFAULTS.bodyLimitBytes),
    help: "largest request body (413 beyond)",
  },
  {
    flag: "log-level",
    env: "CLOUD_LOG_LEVEL",
    value: "LEVEL",
    default: "info",
    help: `${LOG_LEVELS.join("|")} (debug logs every request)`,
  },
];

/** The `--help` text. */
export function helpText(): string {
  const rows = FLAGS.map((f) => {
    const left = `  --${f.flag} ${f.value}`.padEnd(26);
    const dflt = f.default === undefined ? "" : ` [default: ${f.default}]`;
    return `${left}${f.help}${dflt}\n${" ".repeat(26)}env ${f.env}`;
  });
  return [
    "Usage: npm run cloud -- [flags]      (or: node mock-cloud/src/cli.ts [flags])",
    "",
    "Runs the mock Shapes cloud API. Every flag can also be set by its environment variable; a flag wins.",
    "",
    ...rows,
    `  --help, -h`.padEnd(26) + "show this help",
    "",
    "Example: npm run cloud -- --port 8080 --db ./data/cloud.db --token secret",
    "The API is described at /openapi.json; see mock-cloud/README.md.",
    "",
    CLOUD_TRACING_HELP,
  ].join("\n");
}

/** What the command line asks for. */
export type CommandLine =
  | { readonly kind: "help" }
  | {
      readonly kind: "run";
      readonly port: number;
      readonly host: string;
      readonly allowedHosts: readonly string[];
      readonly db: string;
      readonly token: string;
      readonly adminToken: string | undefined;
      readonly historyLimit: number;
      readonly heartbeatMs: number;
      readonly requestLogLimit: number;
      readonly bodyLimitBytes: number;
      readonly logLevel: LogLevel;
    };

/** Parses `argv` (without node and the script) and `env`. Throws `UsageError` with a one-line message. */
export function parseCommandLine(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): CommandLine {
  let values: Record<string, string | boolean | undefined>;
  try {
    const options = Object.fromEntries(FLAGS.map((f) => [f.flag, { type: "string" as const }]));
    values = parseArgs({
      args: [...argv],
      options: { ...options, help: { type: "boolean", short: "h" } },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    throw new UsageError(
      `cannot parse the command line: ${(err as Error).message.split("\n")[0] ?? ""} (see --help)`,
    );
  }
  if (values.help === true) return { kind: "help" };

  const get = (flag: string): { value: string; source: string } | undefined => {
    const spec = FLAGS.find((f) => f.flag === flag);
    const v = values[flag];
    if (typeof v === "string") return { value: v, source: `--${flag}` };
    const e = spec ? env[spec.env] : undefined;
    if (e !== undefined && e !== "") return { value: e, source: spec?.env ?? flag };
    return undefined;
  };
  const int = (flag: string, dflt: number, min: number, max: number): number => {
    const v = get(flag);
    if (!v) return dflt;
    if (!/^\d+$/.test(v.value) || Number(v.value) < min || Number(v.value) > max) {
      throw new UsageError(
        `cannot use ${v.source}=${JSON.stringify(v.value)}: expected an integer from ${min} to ${max}`,
      );
    }
    return Number(v.value);
  };

  const logLevel = get("log-level")?.value ?? "info";
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new UsageError(
      `cannot use log level ${JSON.stringify(logLevel)}: expected one of ${LOG_LEVELS.join(", ")}`,
    );
  }
  const host = get("host")?.value ?? DEFAULTS.host;
  const allowedHosts = hostNames(get("allowed-hosts"));
  const db = get("db")?.value ?? DEFAULTS.db;
  const token = readToken(values, env, "token", "CLOUD_TOKEN");
  if (token === undefined) {
    throw new UsageError(
      "cannot start the mock cloud without a token: pass --token T or --token-file FILE (or set CLOUD_TOKEN / CLOUD_TOKEN_FILE)",
    );
  }
  const adminToken = readToken(values, env, "admin-token", "CLOUD_ADMIN_TOKEN");
  return {
    kind: "run",
    port: int("port", CLI_DEFAULT_PORT, 0, 65535),
    host,
    allowedHosts,
    db,
    token,
    adminToken,
    historyLimit: int("history", DEFAULTS.historyLimit, 1, 10_000_000),
    heartbeatMs: int("heartbeat-ms", DEFAULTS.heartbeatMs, 10, 3_600_000),
    requestLogLimit: int("request-log", DEFAULTS.requestLogLimit, 1, 1_000_000),
    bodyLimitBytes: int("body-limit", DEFAULTS.bodyLimitBytes, 1024, 100 * 1024 * 1024),
    logLevel: logLevel as LogLevel,
  };
}

/** A comma-separated list of host names, blanks dropped; a name with a port, or no name, is a UsageError. */
function hostNames(given: { value: string; source: string } | undefined): string[] {
  const names = (given?.value ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  for (const name of names) {
    if (!/^[A-Za-z0-9_][A-Za-z0-9._-]{0,252}$/.test(name)) {
      throw new UsageError(
        `cannot use ${given?.source ?? "--allowed-hosts"}: ${JSON.stringify(name)} is not a host name (letters, digits, '.', '-', '_'; no port: every port is answered)`,
      );
    }
  }
  return names;
}

/**
 * A token: `--<flag>`, else `--<flag>-file`, else `<VAR>`, else `<VAR>_FILE` (`--token`, `--token-file`,
 * `CLOUD_TOKEN`, `CLOUD_TOKEN_FILE`); undefined when none is given. Empty values count as not given.
 */
function readToken(
  values: Record<string, string | boolean | undefined>,
  env: Readonly<Record<string, string | undefined>>,
  flag: string,
  variable: string,
): string | undefined {
  const candidates: [string, string | undefined, boolean][] = [
    [`--${flag}`, values[flag] as string | undefined, false],
    [`--${flag}-file`, values[`${flag}-file`] as string | undefined, true],
    [variable, env[variable], false],
    [`${variable}_FILE`, env[`${variable}_FILE`], true],
  ];
  for (const [source, value, isFile] of candidates) {
    if (value === undefined || value === "") continue;
    let token = value;
    if (isFile) {
      try {
        token = readFileSync(value, "utf8").trim();
      } catch (err) {
        throw new UsageError(
          `cannot read the token file ${value} (${source}): ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
        );
      }
    }
    if (token === "" || /\s/.test(token)) {
      throw new UsageError(`cannot use the token from ${source}: it is empty or contains whitespace`);
    }
    return token;
  }
  return undefined;
}

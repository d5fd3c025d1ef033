/**
 * The manager's command line: the library's own flags (Kubernetes access, the metrics server and its auth,
 * leader election and the ring, the owner id, the controllers' timings, the log level), each also an
 * environment variable, plus the ones a plugin adds (its external API). One parser, one `--help`.
 */
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { METRICS_AUTH_MODES, type MetricsAuthMode } from "../kube/access-review.ts";
import { parseAllowedHosts } from "../observability/health.ts";
import { TRACING_HELP } from "../observability/tracing.ts";

/** One flag: `--<flag>`, or the environment variable `<env>`; the flag wins. */
export interface FlagSpec {
  /** The flag's name without `--`. */
  readonly flag: string;
  /** The environment variable read when the flag is not given (an empty value counts as not set). */
  readonly env: string;
  /** One line for `--help`. */
  readonly help: string;
  /** The value when neither the flag nor the variable is set. */
  readonly default?: string;
  /**
   * A boolean: `--<flag>` alone is true, `--no-<flag>` false, `--<flag>=true|false|1|0` either. Read it
   * with {@link FlagReader.bool}.
   */
  readonly boolean?: boolean;
}

/**
 * A configuration error: one line for a person (it names the flag and what it must be), no stack trace.
 * The manager prints it as `<name>: <message>` and exits 2.
 */
export class ConfigError extends Error {
  /** The error's name, for a log line: `ConfigError`. */
  override name = "ConfigError";
}

/**
 * Reads the flags of a command line, each with its environment variable and default. Every method throws
 * {@link ConfigError} with a line naming the flag when the value is not what it must be.
 */
export interface FlagReader {
  /** The raw value: the flag, else the variable (unless empty), else the default; undefined when none. */
  get(flag: string): string | undefined;
  /** A duration (`90s`, `5m`, `1h`, `250ms`, or plain milliseconds) of at least `minMs`, in milliseconds. */
  duration(flag: string, minMs: number): number;
  /** A whole number from `min` to `max`. */
  integer(flag: string, min: number, max: number): number;
  /** A rate per second from 0 to `max`, decimals allowed. */
  rate(flag: string, max: number): number;
  /** true, false, 1, 0 (a boolean flag alone is true). */
  bool(flag: string): boolean;
  /** One of `allowed`. */
  oneOf<T extends string>(flag: string, allowed: readonly T[]): T;
  /** An owner id as a tag or label value: 1-63 letters, digits, '.', '_' or '-'. */
  ownerId(flag: string, id: string): string;
}

/** The library's defaults a plugin picks for its process. */
export interface ManagerDefaults {
  /** Namespace of the Lease, or of the ring's Leases (the plugin's RBAC must grant Leases there). */
  readonly leaderElectionNamespace: string;
  /** Name of the Lease, or of the ring (its members' Leases are `<name>-<identity>`). */
  readonly leaderElectionName: string;
  /** `--adopt-owner-ids`'s default: owner ids of earlier versions. Default: none. */
  readonly adoptOwnerIds?: string;
}

/**
 * What a plugin tells the manager about its command line.
 *
 * # Assumptions
 * The plugin's flags and variables share no name with the library's (`managerUsage` lists both), and its
 * `parse` reports a bad value by throwing {@link ConfigError} (the {@link FlagReader} does so for it).
 */
export interface ManagerFlags<P> {
  /** The process's name: the logger's, the tracing service's, and the prefix of its one-line errors. */
  readonly name: string;
  /** How the process is started, for the first line of `--help` (e.g. `npm run controller -- [options]`). */
  readonly command: string;
  /** What the process does, one sentence under the usage line. */
  readonly summary: string;
  /**
   * The resource the controllers reconcile. `group` names the ring's label (`<group>/ring`) and view
   * annotation (`<group>/ring-view`); `group` and `resource` (the plural) are what `/why/<namespace>/<name>`
   * asks the API server whether a caller may get, with `--metrics-auth` on.
   */
  readonly resource: {
    readonly group: string;
    readonly resource: string;
    /** The resources as `--help` and the log lines name them, plural (e.g. "Records"). */
    readonly title: string;
  };
  /** The library's defaults this process picks (its Lease's namespace and name). */
  readonly defaults: ManagerDefaults;
  /** The plugin's own flags, in `--help` order; none may share a name with the library's. */
  readonly options: readonly FlagSpec[];
  /** Reads the plugin's settings; throws {@link ConfigError} (through the reader) for a bad value. */
  parse(read: FlagReader): P;
  /** Text for the end of `--help` (where to look next). */
  readonly footer?: string;
}

/**
 * The library's settings, validated.
 *
 * # Guarantees
 * As {@link parseManagerFlags} returns it: `workers` is 1 to 64; `resyncPeriodMs` at least 1 s; the owner
 * ids are valid tag or label values and `adoptOwnerIds` leaves out `ownerId`; `sharding` and `leaderElect`
 * are never both true; `leaseDurationMs` is whole seconds and greater than `renewDeadlineMs`, which is
 * greater than 1.2 × `retryPeriodMs` (so two leaders never write at once).
 */
export interface ManagerConfig {
  /** Path of a kubeconfig; undefined: in-cluster when running in a Pod, else the default loading rules. */
  kubeconfig: string | undefined;
  /**
   * The owner mark on the external objects we own; undefined: derived from the cluster's identity at
   * startup (kube/cluster-identity.ts), the default.
   */
  ownerId: string | undefined;
  /** Owner ids of earlier versions: their objects that match a resource by name and uid are retagged to ours. */
  adoptOwnerIds: string[];
  /** Reconciles at once, per controller (`--workers`). */
  workers: number;
  /** How often every object is reconciled again, whatever the events (`--resync-period`). */
  resyncPeriodMs: number;
  /** How long an unclaimed external object of ours waits before the sweep deletes it (`--leak-grace`). */
  leakGraceMs: number;
  /** Delete external objects even while the resource's CRD is being deleted (an uninstall); default: release them. */
  deleteOnUninstall: boolean;
  /** Run as the leader of a Lease only, the other replicas on standby (`--leader-elect`); excludes sharding. */
  leaderElect: boolean;
  /** Split the resources among the replicas by a ring of Leases; excludes leader election. */
  sharding: boolean;
  /** With sharding: `auto` asks the API server to filter the resources' list and watch when it can; `client`: never. */
  shardFilter: "auto" | "client";
  /** Namespace of the Lease, or of the ring's Leases. */
  leaderElectionNamespace: string;
  /** Name of the Lease, or of the ring. */
  leaderElectionName: string;
  /** This replica's identity in the Lease (and the external API's client id, if the plugin wants it). */
  identity: string;
  /** Where /metrics, /healthz, /readyz and /why listen: `host:port` (`--metrics-address`). */
  metricsAddress: string;
  /**
   * Who may read /metrics and /why (kube/access-review.ts): `kubernetes`, a bearer token the API server
   * authenticates of a user it allows; `none`, whoever reaches the port; `auto`, `kubernetes` in a cluster
   * on the pod's service account, else `none`.
   */
  metricsAuth: MetricsAuthMode;
  /** With the port open: host names it answers for besides localhost, IP addresses and its own host. */
  metricsAllowedHosts: string[];
  /** The log level: pino's (`info`, `debug`, …). */
  logLevel: string;
  /** Leader election timings (client-go's defaults: 15 s, 10 s, 2 s); the ring's Leases use them too. */
  leaseDurationMs: number;
  /** How long a leader tries to renew before it gives up leadership. */
  renewDeadlineMs: number;
  /** How often a candidate tries to take the Lease, and a leader renews it. */
  retryPeriodMs: number;
}

/** A parsed command line: the library's settings and the plugin's. */
export interface ParsedFlags<P> {
  /** The library's settings. */
  manager: ManagerConfig;
  /** The plugin's settings, as its `parse` returned them. */
  plugin: P;
}

/** The library's flags for a plugin's defaults, in `--help` order. */
export function managerOptions<P>(flags: Pick<ManagerFlags<P>, "resource" | "defaults">): FlagSpec[] {
  const { group, resource, title } = flags.resource;
  const { leaderElectionNamespace, leaderElectionName, adoptOwnerIds } = flags.defaults;
  return [
    {
      flag: "kubeconfig",
      env: "KUBECONFIG",
      help: "kubeconfig file (default: KUBECONFIG's files merged, else in-cluster, else ~/.kube/config)",
    },
    {
      flag: "owner-id",
      env: "OWNER_ID",
      help: "value of the owner mark on the external objects we own (default: k8s-<uid of the kube-system namespace>, one per cluster)",
    },
    {
      flag: "adopt-owner-ids",
      env: "ADOPT_OWNER_IDS",
      ...(adoptOwnerIds !== undefined ? { default: adoptOwnerIds } : {}),
      help: "comma-separated owner ids of earlier versions: their objects whose name and uid mark match a local resource are retagged to ours (--adopt-owner-ids= for none)",
    },
    // A reconcile mostly waits on the two APIs, so more of them at once is cheap: measured with 1,000 Shapes
    // (docs/benchmarks.md, the `workers-4` column), 16 converged much faster than 4 on the same machine.
    { flag: "workers", env: "WORKERS", default: "16", help: "concurrent reconciles (1-64)" },
    {
      flag: "resync-period",
      env: "RESYNC_PERIOD",
      default: "5m",
      help: "full resync period, with jitter (e.g. 30s, 5m)",
    },
    {
      flag: "leak-grace",
      env: "LEAK_GRACE",
      default: "60s",
      help: "how long an unclaimed owned external object waits before it is deleted",
    },
    {
      flag: "delete-on-uninstall",
      env: "DELETE_ON_UNINSTALL",
      default: "false",
      boolean: true,
      help: "delete external objects (deletionPolicy Delete) even while the resource's CRD is being deleted (an uninstall); by default they are released, not deleted: they stay, without our owner marks",
    },
    {
      flag: "leader-elect",
      env: "LEADER_ELECT",
      default: "false",
      boolean: true,
      help: "hold a Lease before writing (for several replicas)",
    },
    {
      flag: "sharding",
      env: "SHARDING",
      default: "false",
      boolean: true,
      help: `split the ${title} among the replicas: each holds a Lease of its own, labelled ${group}/ring=<--leader-election-name>, and reconciles the ${title} whose uid hashes into its part of the ring (instead of --leader-elect)`,
    },
    {
      flag: "shard-filter",
      env: "SHARD_FILTER",
      default: "auto",
      help: `with --sharding, who filters the ${title} by hash: auto (the API server when its ShardedListAndWatch feature is on, else this replica) or client (always this replica)`,
    },
    {
      flag: "leader-election-namespace",
      env: "LEADER_ELECTION_NAMESPACE",
      default: leaderElectionNamespace,
      help: "namespace of the Lease, or of the ring's Leases (the controller's RBAC grants Leases there)",
    },
    {
      flag: "leader-election-name",
      env: "LEADER_ELECTION_NAME",
      default: leaderElectionName,
      help: "name of the Lease, or of the ring (its Leases are named <name>-<identity>)",
    },
    {
      flag: "lease-duration",
      env: "LEASE_DURATION",
      default: "15s",
      help: "how long a standby waits after the last renewal before taking the Lease over",
    },
    {
      flag: "renew-deadline",
      env: "RENEW_DEADLINE",
      default: "10s",
      help: "how long the leader keeps writing without a successful renewal",
    },
    {
      flag: "retry-period",
      env: "RETRY_PERIOD",
      default: "2s",
      help: "time between Lease renewals and attempts",
    },
    {
      flag: "identity",
      env: "POD_NAME",
      help: "this replica's identity in the Lease (default: hostname-pid)",
    },
    {
      flag: "metrics-address",
      env: "METRICS_ADDRESS",
      default: "127.0.0.1:8081",
      help: "host:port for /healthz, /readyz, /metrics, /why (port 0: any)",
    },
    // controller-runtime's secure metrics (filters.WithAuthenticationAndAuthorization), on by default where the
    // port can be reached by other pods (in a cluster) and off where it listens on loopback (a laptop, the demo).
    {
      flag: "metrics-auth",
      env: "METRICS_AUTH",
      default: "auto",
      help: `who may read /metrics and /why: kubernetes (a bearer token, checked by TokenReview and SubjectAccessReview: /metrics needs get on the non-resource URL /metrics, /why/<namespace>/<name> get on that ${resource}.${group}; /healthz and /readyz stay open), none (whoever reaches the port), or auto (kubernetes when running in a cluster on the pod's service account, else none)`,
    },
    // Without a token, the port answers only for its own names: a web page cannot read it through DNS rebinding.
    {
      flag: "metrics-allowed-hosts",
      env: "METRICS_ALLOWED_HOSTS",
      help: "while /metrics and /why ask for no token (--metrics-auth none, or auto outside a cluster): host names, comma-separated, the port answers for besides localhost, IP addresses and the --metrics-address host (e.g. a Service's name a scraper uses); a request for another Host is answered 421 Misdirected Request, against DNS rebinding",
    },
    { flag: "log-level", env: "LOG_LEVEL", default: "info", help: "trace, debug, info, warn, error" },
  ];
}

/** Every flag of a plugin's process, the plugin's first, in `--help` order. */
export function allOptions<P>(flags: ManagerFlags<P>): FlagSpec[] {
  return [...flags.options, ...managerOptions(flags)];
}

/** The text of `--help`: the plugin's flags, the library's, tracing's variables, the plugin's footer. */
export function managerUsage<P>(flags: ManagerFlags<P>): string {
  const rows = (options: readonly FlagSpec[]) =>
    options.map((o) => {
      const flag = o.boolean ? `--[no-]${o.flag}[=true|false]` : `--${o.flag} VALUE`;
      const def = o.default === undefined ? "" : ` [default: ${o.default}]`;
      return `  ${flag.padEnd(40)} ${o.help}${def}\n  ${"".padEnd(40)} env: ${o.env}\n`;
    });
  return [
    `Usage: ${flags.command}\n\n${flags.summary}\n\n`,
    `Options (each also by environment variable):\n`,
    ...rows(flags.options),
    `\nThe manager's options (reconcile-kit: Kubernetes, metrics, leader election and sharding, the controllers):\n`,
    ...rows(managerOptions(flags)),
    `  --help${"".padEnd(34)} show this help\n\n${TRACING_HELP}`,
    flags.footer ?? "",
  ].join("");
}

/**
 * Parses a command line and its environment: the library's flags and the plugin's (`flags.parse`).
 *
 * # Guarantees
 * - A flag wins over its environment variable; an empty variable counts as unset.
 * - `--help` anywhere answers `"help"` before anything is checked.
 * - Every bad value, unknown flag or contradiction (`--sharding` with `--leader-elect`; Lease timings where
 *   two leaders could write at once) throws {@link ConfigError} with one line naming the flag.
 *
 * # Errors
 * Only {@link ConfigError}, unless `flags.parse` throws something else.
 */
export function parseManagerFlags<P>(
  flags: ManagerFlags<P>,
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): ParsedFlags<P> | "help" {
  const options = allOptions(flags);
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv.map((arg) => booleanAlone(options, arg)),
      options: {
        help: { type: "boolean" },
        ...Object.fromEntries(options.map((o) => [o.flag, { type: "string" as const }])),
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new ConfigError(`cannot parse the command line: ${(err as Error).message} (see --help)`);
  }
  if (values.help) return "help";
  const read = flagReader(options, values, env);
  const plugin = flags.parse(read);
  return { manager: managerConfig(read, flags.defaults), plugin };
}

function managerConfig(read: FlagReader, defaults: ManagerDefaults): ManagerConfig {
  const ownerId = read.get("owner-id") || undefined;
  if (ownerId !== undefined) read.ownerId("owner-id", ownerId);
  const adoptOwnerIds = (read.get("adopt-owner-ids") ?? "")
    .split(",")
    .map((id) => id.trim())
    .filter((id) => id !== "" && id !== ownerId)
    .map((id) => read.ownerId("adopt-owner-ids", id));
  const config: ManagerConfig = {
    kubeconfig: read.get("kubeconfig") || undefined,
    ownerId,
    adoptOwnerIds,
    workers: read.integer("workers", 1, 64),
    resyncPeriodMs: read.duration("resync-period", 1_000),
    leakGraceMs: read.duration("leak-grace", 0),
    deleteOnUninstall: read.bool("delete-on-uninstall"),
    leaderElect: read.bool("leader-elect"),
    sharding: read.bool("sharding"),
    shardFilter: read.oneOf("shard-filter", ["auto", "client"]),
    leaderElectionNamespace: read.get("leader-election-namespace") ?? defaults.leaderElectionNamespace,
    leaderElectionName: read.get("leader-election-name") ?? defaults.leaderElectionName,
    identity: read.get("identity") ?? `${hostname()}-${process.pid}`,
    metricsAddress: address(read.get("metrics-address")),
    metricsAuth: read.oneOf("metrics-auth", METRICS_AUTH_MODES),
    metricsAllowedHosts: hostNames("metrics-allowed-hosts", read.get("metrics-allowed-hosts")),
    logLevel: read.oneOf("log-level", ["trace", "debug", "info", "warn", "error", "silent"]),
    ...leaderElectionTimings(read),
  };
  if (config.sharding && config.leaderElect) {
    throw new ConfigError(
      "cannot start: --sharding and --leader-elect exclude each other (every replica of a ring writes, each for its own part)",
    );
  }
  return config;
}

function leaderElectionTimings(
  read: FlagReader,
): Pick<ManagerConfig, "leaseDurationMs" | "renewDeadlineMs" | "retryPeriodMs"> {
  const leaseDurationMs = read.duration("lease-duration", 1_000);
  const renewDeadlineMs = read.duration("renew-deadline", 100);
  const retryPeriodMs = read.duration("retry-period", 50);
  if (leaseDurationMs % 1_000 !== 0) {
    throw new ConfigError("cannot start: --lease-duration must be whole seconds (the Lease stores seconds)");
  }
  if (!(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > 1.2 * retryPeriodMs)) {
    throw new ConfigError(
      "cannot start: leader election needs --lease-duration > --renew-deadline > 1.2 × --retry-period",
    );
  }
  return { leaseDurationMs, renewDeadlineMs, retryPeriodMs };
}

function flagReader(
  options: readonly FlagSpec[],
  values: Record<string, string | boolean | undefined>,
  env: NodeJS.ProcessEnv,
): FlagReader {
  const get = (flag: string): string | undefined => {
    const spec = options.find((o) => o.flag === flag);
    const fromFlag = values[flag];
    const raw =
      typeof fromFlag === "string" ? fromFlag : spec && env[spec.env] !== "" ? env[spec.env] : undefined;
    return raw ?? spec?.default;
  };
  return {
    get,
    duration(flag, min) {
      const text = get(flag);
      const ms = text === undefined ? undefined : parseDuration(text);
      if (ms === undefined || ms < min) {
        throw new ConfigError(
          `cannot start: --${flag} ${JSON.stringify(text)} must be a duration like 30s or 5m (at least ${min} ms)`,
        );
      }
      return ms;
    },
    integer(flag, min, max) {
      const text = get(flag);
      const n = Number(text);
      if (!Number.isInteger(n) || n < min || n > max) {
        throw new ConfigError(
          `cannot start: --${flag} ${JSON.stringify(text)} must be a whole number from ${min} to ${max}`,
        );
      }
      return n;
    },
    rate(flag, max) {
      const text = get(flag);
      const n = text !== undefined && /^\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : NaN;
      if (!(n <= max)) {
        throw new ConfigError(
          `cannot start: --${flag} ${JSON.stringify(text)} must be a number of calls per second from 0 (off) to ${max}`,
        );
      }
      return n;
    },
    bool(flag) {
      const text = get(flag);
      if (text === "true" || text === "1" || text === "") return true;
      if (text === "false" || text === "0") return false;
      throw new ConfigError(`cannot start: --${flag} ${JSON.stringify(text)} must be true or false`);
    },
    oneOf<T extends string>(flag: string, allowed: readonly T[]): T {
      const text = get(flag);
      const found = allowed.find((a) => a === text);
      if (found !== undefined) return found;
      throw new ConfigError(
        `cannot start: --${flag} ${JSON.stringify(text)} must be one of ${allowed.join(", ")}`,
      );
    },
    ownerId(flag, id) {
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(id)) {
        throw new ConfigError(
          `cannot start: --${flag} ${JSON.stringify(id)} must be 1-63 letters, digits, '.', '_' or '-'`,
        );
      }
      return id;
    },
  };
}

/**
 * A boolean flag alone means true, and with `no-` before its name false: `--leader-elect` is
 * `--leader-elect=true`, `--no-leader-elect` is `--leader-elect=false`. Anything else is left as it is.
 */
function booleanAlone(options: readonly FlagSpec[], arg: string): string {
  for (const o of options) {
    if (!o.boolean) continue;
    if (arg === `--${o.flag}`) return `${arg}=true`;
    if (arg === `--no-${o.flag}`) return `--${o.flag}=false`;
  }
  return arg;
}

/** `parseAllowedHosts`, its error a ConfigError. */
function hostNames(flag: string, text: string | undefined): string[] {
  try {
    return parseAllowedHosts(text ?? "");
  } catch (err) {
    throw new ConfigError(`cannot start: --${flag}: ${(err as Error).message}`);
  }
}

/** Parses `90s`, `5m`, `1h`, `250ms` (or plain milliseconds) into milliseconds; undefined if it is none. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) return undefined;
  const factor = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] ?? "ms"] ?? 1;
  return Math.round(Number(m[1]) * factor);
}

function address(text: string | undefined): string {
  const m = text === undefined ? null : /^(.*):(\d{1,5})$/.exec(text);
  if (!m || Number(m[2]) > 65535) {
    throw new ConfigError(
      `cannot start: --metrics-address ${JSON.stringify(text)} must be host:port (port 0 picks a free one)`,
    );
  }
  return text as string;
}

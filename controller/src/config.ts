/**
 * The controller's configuration: every setting as a flag and as an environment variable, validated up
 * front with messages a person can act on. `--help` prints this table.
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { METRICS_AUTH_MODES, type MetricsAuthMode, parseAllowedHosts } from "reconcile-kit";
import { TRACING_HELP } from "reconcile-kit/tracing";

/** The validated configuration. */
export interface Config {
  /** Path of a kubeconfig; undefined: in-cluster when running in a Pod, else the default loading rules. */
  kubeconfig: string | undefined;
  cloudUrl: string;
  cloudToken: string;
  /**
   * The value of the `owner` tag on the cloud shapes we own; undefined: derived from the cluster's identity
   * at startup (library/src/kube/cluster-identity.ts), the default.
   */
  ownerId: string | undefined;
  /**
   * Owner ids this controller used before (an upgrade from the old constant default `k8s`): a cloud shape
   * tagged with one of them whose name and uid tag match a local Shape or ShapeRef is retagged to ours.
   */
  adoptOwnerIds: string[];
  workers: number;
  resyncPeriodMs: number;
  leakGraceMs: number;
  /**
   * Delete cloud shapes (deletionPolicy Delete) even while the Shape CRD is being deleted (an uninstall).
   * Off by default: then they are released, not deleted (library/src/reconcile/uninstall.ts).
   */
  deleteOnUninstall: boolean;
  leaderElect: boolean;
  leaderElectionNamespace: string;
  leaderElectionName: string;
  identity: string;
  metricsAddress: string;
  /**
   * Who may read /metrics and /why (library/src/kube/access-review.ts): `kubernetes`, a bearer token the API
   * server authenticates (TokenReview) of a user it allows (SubjectAccessReview); `none`, whoever reaches the
   * port; `auto` (the default), `kubernetes` when running in a cluster on the pod's service account, else `none`.
   */
  metricsAuth: MetricsAuthMode;
  /**
   * With the port open (`metricsAuth` none): host names the port answers for besides `localhost`, IP
   * addresses and the `metricsAddress` host; any other `Host` is answered 421 (library/src/observability/host-check.ts).
   */
  metricsAllowedHosts: string[];
  logLevel: string;
  /** Client-side limit of cloud calls per second, shared by every reconcile and the relist; 0: no limiter at all. */
  cloudQps: number;
  /** Cloud calls that may go at once above `cloudQps` after a quiet spell (the token bucket's size). */
  cloudBurst: number;
  /** Split the Shapes among the replicas by a ring of Leases (core/sharding); excludes leader election. */
  sharding: boolean;
  /** With sharding: `auto` asks the API server to filter the Shapes' list and watch when it can; `client`: never. */
  shardFilter: "auto" | "client";
  /** Leader election timings (client-go's defaults: 15 s, 10 s, 2 s); the ring's Leases use them too. */
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

interface OptionSpec {
  flag: string;
  env: string;
  help: string;
  default?: string;
  boolean?: boolean;
}

/** Every option, in `--help` order. */
export const OPTIONS: readonly OptionSpec[] = [
  {
    flag: "kubeconfig",
    env: "KUBECONFIG",
    help: "kubeconfig file (default: KUBECONFIG's files merged, else in-cluster, else ~/.kube/config)",
  },
  { flag: "cloud-url", env: "CLOUD_URL", help: "base URL of the Shapes cloud API (required)" },
  { flag: "cloud-token", env: "CLOUD_TOKEN", help: "cloud API token (or --cloud-token-file)" },
  { flag: "cloud-token-file", env: "CLOUD_TOKEN_FILE", help: "file holding the cloud API token" },
  {
    flag: "owner-id",
    env: "OWNER_ID",
    help: "value of the `owner` tag on the cloud shapes we own (default: k8s-<uid of the kube-system namespace>, one per cluster)",
  },
  {
    flag: "adopt-owner-ids",
    env: "ADOPT_OWNER_IDS",
    default: "k8s",
    help: "comma-separated owner ids of earlier versions: their shapes whose name and k8s-uid tag match a local Shape or ShapeRef are retagged to ours (--adopt-owner-ids= for none)",
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
    help: "how long an unclaimed owned cloud shape waits before it is deleted",
  },
  {
    flag: "delete-on-uninstall",
    env: "DELETE_ON_UNINSTALL",
    default: "false",
    boolean: true,
    help: "delete cloud shapes (deletionPolicy Delete) even while the Shape CRD is being deleted (an uninstall); by default they are released, not deleted: they stay, without our owner tags",
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
    help: "split the Shapes among the replicas: each holds a Lease of its own, labelled shapes.example.com/ring=<--leader-election-name>, and reconciles the Shapes whose uid hashes into its part of the ring (instead of --leader-elect)",
  },
  {
    flag: "shard-filter",
    env: "SHARD_FILTER",
    default: "auto",
    help: "with --sharding, who filters the Shapes by hash: auto (the API server when its ShardedListAndWatch feature is on, else this replica) or client (always this replica)",
  },
  {
    flag: "leader-election-namespace",
    env: "LEADER_ELECTION_NAMESPACE",
    default: "shapes-system",
    help: "namespace of the Lease, or of the ring's Leases (deploy/rbac.yaml grants Leases there)",
  },
  {
    flag: "leader-election-name",
    env: "LEADER_ELECTION_NAME",
    default: "shapes-controller",
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
  { flag: "identity", env: "POD_NAME", help: "this replica's identity in the Lease (default: hostname-pid)" },
  {
    flag: "metrics-address",
    env: "METRICS_ADDRESS",
    default: "127.0.0.1:8081",
    help: "host:port for /healthz, /readyz, /metrics (port 0: any)",
  },
  // controller-runtime's secure metrics (filters.WithAuthenticationAndAuthorization), on by default where the
  // port can be reached by other pods (in a cluster) and off where it listens on loopback (a laptop, the demo).
  {
    flag: "metrics-auth",
    env: "METRICS_AUTH",
    default: "auto",
    help: "who may read /metrics and /why: kubernetes (a bearer token, checked by TokenReview and SubjectAccessReview: /metrics needs get on the non-resource URL /metrics, /why/<namespace>/<name> get on that Shape; /healthz and /readyz stay open), none (whoever reaches the port), or auto (kubernetes when running in a cluster on the pod's service account, else none)",
  },
  // Without a token, the port answers only for its own names: a web page cannot read it through DNS rebinding.
  {
    flag: "metrics-allowed-hosts",
    env: "METRICS_ALLOWED_HOSTS",
    help: "while /metrics and /why ask for no token (--metrics-auth none, or auto outside a cluster): host names, comma-separated, the port answers for besides localhost, IP addresses and the --metrics-address host (e.g. a Service's name a scraper uses); a request for another Host is answered 421 Misdirected Request, against DNS rebinding",
  },
  { flag: "log-level", env: "LOG_LEVEL", default: "info", help: "trace, debug, info, warn, error" },
  // The cloud is shared (other clusters' controllers, people): one token bucket in front of every call of this
  // process (library/src/queue/rate-limiter.ts), as client-go has for the API server (5/s, burst 10) and Crossplane for a
  // provider's cloud (10/s, burst 100). Ours is higher because the cloud is what this controller exists for:
  // converging costs one cloud write per Shape, and the bench converges at about 66-68 writes/s (1,000 and
  // 10,000 Shapes, bound by the API server's CPU) and deletes 1,000 at about 105/s. 100/s is half again the
  // converge rate, so the limit never slows normal work, and it still caps what no design should send (a retry
  // storm, a bug) at a known rate; a burst of 200 lets a mass delete or a resync
  // through. Several clusters sharing one account's quota: give each its share.
  {
    flag: "cloud-qps",
    env: "CLOUD_QPS",
    default: "100",
    help: "client-side limit on cloud API calls per second, shared by every reconcile (0: off — no limit, and a 429's Retry-After or an outage holds only the key that met it)",
  },
  {
    flag: "cloud-burst",
    env: "CLOUD_BURST",
    default: "200",
    help: "cloud API calls that may go at once above --cloud-qps after a quiet spell (1-100000)",
  },
];

/** A configuration error: one line for a person, no stack trace. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** The text of `--help`. */
export function usage(): string {
  const rows = OPTIONS.map((o) => {
    const flag = o.boolean ? `--[no-]${o.flag}[=true|false]` : `--${o.flag} VALUE`;
    const def = o.default === undefined ? "" : ` [default: ${o.default}]`;
    return `  ${flag.padEnd(40)} ${o.help}${def}\n  ${"".padEnd(40)} env: ${o.env}`;
  });
  return `Usage: npm run controller -- [options]\n\nSyncs Shape custom resources with the Shapes cloud, both ways.\n\nOptions (each also by environment variable):\n${rows.join("\n")}\n  --help${"".padEnd(34)} show this help\n\n${TRACING_HELP}\nWhy did it do that? GET /why/<namespace>/<name> on the metrics address, or: npm run why -- <namespace>/<name>\n`;
}

/** Parses flags (winning) and environment variables into a validated Config, or throws ConfigError. */
export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Config | "help" {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv.map(booleanAlone),
      options: {
        help: { type: "boolean" },
        ...Object.fromEntries(OPTIONS.map((o) => [o.flag, { type: "string" as const }])),
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new ConfigError(`cannot parse the command line: ${(err as Error).message} (see --help)`);
  }
  if (values.help) return "help";
  const get = (flag: string): string | undefined => {
    const spec = OPTIONS.find((o) => o.flag === flag);
    const fromFlag = values[flag];
    const raw =
      typeof fromFlag === "string" ? fromFlag : spec && env[spec.env] !== "" ? env[spec.env] : undefined;
    return raw ?? spec?.default;
  };

  const cloudUrl = get("cloud-url");
  if (!cloudUrl) throw new ConfigError("cannot start: the cloud URL is missing (--cloud-url or CLOUD_URL)");
  try {
    const url = new URL(cloudUrl);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http(s)");
  } catch {
    throw new ConfigError(`cannot start: --cloud-url ${JSON.stringify(cloudUrl)} is not an http(s) URL`);
  }

  let cloudToken = get("cloud-token");
  const tokenFile = get("cloud-token-file");
  if (!cloudToken && tokenFile) {
    try {
      cloudToken = readFileSync(tokenFile, "utf8").trim();
    } catch (err) {
      throw new ConfigError(`cannot read the cloud token file ${tokenFile}: ${(err as Error).message}`);
    }
  }
  if (!cloudToken) {
    throw new ConfigError(
      "cannot start: the cloud token is missing (--cloud-token, CLOUD_TOKEN, --cloud-token-file or CLOUD_TOKEN_FILE)",
    );
  }

  const ownerId = get("owner-id") || undefined;
  if (ownerId !== undefined) ownerIdOrThrow("owner-id", ownerId);
  const adoptOwnerIds = (get("adopt-owner-ids") ?? "")
    .split(",")
    .map((id) => id.trim())
    .filter((id) => id !== "" && id !== ownerId)
    .map((id) => ownerIdOrThrow("adopt-owner-ids", id));

  return checkSharding({
    kubeconfig: get("kubeconfig") || undefined,
    cloudUrl,
    cloudToken,
    ownerId,
    adoptOwnerIds,
    workers: integer("workers", get("workers"), 1, 64),
    resyncPeriodMs: duration("resync-period", get("resync-period"), 1_000),
    leakGraceMs: duration("leak-grace", get("leak-grace"), 0),
    deleteOnUninstall: bool("delete-on-uninstall", get("delete-on-uninstall")),
    leaderElect: bool("leader-elect", get("leader-elect")),
    sharding: bool("sharding", get("sharding")),
    shardFilter: oneOf("shard-filter", get("shard-filter"), ["auto", "client"]) as "auto" | "client",
    leaderElectionNamespace: get("leader-election-namespace") ?? "shapes-system",
    leaderElectionName: get("leader-election-name") ?? "shapes-controller",
    identity: get("identity") ?? `${hostname()}-${process.pid}`,
    metricsAddress: address(get("metrics-address")),
    metricsAuth: oneOf("metrics-auth", get("metrics-auth"), [...METRICS_AUTH_MODES]) as MetricsAuthMode,
    metricsAllowedHosts: hostNames("metrics-allowed-hosts", get("metrics-allowed-hosts")),
    logLevel: oneOf("log-level", get("log-level"), ["trace", "debug", "info", "warn", "error", "silent"]),
    cloudQps: rate("cloud-qps", get("cloud-qps"), 10_000),
    cloudBurst: integer("cloud-burst", get("cloud-burst"), 1, 100_000),
    ...leaderElectionTimings(),
  });

  function checkSharding(config: Config): Config {
    if (config.sharding && config.leaderElect) {
      throw new ConfigError(
        "cannot start: --sharding and --leader-elect exclude each other (every replica of a ring writes, each for its own part)",
      );
    }
    return config;
  }

  function leaderElectionTimings(): Pick<Config, "leaseDurationMs" | "renewDeadlineMs" | "retryPeriodMs"> {
    const leaseDurationMs = duration("lease-duration", get("lease-duration"), 1_000);
    const renewDeadlineMs = duration("renew-deadline", get("renew-deadline"), 100);
    const retryPeriodMs = duration("retry-period", get("retry-period"), 50);
    if (leaseDurationMs % 1_000 !== 0) {
      throw new ConfigError(
        "cannot start: --lease-duration must be whole seconds (the Lease stores seconds)",
      );
    }
    if (!(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > 1.2 * retryPeriodMs)) {
      throw new ConfigError(
        "cannot start: leader election needs --lease-duration > --renew-deadline > 1.2 × --retry-period",
      );
    }
    return { leaseDurationMs, renewDeadlineMs, retryPeriodMs };
  }
}

/**
 * A boolean flag alone means true, and with `no-` before its name false: `--leader-elect` is
 * `--leader-elect=true`, `--no-leader-elect` is `--leader-elect=false`. Anything else is left as it is.
 */
function booleanAlone(arg: string): string {
  for (const o of OPTIONS) {
    if (!o.boolean) continue;
    if (arg === `--${o.flag}`) return `${arg}=true`;
    if (arg === `--no-${o.flag}`) return `--${o.flag}=false`;
  }
  return arg;
}

/** `parseAllowedHosts` of the library, its error a ConfigError. */
function hostNames(flag: string, text: string | undefined): string[] {
  try {
    return parseAllowedHosts(text ?? "");
  } catch (err) {
    throw new ConfigError(`cannot start: --${flag}: ${(err as Error).message}`);
  }
}

/** An owner id as a tag value: 1-63 letters, digits, '.', '_' or '-'. */
function ownerIdOrThrow(flag: string, id: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(id)) {
    throw new ConfigError(
      `cannot start: --${flag} ${JSON.stringify(id)} must be 1-63 letters, digits, '.', '_' or '-'`,
    );
  }
  return id;
}

/** Parses `90s`, `5m`, `1h`, `250ms` (or plain milliseconds) into milliseconds. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) return undefined;
  const factor = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] ?? "ms"] ?? 1;
  return Math.round(Number(m[1]) * factor);
}

function duration(flag: string, text: string | undefined, min: number): number {
  const ms = text === undefined ? undefined : parseDuration(text);
  if (ms === undefined || ms < min) {
    throw new ConfigError(
      `cannot start: --${flag} ${JSON.stringify(text)} must be a duration like 30s or 5m (at least ${min} ms)`,
    );
  }
  return ms;
}

function integer(flag: string, text: string | undefined, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(
      `cannot start: --${flag} ${JSON.stringify(text)} must be a whole number from ${min} to ${max}`,
    );
  }
  return n;
}

/** A rate per second: 0 or more, decimals allowed (`0.5`: one every 2 s). */
function rate(flag: string, text: string | undefined, max: number): number {
  const n = text !== undefined && /^\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : NaN;
  if (!(n <= max)) {
    throw new ConfigError(
      `cannot start: --${flag} ${JSON.stringify(text)} must be a number of calls per second from 0 (off) to ${max}`,
    );
  }
  return n;
}

function bool(flag: string, text: string | undefined): boolean {
  if (text === "true" || text === "1" || text === "") return true;
  if (text === "false" || text === "0") return false;
  throw new ConfigError(`cannot start: --${flag} ${JSON.stringify(text)} must be true or false`);
}

function oneOf(flag: string, text: string | undefined, allowed: string[]): string {
  if (text !== undefined && allowed.includes(text)) return text;
  throw new ConfigError(
    `cannot start: --${flag} ${JSON.stringify(text)} must be one of ${allowed.join(", ")}`,
  );
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

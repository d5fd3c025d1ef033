/**
 * The controller's configuration: the Shapes plugin's flags (the cloud: its URL, token, rate limit) on top
 * of the library's manager flags (reconcile-kit's manager: Kubernetes, metrics, leader election, sharding,
 * the owner id, the timings). Every setting is a flag and an environment variable, validated up front with
 * messages a person can act on; `--help` prints both tables.
 */
import { readFileSync } from "node:fs";
import {
  allOptions,
  ConfigError,
  type FlagReader,
  type FlagSpec,
  type ManagerConfig,
  type ManagerFlags,
  managerUsage,
  parseManagerFlags,
} from "reconcile-kit";
import { GROUP, SHAPES } from "./shapes/api.ts";

export { ConfigError, parseDuration } from "reconcile-kit";

/** The Shapes plugin's own settings. */
export interface ShapesFlags {
  cloudUrl: string;
  cloudToken: string;
  /** Client-side limit of cloud calls per second, shared by every reconcile and the relist; 0: no limiter at all. */
  cloudQps: number;
  /** Cloud calls that may go at once above `cloudQps` after a quiet spell (the token bucket's size). */
  cloudBurst: number;
}

/** The validated configuration: the library's settings and the plugin's. */
export type Config = ManagerConfig & ShapesFlags;

/** The Shapes plugin's flags, in `--help` order. */
const SHAPES_OPTIONS: readonly FlagSpec[] = [
  { flag: "cloud-url", env: "CLOUD_URL", help: "base URL of the Shapes cloud API (required)" },
  { flag: "cloud-token", env: "CLOUD_TOKEN", help: "cloud API token (or --cloud-token-file)" },
  { flag: "cloud-token-file", env: "CLOUD_TOKEN_FILE", help: "file holding the cloud API token" },
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

/** The Shapes controller's command line, for the library's manager (main.ts). */
export const SHAPES_FLAGS: ManagerFlags<ShapesFlags> = {
  name: "shapes-controller",
  command: "npm run controller -- [options]",
  summary: "Syncs Shape custom resources with the Shapes cloud, both ways.",
  resource: { group: GROUP, resource: SHAPES, title: "Shapes" },
  // `k8s`: the constant owner id of earlier versions, whose shapes are adopted on upgrade.
  defaults: {
    leaderElectionNamespace: "shapes-system",
    leaderElectionName: "shapes-controller",
    adoptOwnerIds: "k8s",
  },
  options: SHAPES_OPTIONS,
  parse: parseShapesFlags,
  footer:
    "\nWhy did it do that? GET /why/<namespace>/<name> on the metrics address, or: npm run why -- <namespace>/<name>\n",
};

/** Every option, the plugin's then the library's, in `--help` order. */
export const OPTIONS: readonly FlagSpec[] = allOptions(SHAPES_FLAGS);

/** The text of `--help`. */
export function usage(): string {
  return managerUsage(SHAPES_FLAGS);
}

/** Parses flags (winning) and environment variables into a validated Config, or throws ConfigError. */
export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Config | "help" {
  const parsed = parseManagerFlags(SHAPES_FLAGS, argv, env);
  return parsed === "help" ? "help" : { ...parsed.manager, ...parsed.plugin };
}

function parseShapesFlags(read: FlagReader): ShapesFlags {
  const cloudUrl = read.get("cloud-url");
  if (!cloudUrl) throw new ConfigError("cannot start: the cloud URL is missing (--cloud-url or CLOUD_URL)");
  try {
    const url = new URL(cloudUrl);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http(s)");
  } catch {
    throw new ConfigError(`cannot start: --cloud-url ${JSON.stringify(cloudUrl)} is not an http(s) URL`);
  }

  let cloudToken = read.get("cloud-token");
  const tokenFile = read.get("cloud-token-file");
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
  return {
    cloudUrl,
    cloudToken,
    cloudQps: read.rate("cloud-qps", 10_000),
    cloudBurst: read.integer("cloud-burst", 1, 100_000),
  };
}

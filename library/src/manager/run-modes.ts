/**
 * How the manager runs the controllers, one of three modes the configuration picks:
 *
 * - alone: the one replica writes (no Lease);
 * - leader (`--leader-elect`): only the holder of a Lease reconciles; losing it fences every write and stops
 *   the controllers, and the replica campaigns again (leadership/leader-election.ts);
 * - ring (`--sharding`): every replica holds a Lease of its own and reconciles its part of the resources;
 *   each handover reshards the controllers (leadership/sharded.ts).
 *
 * In each, the mode's signal (leadership, ring membership, the process's stop) opens the write fence.
 */
import type { ExternalResourceControllers } from "../controllers.ts";
import { KubeHttp } from "../kube/kube-http.ts";
import type { KubeAccess } from "./kube-access.ts";
import {
  apiServerShards,
  KubeRingLeases,
  memberLeaseName,
  type RingLeasesOptions,
} from "../leadership/kube-ring-leases.ts";
import { LeaderElector } from "../leadership/leader-election.ts";
import { shardedRing } from "../leadership/sharded.ts";
import type { Logger } from "../observability/logger.ts";
import type { CoreMetrics } from "../observability/metrics.ts";
import type { ManagerConfig } from "./flags.ts";

/** One way of running the controllers. */
export interface RunMode {
  /** What the controllers are built with for this mode: sharding settings in a ring, none otherwise. */
  readonly sharding: { serverSide: boolean } | undefined;
  /**
   * Runs `controllers` (their sources synced) until `signal` aborts; resolves once they drained (and, with a
   * Lease, the Lease is released or deleted).
   */
  run(controllers: ExternalResourceControllers, signal: AbortSignal): Promise<void>;
  /**
   * Ready: the controllers once their startup resync is done; a leader-election standby once its caches
   * synced (it is ready to take over).
   */
  isReady(controllers: ExternalResourceControllers): boolean;
  /** Closes what the mode opened (the ring's connection pool). */
  close(): Promise<void>;
}

interface Deps {
  kube: KubeAccess;
  metrics: CoreMetrics;
  log: Logger;
  /** The resources' API group: the ring's label is `<group>/ring`, its view annotation `<group>/ring-view`. */
  group: string;
  /** The resources as the log lines name them (e.g. "Records"). */
  title: string;
  /** What the caches hold, for the log line once they synced (e.g. "Records, RecordRefs and owned zone records"). */
  caches: string;
}
type Timings = Pick<ManagerConfig, "leaseDurationMs" | "renewDeadlineMs" | "retryPeriodMs">;
const timingsOf = ({ leaseDurationMs, renewDeadlineMs, retryPeriodMs }: ManagerConfig): Timings => ({
  leaseDurationMs,
  renewDeadlineMs,
  retryPeriodMs,
});

/** The mode `config` asks for. In a ring, first asks the API server whether it can filter the resources. */
export async function runMode(config: ManagerConfig, deps: Deps): Promise<RunMode> {
  if (config.sharding) return ringMode(config, deps);
  if (config.leaderElect) return leaderMode(config, deps);
  return aloneMode(deps);
}

function aloneMode({ metrics, log, caches }: Deps): RunMode {
  return {
    sharding: undefined,
    async run(controllers, signal) {
      log.info(`caches synced: ${caches}`);
      metrics.leader.set(1);
      await controllers.startControllers(signal).catch((err: unknown) => {
        if (!signal.aborted) throw err;
      });
    },
    isReady: (controllers) => controllers.isReady(),
    close: async () => {},
  };
}

function leaderMode(config: ManagerConfig, { kube, metrics, log, caches }: Deps): RunMode {
  let elector: LeaderElector | undefined;
  return {
    sharding: undefined,
    async run(controllers, signal) {
      log.info(`caches synced: ${caches}`);
      // Only the holder of the Lease reconciles. Its leadership signal fences every write (controllers.ts);
      // losing the lease stops the controllers and we campaign again.
      elector = new LeaderElector({
        client: kube.leaseClient(config.leaderElectionNamespace, config.leaderElectionName),
        identity: config.identity,
        ...timingsOf(config),
        onStartedLeading: (leadership) => controllers.startControllers(leadership),
        onStoppedLeading: () => controllers.stopControllers(),
        hooks: { onLeaderChange: (leading) => metrics.leader.set(leading ? 1 : 0) },
        logger: log,
      });
      log.info(
        { lease: `${config.leaderElectionNamespace}/${config.leaderElectionName}` },
        "waiting to lead before writing",
      );
      // Resolves after a shutdown, once the controllers drained and the Lease was released.
      await elector.run(signal);
    },
    // A standby (its caches synced: `run` is called only then) is ready to take over.
    isReady: (controllers) => (elector && !elector.isLeader() ? true : controllers.isReady()),
    close: async () => {},
  };
}

async function ringMode(config: ManagerConfig, { kube, metrics, log, group, title }: Deps): Promise<RunMode> {
  // The ring's Leases, and whether the API server can filter the resources for us (KEP-5866).
  const http = new KubeHttp(kube.target);
  const label = `${group}/ring`;
  const leases: RingLeasesOptions = {
    namespace: config.leaderElectionNamespace,
    label: { key: label, value: config.leaderElectionName },
    viewAnnotation: `${group}/ring-view`,
  };
  const serverSide = config.shardFilter === "auto" && (await probeSharding(http, leases, title, log));
  if (config.shardFilter === "client") {
    log.info(`--shard-filter=client: this replica receives every one of the ${title} and keeps its part`);
  }
  return {
    sharding: { serverSide },
    async run(controllers, signal) {
      // Each replica for its own part: the ring hands the parts out, and each handover reshards the
      // controllers (leadership/sharded.ts). Its signal fences every write, as leadership does.
      const ring = shardedRing(controllers, {
        client: new KubeRingLeases(http, leases),
        identity: config.identity,
        leaseName: memberLeaseName(config.leaderElectionName, config.identity),
        ...timingsOf(config),
        graceMs: config.renewDeadlineMs / 2,
        metrics,
        logger: log,
      });
      log.info(
        { ring: `${config.leaderElectionNamespace}/${label}=${config.leaderElectionName}` },
        "joining the ring before writing",
      );
      // Resolves after a shutdown, once the controllers drained and our Lease was deleted.
      await ring.run(signal);
    },
    isReady: (controllers) => controllers.isReady(),
    close: () => http.close(),
  };
}

/**
 * Asks once whether the API server filters lists by shard, and says what that means. A failed probe is not
 * fatal: filtering on our side is always correct, only more work.
 */
async function probeSharding(
  http: KubeHttp,
  leases: RingLeasesOptions,
  title: string,
  log: Logger,
): Promise<boolean> {
  try {
    if (await apiServerShards(http, leases)) {
      log.info(
        `the API server filters the ${title}' list and watch by our part of the ring (ShardedListAndWatch)`,
      );
      return true;
    }
    log.info(
      `the API server does not filter by shard (its ShardedListAndWatch feature is off): this replica receives every one of the ${title} and keeps its part`,
    );
  } catch (err) {
    log.warn({ err }, "cannot ask the API server whether it filters by shard: filtering on our side");
  }
  return false;
}

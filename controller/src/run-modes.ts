/**
 * How the shapes controller runs its controllers, one of three modes main.ts picks from the configuration:
 *
 * - alone: the one replica writes (no Lease);
 * - leader (`--leader-elect`): only the holder of a Lease reconciles; losing it fences every write and stops
 *   the controllers, and the replica campaigns again (library/src/leadership/leader-election.ts);
 * - ring (`--sharding`): every replica holds a Lease of its own and reconciles its part of the Shapes; each
 *   handover reshards the controllers (library/src/leadership/sharded.ts).
 *
 * In each, the mode's signal (leadership, ring membership, the process's stop) opens the write fence.
 */
import {
  apiServerShards,
  type CoreMetrics,
  type ExternalResourceControllers,
  KubeHttp,
  type KubeAccess,
  KubeRingLeases,
  LeaderElector,
  type Logger,
  memberLeaseName,
  type RingLeasesOptions,
  shardedRing,
} from "reconcile-kit";
import type { Config } from "./config.ts";

/** The label on every Lease of a ring: `kubectl get leases -l shapes.example.com/ring` shows the rings. */
const RING_LABEL = "shapes.example.com/ring";
/** The annotation holding the members a replica computed its part from (library/src/leadership/lease-ring.ts). */
const RING_VIEW_ANNOTATION = "shapes.example.com/ring-view";

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

type Deps = { kube: KubeAccess; metrics: CoreMetrics; log: Logger };
type Timings = Pick<Config, "leaseDurationMs" | "renewDeadlineMs" | "retryPeriodMs">;
const timingsOf = ({ leaseDurationMs, renewDeadlineMs, retryPeriodMs }: Config): Timings => ({
  leaseDurationMs,
  renewDeadlineMs,
  retryPeriodMs,
});

/** The mode `config` asks for. In a ring, first asks the API server whether it can filter the Shapes. */
export async function runMode(config: Config, deps: Deps): Promise<RunMode> {
  if (config.sharding) return ringMode(config, deps);
  if (config.leaderElect) return leaderMode(config, deps);
  return aloneMode(deps);
}

function aloneMode({ metrics, log }: Deps): RunMode {
  return {
    sharding: undefined,
    async run(controllers, signal) {
      log.info("caches synced: Shapes, ShapeRefs and owned cloud shapes");
      metrics.leader.set(1);
      await controllers.startControllers(signal).catch((err: unknown) => {
        if (!signal.aborted) throw err;
      });
    },
    isReady: (controllers) => controllers.isReady(),
    close: async () => {},
  };
}

function leaderMode(config: Config, { kube, metrics, log }: Deps): RunMode {
  let elector: LeaderElector | undefined;
  return {
    sharding: undefined,
    async run(controllers, signal) {
      log.info("caches synced: Shapes, ShapeRefs and owned cloud shapes");
      // Only the holder of the Lease reconciles. Its leadership signal fences every write (the library's
      // controllers.ts); losing the lease stops the controllers and we campaign again.
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

async function ringMode(config: Config, { kube, metrics, log }: Deps): Promise<RunMode> {
  // The ring's Leases, and whether the API server can filter the Shapes for us (KEP-5866).
  const http = new KubeHttp(kube.target);
  const leases: RingLeasesOptions = {
    namespace: config.leaderElectionNamespace,
    label: { key: RING_LABEL, value: config.leaderElectionName },
    viewAnnotation: RING_VIEW_ANNOTATION,
  };
  const serverSide = config.shardFilter === "auto" && (await probeSharding(http, leases, log));
  if (config.shardFilter === "client") {
    log.info("--shard-filter=client: this replica receives every Shape and keeps its part");
  }
  return {
    sharding: { serverSide },
    async run(controllers, signal) {
      // Each replica for its own part: the ring hands the parts out, and each handover reshards the
      // controllers (library/src/leadership/sharded.ts). Its signal fences every write, as leadership does.
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
        { ring: `${config.leaderElectionNamespace}/${RING_LABEL}=${config.leaderElectionName}` },
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
async function probeSharding(http: KubeHttp, leases: RingLeasesOptions, log: Logger): Promise<boolean> {
  try {
    if (await apiServerShards(http, leases)) {
      log.info(
        "the API server filters the Shapes' list and watch by our part of the ring (ShardedListAndWatch)",
      );
      return true;
    }
    log.info(
      "the API server does not filter by shard (its ShardedListAndWatch feature is off): this replica receives every Shape and keeps its part",
    );
  } catch (err) {
    log.warn({ err }, "cannot ask the API server whether it filters by shard: filtering on our side");
  }
  return false;
}

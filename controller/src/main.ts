/**
 * The shapes controller process: only wiring. Configuration → logger, metrics, health → the shapes
 * controllers (shapes/setup.ts) → run them: alone, as leader when leader election is on, or for a part of
 * the ring when sharding is on → stop cleanly on a signal.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { ConfigError, loadConfig, usage, type Config } from "./config.ts";
import { readDefaultOwnerId, waitForClusterId } from "../../library/src/kube/cluster-identity.ts";
import { HealthServer } from "../../library/src/observability/health.ts";
import { DecisionHistory } from "../../library/src/observability/history.ts";
import { PooledKubeConfig } from "../../library/src/kube/kube-config.ts";
import { LeaderElector } from "../../library/src/leadership/leader-election.ts";
import { KubeHttp } from "../../library/src/kube/kube-http.ts";
import { KubeLeaseClient } from "../../library/src/leadership/lease-client.ts";
import {
  apiServerShards,
  KubeRingLeases,
  memberLeaseName,
  type RingLeasesOptions,
} from "../../library/src/leadership/kube-ring-leases.ts";
import { createLogger } from "../../library/src/observability/logger.ts";
import { CoreMetrics } from "../../library/src/observability/metrics.ts";
import type { Logger } from "../../library/src/observability/logger.ts";
import type { ExternalResourceControllers } from "../../library/src/controllers.ts";
import { shardedRing } from "../../library/src/leadership/sharded.ts";
import { createShapesControllers } from "./shapes/setup.ts";
import { startTracing, type Tracing } from "../../telemetry/tracing.ts";

/** The label on every Lease of a ring: `kubectl get leases -l shapes.example.com/ring` shows the rings. */
const RING_LABEL = "shapes.example.com/ring";
/** The annotation holding the members a replica computed its part from (library/src/leadership/lease-ring.ts). */
const RING_VIEW_ANNOTATION = "shapes.example.com/ring-view";

async function main(): Promise<number> {
  let config: Config | "help";
  try {
    config = loadConfig(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`shapes-controller: ${err.message}\n`);
    return 2;
  }
  if (config === "help") {
    process.stdout.write(usage());
    return 0;
  }

  // Tracing first (telemetry/tracing.ts): on only when OTEL_EXPORTER_OTLP_ENDPOINT (or the traces one) is set.
  let tracing: Tracing | undefined;
  try {
    tracing = startTracing("shapes-controller");
  } catch (err) {
    process.stderr.write(`shapes-controller: ${(err as Error).message}\n`);
    return 2;
  }
  const log = createLogger("shapes-controller", config.logLevel);
  if (tracing) log.info({ endpoint: tracing.endpoint }, "tracing: exporting spans (OTLP/HTTP)");
  // One connection pool for the API server (library/src/kube/kube-config.ts says why); the plain one only as an ablation.
  const kubeConfig = config.kubeConnectionPool ? new PooledKubeConfig() : new KubeConfig();
  try {
    if (config.kubeconfig) kubeConfig.loadFromFile(config.kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (err) {
    process.stderr.write(`shapes-controller: cannot load the kubeconfig: ${(err as Error).message}\n`);
    return 2;
  }

  // The lean client speaks to the server directly; a proxy in the kubeconfig is client-node's to handle.
  let kubeClient = config.kubeClient;
  if (kubeClient === "lean" && kubeConfig.getCurrentCluster()?.proxyUrl) {
    kubeClient = "generated";
    log.info("the kubeconfig names a proxy: Kubernetes writes go through client-node's API classes");
  }

  const metrics = new CoreMetrics({ prefix: "shapes_controller_", processMetrics: true });
  // What each reconcile saw, decided and did, per object: GET /why/<namespace>/<name>, `npm run why`.
  // Each replica keeps its own. With several (sharding, leader election) it says which replica decided.
  const history = new DecisionHistory(
    config.sharding || config.leaderElect ? { replica: config.identity } : {},
  );
  const health = new HealthServer({ registry: metrics.registry, logger: log, history });
  // Ready: the leader once its startup resync is done; a standby once its caches synced (it is ready to
  // take over). Without leader election, the one replica is the leader. Nothing is ready before it exists.
  let running: ExternalResourceControllers | undefined = undefined;
  let synced = false;
  let elector: LeaderElector | undefined;
  health.setReadinessCheck("controllers", () =>
    elector && !elector.isLeader() ? synced : (running?.isReady() ?? false),
  );
  const url = await health.start(config.metricsAddress);
  // The message is what the stack, the bench and the demo wait for: keep it as it is. /why is there too.
  log.info({ url, cloud: config.cloudUrl, identity: config.identity }, "serving /healthz, /readyz, /metrics");

  // Stop on SIGINT/SIGTERM: stop taking work, drain what is in flight, then exit.
  const stopping = new AbortController();
  const stopped = new Promise<void>((resolve) => stopping.signal.addEventListener("abort", () => resolve()));
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      log.info({ signal }, "shutting down: draining in-flight reconciles");
      stopping.abort();
    });
  }

  // Who we are in the cloud: the owner tag on everything we create. By default one id per CLUSTER (the
  // kube-system namespace's uid), so clusters sharing one cloud never take each other's shapes for theirs.
  // If it cannot be read we write nothing, and say why, rather than guess: a guessed id is how clusters collide.
  const ownerId = config.ownerId ?? (await clusterOwnerId(kubeConfig, stopping.signal, log));
  if (ownerId === undefined) {
    await health.stop();
    await tracing?.shutdown();
    log.info("stopped before it started: no owner id");
    return 0;
  }
  metrics.ownerInfo.set({ owner_id: ownerId }, 1);
  log.info(
    {
      owner: ownerId,
      from: config.ownerId ? "--owner-id" : "the kube-system namespace's uid",
      adoptFrom: config.adoptOwnerIds,
    },
    "our owner id: the owner tag on every cloud shape we create",
  );

  // Sharding: the ring's Leases, and whether the API server can filter the Shapes for us (KEP-5866).
  const ringHttp = config.sharding ? new KubeHttp(kubeConfig) : undefined;
  const ringLeases: RingLeasesOptions = {
    namespace: config.leaderElectionNamespace,
    label: { key: RING_LABEL, value: config.leaderElectionName },
    viewAnnotation: RING_VIEW_ANNOTATION,
  };
  const serverSide =
    ringHttp !== undefined &&
    config.shardFilter === "auto" &&
    (await probeSharding(ringHttp, ringLeases, log));
  if (config.sharding && config.shardFilter === "client") {
    log.info("--shard-filter=client: this replica receives every Shape and keeps its part");
  }
  const shapes = createShapesControllers(
    kubeConfig,
    {
      ...config,
      kubeClient,
      ownerId,
      history,
      ...(config.sharding ? { sharded: { serverSide } } : {}),
    },
    metrics,
    log,
  );
  running = shapes;
  synced = await shapes.startSources(stopping.signal);
  if (synced) {
    if (!config.sharding) log.info("caches synced: Shapes, ShapeRefs and owned cloud shapes");
    if (ringHttp) {
      // Several replicas, each for its own part: the ring hands the parts out, and each handover reshards
      // the controllers (library/src/leadership/sharded.ts). Its signal fences every write, as leadership does.
      const ring = shardedRing(shapes, {
        client: new KubeRingLeases(ringHttp, ringLeases),
        identity: config.identity,
        leaseName: memberLeaseName(config.leaderElectionName, config.identity),
        leaseDurationMs: config.leaseDurationMs,
        renewDeadlineMs: config.renewDeadlineMs,
        retryPeriodMs: config.retryPeriodMs,
        graceMs: config.renewDeadlineMs / 2,
        metrics,
        logger: log,
      });
      log.info(
        { ring: `${config.leaderElectionNamespace}/${RING_LABEL}=${config.leaderElectionName}` },
        "joining the ring before writing",
      );
      // Resolves after a shutdown, once the controllers drained and our Lease was deleted.
      await ring.run(stopping.signal);
    } else if (config.leaderElect) {
      // Several replicas: only the holder of the Lease reconciles. Its leadership signal fences every
      // write (library/src/controllers.ts); losing the lease stops the controllers and we campaign again.
      elector = new LeaderElector({
        client: new KubeLeaseClient(kubeConfig, config.leaderElectionNamespace, config.leaderElectionName),
        identity: config.identity,
        leaseDurationMs: config.leaseDurationMs,
        renewDeadlineMs: config.renewDeadlineMs,
        retryPeriodMs: config.retryPeriodMs,
        onStartedLeading: (leadership) => shapes.startControllers(leadership),
        onStoppedLeading: () => shapes.stopControllers(),
        hooks: { onLeaderChange: (leading) => metrics.leader.set(leading ? 1 : 0) },
        logger: log,
      });
      log.info(
        { lease: `${config.leaderElectionNamespace}/${config.leaderElectionName}` },
        "waiting to lead before writing",
      );
      // Resolves after a shutdown, once the controllers drained and the Lease was released.
      await elector.run(stopping.signal);
    } else {
      metrics.leader.set(1);
      await shapes.startControllers(stopping.signal).catch((err: unknown) => {
        if (!stopping.signal.aborted) throw err;
      });
    }
  }
  await stopped;
  await shapes.shutDown();
  await health.stop();
  if (kubeConfig instanceof PooledKubeConfig) await kubeConfig.closePools();
  await ringHttp?.close();
  // The last spans (the drain's) go out before we exit.
  await tracing?.shutdown();
  log.info("stopped");
  return 0;
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

/** The cluster's default owner id, read and retried until it is known; undefined when stopped first. */
async function clusterOwnerId(kubeConfig: KubeConfig, signal: AbortSignal, log: Logger) {
  return waitForClusterId(() => readDefaultOwnerId(kubeConfig), {
    signal,
    onError: (err, retryInMs) =>
      log.error({ err, retryInMs }, "cannot know our owner id: writing nothing until it is known"),
  });
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`shapes-controller: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);

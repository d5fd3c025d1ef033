/**
 * The shapes controller process: only wiring. Configuration → logger, metrics, health → the shapes
 * controllers (shapes/setup.ts) → run them: alone, as leader when leader election is on, or for a part of
 * the ring when sharding is on → stop cleanly on a signal.
 */
import { ConfigError, loadConfig, usage, type Config } from "./config.ts";
import {
  CoreMetrics,
  createLogger,
  DecisionHistory,
  HealthServer,
  HeapPageRelease,
  KubeAccessReviewer,
  type Logger,
  metricsAuthEnabled,
  openKubeAccess,
  type KubeAccess,
  waitForClusterId,
} from "reconcile-kit";
import { runMode } from "./run-modes.ts";
import { GROUP, SHAPES } from "./shapes/api.ts";
import { createShapesControllers } from "./shapes/setup.ts";
import { startTracing, type Tracing } from "reconcile-kit/tracing";

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

  // Tracing first (library/src/observability/tracing.ts): on only when OTEL_EXPORTER_OTLP_ENDPOINT (or the traces one) is set.
  let tracing: Tracing | undefined;
  try {
    tracing = await startTracing("shapes-controller");
  } catch (err) {
    process.stderr.write(`shapes-controller: ${(err as Error).message}\n`);
    return 2;
  }
  const log = createLogger("shapes-controller", config.logLevel);
  if (tracing) log.info({ endpoint: tracing.endpoint }, "tracing: exporting spans (OTLP/HTTP)");
  // The API server, through the library's lean client (library/src/kube/kube-access.ts).
  const opened = await openKubeAccess({ kubeconfig: kubeconfigFile(config), log });
  if (opened.kind === "invalid") {
    process.stderr.write(`shapes-controller: ${opened.message}\n`);
    return 2;
  }
  const { kube } = opened;

  const metrics = new CoreMetrics({ prefix: "shapes_controller_", processMetrics: true });
  // What each reconcile saw, decided and did, per object: GET /why/<namespace>/<name>, `npm run why`.
  // Each replica keeps its own. With several (sharding, leader election) it says which replica decided.
  const history = new DecisionHistory(
    config.sharding || config.leaderElect ? { replica: config.identity } : {},
  );
  // Who may read /metrics and /why (--metrics-auth): with a reviewer, a bearer token the API server
  // authenticates, of a user it allows; /why/<namespace>/<name> needs get on that Shape.
  const reviewer = metricsAuthEnabled(config.metricsAuth, kube.target)
    ? new KubeAccessReviewer(kube.target)
    : undefined;
  const health = new HealthServer({
    registry: metrics.registry,
    logger: log,
    history,
    ...(reviewer ? { access: { reviewer, resource: { group: GROUP, resource: SHAPES } } } : {}),
    // Without a token, only requests for these names (and localhost, IP addresses): no DNS rebinding.
    allowedHosts: config.metricsAllowedHosts,
  });
  // Ready as the run mode says (run-modes.ts); nothing is ready before the controllers exist.
  let ready = () => false;
  health.setReadinessCheck("controllers", () => ready());
  const url = await health.start(config.metricsAddress);
  // The message is what the stack, the bench and the demo wait for: keep it as it is. /why is there too.
  log.info(
    {
      url,
      cloud: config.cloudUrl,
      identity: config.identity,
      metricsAuth: reviewer ? "kubernetes: /metrics and /why need a bearer token that may read them" : "none",
    },
    "serving /healthz, /readyz, /metrics",
  );

  // V8 keeps the heap pages a burst emptied until asked to reduce memory (library/src/support/heap-pages.ts).
  const heapPages = new HeapPageRelease({ log });
  heapPages.start();

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
  const ownerId = config.ownerId ?? (await clusterOwnerId(kube, stopping.signal, log));
  if (ownerId === undefined) {
    heapPages.stop();
    await health.stop();
    await reviewer?.close();
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

  // Alone, as the leader of a Lease, or for a part of a ring (run-modes.ts).
  const mode = await runMode(config, { kube, metrics, log });
  const shapes = createShapesControllers(
    kube.target,
    { ...config, ownerId, history, ...(mode.sharding ? { sharded: mode.sharding } : {}) },
    metrics,
    log,
  );
  ready = () => mode.isReady(shapes);
  if (await shapes.startSources(stopping.signal)) await mode.run(shapes, stopping.signal);
  await stopped;
  await shapes.shutDown();
  heapPages.stop();
  await health.stop();
  await reviewer?.close();
  await kube.close();
  await mode.close();
  // The last spans (the drain's) go out before we exit.
  await tracing?.shutdown();
  log.info("stopped");
  return 0;
}

/**
 * The kubeconfig file to load: the lean loader is given only the flag, and reads KUBECONFIG (the flag's
 * variable) itself (a list, merged as client-go merges it).
 */
function kubeconfigFile(config: Config): string | undefined {
  if (config.kubeconfig === process.env.KUBECONFIG) return undefined;
  return config.kubeconfig;
}

/** The cluster's default owner id, read and retried until it is known; undefined when stopped first. */
async function clusterOwnerId(kube: KubeAccess, signal: AbortSignal, log: Logger) {
  return waitForClusterId(() => kube.readDefaultOwnerId(), {
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

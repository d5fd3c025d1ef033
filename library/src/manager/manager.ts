/**
 * The manager: one call runs a plugin's controllers as a process. It owns everything around them that every
 * controller process needs the same way: the command line, Kubernetes access, the metrics and health server
 * with its auth, the why history, the heap-page release, the owner id, the run mode (one replica, leader
 * election or the sharded ring), and the signals and the drain. The plugin says only what its flags are and
 * how its controllers are built.
 */
import type { ExternalResourceControllers, ExternalResourceSettings } from "../controllers.ts";
import { KubeAccessReviewer, metricsAuthEnabled } from "../kube/access-review.ts";
import { waitForClusterId } from "../kube/cluster-identity.ts";
import { type KubeAccess, openKubeAccess } from "./kube-access.ts";
import type { HashRange } from "../leadership/ring.ts";
import { HealthServer } from "../observability/health.ts";
import { DecisionHistory } from "../observability/history.ts";
import { createLogger, type Logger } from "../observability/logger.ts";
import { CoreMetrics } from "../observability/metrics.ts";
import type { KubeConnection } from "../kube/kubeconfig.ts";
import type { ManagedResource } from "../reconcile/contract.ts";
import { startTracing, type Tracing } from "../observability/tracing.ts";
import { HeapPageRelease } from "./heap-pages.ts";
import {
  ConfigError,
  managerUsage,
  type ManagerConfig,
  type ManagerFlags,
  parseManagerFlags,
  type ParsedFlags,
} from "./flags.ts";
import { runMode } from "./run-modes.ts";

/** What the manager hands a plugin to build its controllers with. */
export interface ManagerContext<P> {
  /** The library's settings (`--help`'s manager options). */
  readonly config: ManagerConfig;
  /** The plugin's settings, as its `parse` returned them. */
  readonly plugin: P;
  /** The API server, as `createExternalResourceControllers` takes it (the manager opened it; it closes it). */
  readonly kube: KubeConnection;
  /** The process's metrics (prefixed with `metricsPrefix`), served on /metrics. */
  readonly metrics: CoreMetrics;
  /** The process's logger, named after the process. */
  readonly log: Logger;
  /**
   * The settings every plugin's controllers take from the manager, to spread into
   * `createExternalResourceControllers`' settings: the owner id (the flag, or the cluster's), the ids to
   * adopt from, workers, resync period, leak grace, the uninstall policy, the why history, and in a ring
   * the sharding.
   */
  readonly settings: ManagedSettings;
}

/** The part of {@link ExternalResourceSettings} the manager decides. */
export type ManagedSettings = Required<
  Pick<
    ExternalResourceSettings<ManagedResource, unknown>,
    | "ownerId"
    | "adoptOwnerIds"
    | "workers"
    | "resyncPeriodMs"
    | "leakGraceMs"
    | "deleteOnUninstall"
    | "history"
  >
> &
  Pick<ExternalResourceSettings<ManagedResource, unknown>, "sharding">;

/** A plugin's process, for {@link runManager}. */
export interface ManagerSpec<P> extends ManagerFlags<P> {
  /** The prefix of every metric name (e.g. `dns_controller_`). */
  readonly metricsPrefix: string;
  /** What the caches hold, for the log line once they synced (e.g. "Records, RecordRefs and owned zone records"). */
  readonly caches: string;
  /** Fields for the startup line ("serving /healthz, /readyz, /metrics"), e.g. the external API's URL. */
  describe?(plugin: P): Record<string, unknown>;
  /**
   * Builds the controllers: one plugin's (`createExternalResourceControllers`), or several, which then run
   * as one (every one must be built with `context.settings`, so all shard alike). Called once, after the
   * owner id is known; nothing may run before the manager starts it.
   */
  build(context: ManagerContext<P>): ExternalResourceControllers | readonly ExternalResourceControllers[];
}

/** Where {@link runManager} reads its command line. */
export interface RunManagerOptions {
  /** Default: `process.argv.slice(2)`. */
  argv?: readonly string[];
  /** Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/**
 * Runs a plugin's controllers as a process, until SIGTERM or SIGINT; resolves with the exit code, for the
 * caller to exit with: `runManager(spec).then((code) => process.exit(code))`.
 *
 * # Guarantees
 * - `--help` prints the plugin's flags and the library's (`parseManagerFlags`) and resolves 0.
 * - Nothing is written before the owner id is known: `--owner-id`, or the cluster's (the kube-system
 *   namespace's uid), retried until read; a stop first resolves 0 having built nothing.
 * - `/healthz` answers from the start; `/readyz` once the run mode says so (the startup resync done, or a
 *   leader-election standby with its caches synced). `/metrics` and `/why` are behind `--metrics-auth`.
 * - Exactly one run mode: alone, `--leader-elect` (only the Lease holder writes; losing it fences every
 *   write), or `--sharding` (each replica writes only its part of the ring, fenced likewise).
 * - On SIGTERM or SIGINT: every write is fenced at once, in-flight reconciles drain, the Lease is released
 *   (or the ring's member Lease deleted), then the servers and connections close and it resolves 0.
 *
 * # Assumptions
 * - It owns the process: it installs the signal handlers, and the startup line
 *   ("serving /healthz, /readyz, /metrics", with the url) is what harnesses wait on.
 * - With `--expose-gc`, the heap-page release asks V8 to give back emptied pages (manager/heap-pages.ts).
 * - The service account may get the kube-system namespace (unless `--owner-id`), and with `--leader-elect` or
 *   `--sharding` manage Leases in `--leader-election-namespace`.
 *
 * # Errors
 * Resolves 2 for a bad command line, tracing variable or kubeconfig (one line on stderr, `<name>: …`);
 * rejects only for what it cannot handle (a controller that throws while not stopping).
 */
export async function runManager<P>(spec: ManagerSpec<P>, options: RunManagerOptions = {}): Promise<number> {
  const say = (message: string) => process.stderr.write(`${spec.name}: ${message.split("\n")[0]}\n`);
  let parsed: ParsedFlags<P> | "help";
  try {
    parsed = parseManagerFlags(spec, options.argv ?? process.argv.slice(2), options.env ?? process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    say(err.message);
    return 2;
  }
  if (parsed === "help") {
    process.stdout.write(managerUsage(spec));
    return 0;
  }
  const { manager: config, plugin } = parsed;

  // Tracing first (observability/tracing.ts): on only when OTEL_EXPORTER_OTLP_ENDPOINT (or the traces one) is set.
  let tracing: Tracing | undefined;
  try {
    tracing = await startTracing(spec.name);
  } catch (err) {
    say((err as Error).message);
    return 2;
  }
  const log = createLogger(spec.name, config.logLevel);
  if (tracing) log.info({ endpoint: tracing.endpoint }, "tracing: exporting spans (OTLP/HTTP)");
  const opened = await openKubeAccess({ kubeconfig: kubeconfigFile(config), log });
  if (opened.kind === "invalid") {
    say(opened.message);
    return 2;
  }
  const { kube } = opened;

  const metrics = new CoreMetrics({ prefix: spec.metricsPrefix, processMetrics: true });
  // What each reconcile saw, decided and did, per object: GET /why/<namespace>/<name>. Each replica keeps
  // its own; with several (sharding, leader election) it says which replica decided.
  const history = new DecisionHistory(
    config.sharding || config.leaderElect ? { replica: config.identity } : {},
  );
  // Who may read /metrics and /why (--metrics-auth): with a reviewer, a bearer token the API server
  // authenticates, of a user it allows; /why/<namespace>/<name> needs get on that resource.
  const reviewer = metricsAuthEnabled(config.metricsAuth, kube.target)
    ? new KubeAccessReviewer(kube.target)
    : undefined;
  const { group, resource } = spec.resource;
  const health = new HealthServer({
    registry: metrics.registry,
    logger: log,
    history,
    ...(reviewer ? { access: { reviewer, resource: { group, resource } } } : {}),
    // Without a token, only requests for these names (and localhost, IP addresses): no DNS rebinding.
    allowedHosts: config.metricsAllowedHosts,
  });
  // Ready as the run mode says; nothing is ready before the controllers exist.
  let ready = () => false;
  health.setReadinessCheck("controllers", () => ready());
  const url = await health.start(config.metricsAddress);
  // The message is what the stack, the bench and the demo wait for: keep it as it is.
  log.info(
    {
      url,
      ...spec.describe?.(plugin),
      identity: config.identity,
      metricsAuth: reviewer ? "kubernetes: /metrics and /why need a bearer token that may read them" : "none",
    },
    "serving /healthz, /readyz, /metrics",
  );

  // V8 keeps the heap pages a burst emptied until asked to reduce memory (manager/heap-pages.ts).
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
  const closeAll = async () => {
    heapPages.stop();
    await health.stop();
    await reviewer?.close();
    await kube.close();
  };

  // Who we are outside: the owner mark on everything we create. By default one id per CLUSTER (the
  // kube-system namespace's uid), so clusters sharing one external API never take each other's objects.
  // If it cannot be read we write nothing, and say why, rather than guess: a guessed id is how clusters collide.
  const ownerId = config.ownerId ?? (await clusterOwnerId(kube, stopping.signal, log));
  if (ownerId === undefined) {
    await closeAll();
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
    "our owner id: the owner mark on every external object we create",
  );

  // Alone, as the leader of a Lease, or for a part of a ring (run-modes.ts).
  const mode = await runMode(config, {
    kube,
    metrics,
    log,
    group,
    title: spec.resource.title,
    caches: spec.caches,
  });
  const built = spec.build({
    config,
    plugin,
    kube: kube.target,
    metrics,
    log,
    settings: {
      ownerId,
      adoptOwnerIds: config.adoptOwnerIds,
      workers: config.workers,
      resyncPeriodMs: config.resyncPeriodMs,
      leakGraceMs: config.leakGraceMs,
      deleteOnUninstall: config.deleteOnUninstall,
      history,
      ...(mode.sharding ? { sharding: mode.sharding } : {}),
    },
  });
  const controllers = isList(built) ? combineControllers(built) : built;
  ready = () => mode.isReady(controllers);
  if (await controllers.startSources(stopping.signal)) await mode.run(controllers, stopping.signal);
  await stopped;
  await controllers.shutDown();
  await closeAll();
  await mode.close();
  // The last spans (the drain's) go out before we exit.
  await tracing?.shutdown();
  log.info("stopped");
  return 0;
}

function isList(
  built: ExternalResourceControllers | readonly ExternalResourceControllers[],
): built is readonly ExternalResourceControllers[] {
  return Array.isArray(built);
}

/**
 * The kubeconfig file to load: the loader is given only the flag, and reads KUBECONFIG (the flag's variable)
 * itself, a list merged as client-go merges it.
 */
function kubeconfigFile(config: ManagerConfig): string | undefined {
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

/**
 * Several plugins' controllers as one: each call goes to every one (they start, stop, reshard and shut down
 * together); ready when every one is; the caches' counts add up.
 *
 * # Guarantees
 * `startSources` and `reshard` resolve true only when every one did; `startControllers` resolves once every
 * one's did, and rejects if one's rejects.
 */
export function combineControllers(all: readonly ExternalResourceControllers[]): ExternalResourceControllers {
  const every = async (each: (c: ExternalResourceControllers) => Promise<boolean>) =>
    (await Promise.all(all.map(each))).every(Boolean);
  return {
    startSources: (signal) => every((c) => c.startSources(signal)),
    startControllers: async (signal) => {
      await Promise.all(all.map((c) => c.startControllers(signal)));
    },
    stopControllers: async (options) => {
      await Promise.all(all.map((c) => c.stopControllers(options)));
    },
    reshard: (ranges: readonly HashRange[], signal) => every((c) => c.reshard(ranges, signal)),
    cached: () =>
      all
        .map((c) => c.cached())
        .reduce((sum, c) => ({
          resources: sum.resources + c.resources,
          intents: sum.intents + c.intents,
          external: sum.external + c.external,
        })),
    shutDown: async () => {
      await Promise.all(all.map((c) => c.shutDown()));
    },
    isReady: () => all.every((c) => c.isReady()),
  };
}

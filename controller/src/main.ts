/**
 * The shapes controller process: only wiring. Configuration → logger, metrics, health → the shapes
 * controllers (shapes/setup.ts) → run them, as leader when leader election is on → stop cleanly on a signal.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { ConfigError, loadConfig, usage, type Config } from "./config.ts";
import { HealthServer } from "./core/health.ts";
import { createLogger } from "./core/logger.ts";
import { CoreMetrics } from "./core/metrics.ts";
import { createShapesControllers } from "./shapes/setup.ts";

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

  const log = createLogger("shapes-controller", config.logLevel);
  const kubeConfig = new KubeConfig();
  try {
    if (config.kubeconfig) kubeConfig.loadFromFile(config.kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (err) {
    process.stderr.write(`shapes-controller: cannot load the kubeconfig: ${(err as Error).message}\n`);
    return 2;
  }

  const metrics = new CoreMetrics({ prefix: "shapes_controller_", processMetrics: true });
  const shapes = createShapesControllers(kubeConfig, config, metrics, log);
  const health = new HealthServer({ registry: metrics.registry, logger: log });
  health.setReadinessCheck("controllers", () => shapes.isReady());
  const url = await health.start(config.metricsAddress);
  log.info(
    { url, cloud: config.cloudUrl, owner: config.ownerId, identity: config.identity },
    "serving /healthz, /readyz, /metrics",
  );

  // Stop on SIGINT/SIGTERM: stop taking work, drain what is in flight, then exit.
  const stopping = new AbortController();
  const stopped = new Promise<void>((resolve) => stopping.signal.addEventListener("abort", () => resolve()));
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      log.info({ signal }, "shutting down: draining in-flight reconciles");
      stopping.abort();
    });
  }

  const synced = await shapes.startSources(stopping.signal);
  if (synced) {
    log.info("caches synced: Shapes, ShapeRefs and owned cloud shapes");
    await shapes.startControllers(stopping.signal).catch((err: unknown) => {
      if (!stopping.signal.aborted) throw err;
    });
  }
  await stopped;
  await shapes.shutDown();
  await health.stop();
  log.info("stopped");
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`shapes-controller: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);

/**
 * The shapes controller process: the library's manager (reconcile-kit's runManager) runs the Shapes
 * controllers (shapes/setup.ts) with the command line of config.ts. The manager owns the rest: Kubernetes,
 * the metrics and health server, /why, the owner id, alone or leader election or the sharded ring, and the
 * drain on SIGTERM or SIGINT.
 */
import { runManager } from "reconcile-kit";
import { SHAPES_FLAGS } from "./config.ts";
import { createShapesControllers } from "./shapes/setup.ts";

runManager({
  ...SHAPES_FLAGS,
  metricsPrefix: "shapes_controller_",
  caches: "Shapes, ShapeRefs and owned cloud shapes",
  describe: (cloud) => ({ cloud: cloud.cloudUrl }),
  build: ({ config, plugin, kube, metrics, log, settings }) =>
    createShapesControllers(
      kube,
      {
        ...config,
        ...plugin,
        ...settings,
        ...(settings.sharding ? { sharded: settings.sharding } : {}),
      },
      metrics,
      log,
    ),
}).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`shapes-controller: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);

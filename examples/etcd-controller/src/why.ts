/**
 * `npm run why -w @shapes/etcd-controller -- <namespace>/<name>`: why did the etcd controller do what it did
 * to this ConfigEntry? The library's client (`runWhy`) reads the controller's `/why`, as it does for any
 * plugin; this file gives it the ConfigEntry's names and the controller's defaults. `--help` says more.
 */
import { runWhy, type WhyCommand } from "reconcile-kit";
import { CONFIG_ENTRIES, GROUP } from "./api.ts";

/** The etcd controller's `why` command. */
export const ETCD_WHY: WhyCommand = {
  command: "npm run why -w @shapes/etcd-controller",
  resource: { kind: "ConfigEntry", plural: CONFIG_ENTRIES, group: GROUP },
  example: "default/db-url",
  defaultMetricsUrl: "http://127.0.0.1:8081",
  metricsUrlEnv: "ETCD_METRICS_URL",
  tokenEnv: "ETCD_METRICS_TOKEN",
  listCommand: `kubectl get ${CONFIG_ENTRIES}.${GROUP} -n <namespace>`,
  dottedNameHint: "a ConfigEntry's external name is <name>.<namespace>, its key /config/<namespace>/<name>",
};

if (import.meta.main) {
  runWhy(ETCD_WHY, process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(
        `${ETCD_WHY.command}: ${error instanceof Error ? error.message : String(error)}\n`,
      );
      process.exitCode = 1;
    },
  );
}

/**
 * The etcd controller process, on the library's manager (runManager) like the DNS example: its flag (etcd's
 * client URL) on top of the library's, and how its controllers are built. The manager runs them: Kubernetes,
 * /healthz, /readyz, /metrics and /why, the owner id, one replica, `--leader-elect` or `--sharding`, and the
 * drain on SIGTERM or SIGINT. `--help` lists every flag.
 */
import {
  ConfigError,
  createExternalResourceControllers,
  type ManagerSpec,
  parseDuration,
  runManager,
} from "reconcile-kit";
import { CONFIG_ENTRIES, GROUP } from "./api.ts";
import { EtcdClient } from "./client.ts";
import { etcdEntriesClient, etcdPlugin } from "./plugin.ts";

/** The plugin's own settings. */
export interface EtcdFlags {
  etcdUrl: string;
  /** How long a watch may bring neither an event nor a progress notification before it is taken for dead. */
  watchIdleMs: number | undefined;
}

/** The etcd controller's process: its flags, its controllers. */
export const ETCD_CONTROLLER: ManagerSpec<EtcdFlags> = {
  name: "etcd-controller",
  command: "node examples/etcd-controller/src/main.ts --etcd-url URL [options]",
  summary: `Keeps an etcd key /config/<namespace>/<name> for every ConfigEntry (${GROUP}/v1alpha1).`,
  resource: { group: GROUP, resource: CONFIG_ENTRIES, title: "ConfigEntries" },
  defaults: { leaderElectionNamespace: "etcd-config-system", leaderElectionName: "etcd-controller" },
  options: [
    { flag: "etcd-url", env: "ETCD_URL", help: "etcd's client URL, its JSON gateway (required)" },
    {
      flag: "watch-idle",
      env: "ETCD_WATCH_IDLE",
      help:
        "the longest a watch may stay quiet (no event, no progress notification) before the controller " +
        "reconnects; a few times etcd's --watch-progress-notify-interval (default 90s; etcd's own " +
        "interval is 10m, so raise it for an etcd left at its defaults)",
    },
  ],
  parse(read) {
    const etcdUrl = read.get("etcd-url");
    if (etcdUrl === undefined) throw new ConfigError("cannot start: --etcd-url URL is required");
    if (!URL.canParse(etcdUrl)) {
      const example = "(e.g. http://127.0.0.1:2379)";
      throw new ConfigError(`cannot start: --etcd-url ${JSON.stringify(etcdUrl)} is not a URL ${example}`);
    }
    const idle = read.get("watch-idle");
    const watchIdleMs = idle === undefined ? undefined : parseDuration(idle);
    if (idle !== undefined && !(watchIdleMs !== undefined && watchIdleMs > 0)) {
      throw new ConfigError(
        `cannot start: --watch-idle ${JSON.stringify(idle)} is not a duration (e.g. 90s, 25m)`,
      );
    }
    return { etcdUrl, watchIdleMs };
  },
  metricsPrefix: "etcd_controller_",
  caches: "ConfigEntries, ConfigEntryRefs and owned etcd keys",
  describe: ({ etcdUrl }) => ({ etcd: etcdUrl }),
  build({ plugin, kube, metrics, log, settings }) {
    const etcd = new EtcdClient({
      baseUrl: plugin.etcdUrl,
      onCall: (verb, status) => metrics.externalRequests.inc({ verb, status: String(status) }),
    });
    const entries = {
      plugin: etcdPlugin(etcd, { watchIdleMs: plugin.watchIdleMs }),
      client: etcdEntriesClient(etcd),
      component: "etcd-controller",
    };
    return createExternalResourceControllers(kube, { ...entries, ...settings }, metrics, log);
  },
};

if (import.meta.main) {
  runManager(ETCD_CONTROLLER).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`etcd-controller: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}

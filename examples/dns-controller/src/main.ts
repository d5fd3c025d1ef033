/**
 * The DNS controller process, the pattern for a plugin's main: its flags (the zone's URL) on top of the
 * library's, and how its controllers are built. The library's manager (runManager) runs them: Kubernetes,
 * /healthz, /readyz, /metrics and /why, the owner id, one replica, `--leader-elect` or `--sharding`, and the
 * drain on SIGTERM or SIGINT. `--help` lists every flag.
 */
import { ConfigError, createExternalResourceControllers, type ManagerSpec, runManager } from "reconcile-kit";
import { GROUP, RECORDS } from "./api.ts";
import { ZoneClient } from "./client.ts";
import { dnsPlugin, zoneRecordsClient } from "./plugin.ts";

/** The plugin's own settings. */
export interface DnsFlags {
  zoneUrl: string;
}

/** The DNS controller's process: its flags, its controllers. */
export const DNS_CONTROLLER: ManagerSpec<DnsFlags> = {
  name: "dns-controller",
  command: "node examples/dns-controller/src/main.ts --zone-url URL [options]",
  summary: `Keeps a zone record for every Record (${GROUP}/v1alpha1), named <name>.<namespace>.example.test.`,
  resource: { group: GROUP, resource: RECORDS, title: "Records" },
  defaults: { leaderElectionNamespace: "dns-system", leaderElectionName: "dns-controller" },
  options: [{ flag: "zone-url", env: "ZONE_URL", help: "the zone API (required)" }],
  parse(read) {
    const zoneUrl = read.get("zone-url");
    if (zoneUrl === undefined) throw new ConfigError("cannot start: --zone-url URL is required");
    if (!URL.canParse(zoneUrl)) {
      const example = "(e.g. http://127.0.0.1:8053)";
      throw new ConfigError(`cannot start: --zone-url ${JSON.stringify(zoneUrl)} is not a URL ${example}`);
    }
    return { zoneUrl };
  },
  metricsPrefix: "dns_controller_",
  caches: "Records, RecordRefs and owned zone records",
  describe: ({ zoneUrl }) => ({ zone: zoneUrl }),
  build({ plugin, kube, metrics, log, settings }) {
    const zone = new ZoneClient({
      baseUrl: plugin.zoneUrl,
      clientId: "dns-controller",
      onCall: (verb, status) => metrics.externalRequests.inc({ verb, status: String(status) }),
    });
    const records = { plugin: dnsPlugin(zone), client: zoneRecordsClient(zone), component: "dns-controller" };
    return createExternalResourceControllers(kube, { ...records, ...settings }, metrics, log);
  },
};

if (import.meta.main) {
  runManager(DNS_CONTROLLER).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`dns-controller: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}

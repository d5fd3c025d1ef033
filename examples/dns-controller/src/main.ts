/**
 * The DNS controller process: flags → logger, metrics, health → the library's controllers for the Record
 * plugin (library/src/controllers.ts) → run until SIGTERM or SIGINT, then drain and exit.
 */
import { parseArgs } from "node:util";
import {
  CoreMetrics,
  createExternalResourceControllers,
  createLogger,
  DecisionHistory,
  HealthServer,
  HeapPageRelease,
  KubeAccessReviewer,
  METRICS_AUTH_MODES,
  metricsAuthEnabled,
  type MetricsAuthMode,
  openKubeAccess,
  parseAllowedHosts,
  parseListenAddress,
  waitForClusterId,
} from "reconcile-kit";
import { startTracing, type Tracing, TRACING_HELP } from "reconcile-kit/tracing";
import { GROUP, RECORDS } from "./api.ts";
import { ZoneClient } from "./client.ts";
import { dnsPlugin, zoneRecordsClient } from "./plugin.ts";

const USAGE = `Usage: node examples/dns-controller/src/main.ts --zone-url URL [options]

Keeps a zone record for every Record (dns.example.com/v1alpha1), named <name>.<namespace>.example.test.
One replica only: there is no leader election, so never run two against the same cluster and zone.

  --zone-url URL               the zone API (required)
  --owner-id ID                the owner label on our zone records (default: k8s-<uid of kube-system>)
  --kubeconfig PATH            default: $KUBECONFIG (its files merged), in-cluster, or ~/.kube/config
  --metrics-address HOST:PORT  serves /healthz, /readyz, /metrics, /why (default 127.0.0.1:8081; port 0: any)
  --metrics-auth MODE          who may read /metrics and /why: kubernetes (a bearer token the API server
                               authenticates, of a user who may get /metrics, or get the Record for
                               /why/<namespace>/<name>), none (whoever reaches the port), or auto (default:
                               kubernetes in a cluster on the pod's service account, else none)
  --metrics-allowed-hosts NAMES  while the port asks for no token: host names, comma-separated, it answers
                               for besides localhost, IP addresses and the --metrics-address host (another
                               Host is answered 421, against DNS rebinding)
  --resync-period-ms N         reconcile everything and relist the zone every N ms (default 300000)
  --leak-grace-ms N            delete a zone record of ours that nothing claims after N ms (default 60000)
  --delete-on-uninstall        delete zone records (deletionPolicy Delete) even while the Record CRD is
                               being deleted; by default an uninstall releases them: they stay, unowned
  --help                       print this and exit

${TRACING_HELP}`;

/** The process's settings, from its flags. */
interface Flags {
  zoneUrl: string;
  ownerId: string | undefined;
  kubeconfig: string | undefined;
  metricsAddress: string;
  metricsAuth: MetricsAuthMode;
  /** Without a token, the names the port answers for besides localhost and IP addresses (HealthServer). */
  metricsAllowedHosts: string[];
  resyncPeriodMs: number;
  leakGraceMs: number;
  /** Delete zone records even while the Record CRD is being deleted (an uninstall); default: release them. */
  deleteOnUninstall: boolean;
}

/** Reads the flags; throws "cannot …" with one line a person can act on. */
export function parseFlags(argv: string[]): Flags | "help" {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        "zone-url": { type: "string" },
        "owner-id": { type: "string" },
        kubeconfig: { type: "string" },
        "metrics-address": { type: "string", default: "127.0.0.1:8081" },
        "metrics-auth": { type: "string", default: "auto" },
        "metrics-allowed-hosts": { type: "string", default: "" },
        "resync-period-ms": { type: "string", default: "300000" },
        "leak-grace-ms": { type: "string", default: "60000" },
        "delete-on-uninstall": { type: "boolean", default: false },
        help: { type: "boolean" },
      },
    }));
  } catch (err) {
    throw new Error(`cannot read the flags: ${(err as Error).message.split(". ")[0]} (see --help)`, {
      cause: err,
    });
  }
  if (values.help) return "help";
  const zoneUrl = values["zone-url"];
  if (zoneUrl === undefined) throw new Error("cannot start: --zone-url URL is required");
  if (!URL.canParse(zoneUrl)) {
    throw new Error(
      `cannot start: --zone-url ${JSON.stringify(zoneUrl)} is not a URL (e.g. http://127.0.0.1:8053)`,
    );
  }
  parseListenAddress(values["metrics-address"]);
  let metricsAllowedHosts: string[];
  try {
    metricsAllowedHosts = parseAllowedHosts(values["metrics-allowed-hosts"]);
  } catch (err) {
    throw new Error(`cannot start: --metrics-allowed-hosts: ${(err as Error).message}`, { cause: err });
  }
  const metricsAuth = METRICS_AUTH_MODES.find((m) => m === values["metrics-auth"]);
  if (metricsAuth === undefined) {
    throw new Error(
      `cannot start: --metrics-auth ${JSON.stringify(values["metrics-auth"])} must be one of ${METRICS_AUTH_MODES.join(", ")}`,
    );
  }
  const ms = (flag: "resync-period-ms" | "leak-grace-ms", min: number) => {
    const n = Number(values[flag]);
    if (!Number.isSafeInteger(n) || n < min)
      throw new Error(`cannot start: --${flag} must be a whole number of ms, at least ${min}`);
    return n;
  };
  return {
    zoneUrl,
    ownerId: values["owner-id"],
    kubeconfig: values.kubeconfig,
    metricsAddress: values["metrics-address"],
    metricsAuth,
    metricsAllowedHosts,
    resyncPeriodMs: ms("resync-period-ms", 1),
    leakGraceMs: ms("leak-grace-ms", 0),
    deleteOnUninstall: values["delete-on-uninstall"],
  };
}

async function main(): Promise<number> {
  let flags: Flags | "help";
  try {
    flags = parseFlags(process.argv.slice(2));
    if (flags === "help") {
      process.stdout.write(USAGE);
      return 0;
    }
  } catch (err) {
    process.stderr.write(`dns-controller: ${(err as Error).message.split("\n")[0]}\n`);
    return 2;
  }
  // The library traces every reconcile; spans leave the process only with OTEL_EXPORTER_OTLP_ENDPOINT set.
  let tracing: Tracing | undefined;
  try {
    tracing = await startTracing("dns-controller");
  } catch (err) {
    process.stderr.write(`dns-controller: ${(err as Error).message}\n`);
    return 2;
  }
  const log = createLogger("dns-controller");
  // The API server, through the library's lean client (library/src/kube/kube-access.ts); the log says when an
  // exec plugin or auth provider has it load client-node's loader.
  const opened = await openKubeAccess({ kubeconfig: flags.kubeconfig, log });
  if (opened.kind === "invalid") {
    process.stderr.write(`dns-controller: ${opened.message.split("\n")[0]}\n`);
    return 2;
  }
  const { kube } = opened;
  const metrics = new CoreMetrics({ prefix: "dns_controller_", processMetrics: true });
  const history = new DecisionHistory(); // GET /why/<namespace>/<name>: what each reconcile did, and why
  // Who may read /metrics and /why (--metrics-auth): the library's gate, the Record as the resource to get.
  const reviewer = metricsAuthEnabled(flags.metricsAuth, kube.target)
    ? new KubeAccessReviewer(kube.target)
    : undefined;
  const health = new HealthServer({
    registry: metrics.registry,
    logger: log,
    history,
    ...(reviewer ? { access: { reviewer, resource: { group: GROUP, resource: RECORDS } } } : {}),
    allowedHosts: flags.metricsAllowedHosts,
  });
  let ready = () => false;
  health.setReadinessCheck("controllers", () => ready());
  const url = await health.start(flags.metricsAddress);
  log.info(
    { url, zone: flags.zoneUrl, metricsAuth: reviewer ? "kubernetes" : "none" },
    "serving /healthz, /readyz, /metrics",
  );

  // V8 keeps the heap pages a burst emptied until asked to reduce memory (needs node --expose-gc).
  const heapPages = new HeapPageRelease({ log });
  heapPages.start();

  const stopping = new AbortController();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      log.info({ signal }, "shutting down: draining in-flight reconciles");
      stopping.abort();
    });
  }
  const stopped = new Promise((resolve) => stopping.signal.addEventListener("abort", resolve));

  // Our owner label: by default the cluster's id, so clusters sharing one zone never take each other's records.
  const ownerId =
    flags.ownerId ??
    (await waitForClusterId(() => kube.readDefaultOwnerId(), {
      signal: stopping.signal,
      onError: (err, retryInMs) =>
        log.error({ err, retryInMs }, "cannot know our owner id: writing nothing yet"),
    }));
  if (ownerId !== undefined) {
    metrics.ownerInfo.set({ owner_id: ownerId }, 1);
    log.info({ owner: ownerId }, "our owner id: the owner label on every zone record we create");
    const zone = new ZoneClient({
      baseUrl: flags.zoneUrl,
      clientId: "dns-controller",
      onCall: (verb, status) => metrics.cloudRequests.inc({ verb, status: String(status) }),
    });
    const controllers = createExternalResourceControllers(
      kube.target,
      {
        plugin: dnsPlugin(zone),
        client: zoneRecordsClient(zone),
        ownerId,
        resyncPeriodMs: flags.resyncPeriodMs,
        leakGraceMs: flags.leakGraceMs,
        deleteOnUninstall: flags.deleteOnUninstall,
        component: "dns-controller",
        history,
      },
      metrics,
      log,
    );
    ready = () => controllers.isReady();
    if (await controllers.startSources(stopping.signal)) {
      metrics.leader.set(1); // the one replica leads
      await controllers.startControllers(stopping.signal).catch((err: unknown) => {
        if (!stopping.signal.aborted) throw err;
      });
    }
    await stopped;
    await controllers.shutDown();
  }
  heapPages.stop();
  await health.stop();
  await reviewer?.close();
  await kube.close();
  await tracing?.shutdown();
  log.info("stopped");
  return 0;
}

if (import.meta.main) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`dns-controller: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}

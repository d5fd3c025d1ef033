/**
 * The shapes controllers: the cloud client (with the process-wide rate limiter), the Shape plugin, and the
 * library's controllers for it (library/src/controllers.ts). `main.ts` decides WHEN they run
 * (leader election, signals); the library decides WHAT runs.
 */
import {
  type CoreMetrics,
  createExternalResourceControllers,
  type DecisionHistory,
  type ExternalResourceControllers,
  type KubeConnection,
  type Logger,
  RateLimiter,
} from "reconcile-kit";
import { CloudClient } from "./cloud/client.ts";
import { cloudShapesClient, shapesPlugin } from "./plugin.ts";

/** What the shapes controllers need to know. */
export interface ShapesSettings {
  cloudUrl: string;
  cloudToken: string;
  /** The owner tag's value on the cloud shapes we own (main.ts resolves the per-cluster default). */
  ownerId: string;
  /** Earlier owner ids of ours: their shapes that match a local Shape or ShapeRef by name and uid are adopted. */
  adoptOwnerIds: readonly string[];
  workers: number;
  resyncPeriodMs: number;
  leakGraceMs: number;
  /** Delete cloud shapes even while the Shape CRD is being deleted (an uninstall); default: release them. */
  deleteOnUninstall?: boolean;
  /** Identifies this replica to the cloud (X-Client-Id) and in logs. */
  identity: string;
  /** Cloud calls per second for the whole process (a token bucket); 0: no limiter. */
  cloudQps: number;
  /** Cloud calls that may go at once above `cloudQps`. */
  cloudBurst: number;
  /** Where the reconciles' stories are kept (`GET /why`); none when absent. */
  history?: DecisionHistory;
  /** Split the work among replicas (library/src/leadership/sharded.ts); `serverSide`: the API server filters the Shapes. */
  sharded?: { serverSide: boolean };
}

/**
 * Builds the shapes controllers; nothing runs until `startSources`. Every Kubernetes call, informers included,
 * goes over the library's lean client on `kube`.
 */
export function createShapesControllers(
  kube: KubeConnection,
  settings: ShapesSettings,
  metrics: CoreMetrics,
  log: Logger,
): ExternalResourceControllers {
  const cloud = new CloudClient({
    baseUrl: settings.cloudUrl,
    token: settings.cloudToken,
    clientId: settings.identity,
    onCall: (verb, status) => metrics.externalRequests.inc({ verb, status: String(status) }),
    // One bucket for every cloud call of this process, so a 429 or an outage holds them all (library/src/queue/rate-limiter.ts).
    limiter:
      settings.cloudQps > 0
        ? new RateLimiter({
            qps: settings.cloudQps,
            burst: settings.cloudBurst,
            hooks: metrics.rateLimiterHooks("cloud"),
          })
        : undefined,
  });
  return createExternalResourceControllers(
    kube,
    {
      plugin: shapesPlugin(cloud),
      client: cloudShapesClient(cloud),
      ownerId: settings.ownerId,
      adoptOwnerIds: settings.adoptOwnerIds,
      workers: settings.workers,
      resyncPeriodMs: settings.resyncPeriodMs,
      leakGraceMs: settings.leakGraceMs,
      deleteOnUninstall: settings.deleteOnUninstall ?? false,
      component: "shapes-controller",
      ...(settings.history ? { history: settings.history } : {}),
      ...(settings.sharded ? { sharding: settings.sharded } : {}),
    },
    metrics,
    log,
  );
}

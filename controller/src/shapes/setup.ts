/**
 * Assembles the shapes controllers from the generic core: three sources (Shape informer, ShapeRef
 * informer, cloud list-watch), handlers that turn their events into keys, and three controllers (Shape,
 * ShapeRef, cloud sweep). `main.ts` decides WHEN they run (leader election, signals); this file decides WHAT.
 */
import { CustomObjectsApi, type KubeConfig, type KubernetesListObject } from "@kubernetes/client-node";
import { Controller } from "../core/controller.ts";
import { KubeEventRecorder } from "../core/events.ts";
import { ExternalInformer, type ListWatchClient } from "../core/external-informer.ts";
import { WriteFence } from "../core/fence.ts";
import { SupervisedInformer } from "../core/informer.ts";
import type { Logger } from "../core/logger.ts";
import type { CoreMetrics } from "../core/metrics.ts";
import { RateLimiter } from "../core/rate-limiter.ts";
import { initialSync, startPeriodicResync, type PeriodicResync } from "../core/resync.ts";
import { GROUP, SHAPEREFS, SHAPES, VERSION, shapeRefNameOf, type Shape, type ShapeRef } from "./api.ts";
import { CloudClient, type CloudShape } from "./cloud/client.ts";
import { ownedShapesListWatch } from "./cloud/list-watch.ts";
import { cacheObserver, perObjectObserver } from "./cloud/observers.ts";
import { CloudSweep } from "./cloud-sweep.ts";
import { onCloudEvent, onShapeEvent, onShapeUpdate, onShapeRefEvent, shapeKey } from "./handlers.ts";
import { KubeShapeWriter } from "./kube.ts";
import type { CloudCache, Lister, ShapeCounters } from "./ports.ts";
import { ShapeReconciler } from "./shape-reconciler.ts";
import { ShapeRefReconciler } from "./shaperef-reconciler.ts";

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
  /** Identifies this replica to the cloud (X-Client-Id) and in logs. */
  identity: string;
  /** Follow the cloud's change feed (false: periodic relist only). */
  cloudWatch: boolean;
  /** How a reconcile observes its cloud shape: the list-watch cache, or one request each (an ablation). */
  observe: "cache" | "get";
  /** Cloud calls per second for the whole process (a token bucket); 0: no limiter. */
  cloudQps: number;
  /** Cloud calls that may go at once above `cloudQps`. */
  cloudBurst: number;
}

/** The running parts, for main.ts to start, stop and report on. */
export interface ShapesControllers {
  /** Starts the informers and waits until every cache has listed once (false if `signal` aborted first). */
  startSources(signal: AbortSignal): Promise<boolean>;
  /**
   * Starts reconciling (as leader): full resync of everything first, then periodic resyncs. Writes are
   * allowed until `signal` aborts — at that instant every further write is refused (the fence) and requests
   * in flight are aborted; call `stopControllers` to drain.
   */
  startControllers(signal: AbortSignal): Promise<void>;
  /** Stops reconciling (leadership lost or shutdown); in-flight reconciles are aborted and drained. */
  stopControllers(): Promise<void>;
  /** Stops everything for good. */
  shutDown(): Promise<void>;
  /** True once the sources synced and the startup resync has reconciled every object once. */
  isReady(): boolean;
}

/** Builds the shapes controllers; nothing runs until `startSources`. */
export function createShapesControllers(
  kubeConfig: KubeConfig,
  settings: ShapesSettings,
  metrics: CoreMetrics,
  log: Logger,
): ShapesControllers {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const informerHooks = { onRestart: (name: string) => metrics.informerRestarts.inc({ informer: name }) };

  // Sources.
  const shapeInformer = new SupervisedInformer<Shape>({
    name: "shapes",
    kubeConfig,
    path: `/apis/${GROUP}/${VERSION}/${SHAPES}`,
    listFn: () =>
      api.listCustomObjectForAllNamespaces({
        group: GROUP,
        version: VERSION,
        resourcePlural: SHAPES,
      }) as Promise<KubernetesListObject<Shape>>,
    logger: log,
    hooks: informerHooks,
  });
  const refInformer = new SupervisedInformer<ShapeRef>({
    name: "shaperefs",
    kubeConfig,
    path: `/apis/${GROUP}/${VERSION}/${SHAPEREFS}`,
    listFn: () =>
      api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: SHAPEREFS }) as Promise<
        KubernetesListObject<ShapeRef>
      >,
    logger: log,
    hooks: informerHooks,
  });
  const cloud = new CloudClient({
    baseUrl: settings.cloudUrl,
    token: settings.cloudToken,
    clientId: settings.identity,
    onCall: (verb, status) => metrics.cloudRequests.inc({ verb, status: String(status) }),
    // One bucket for every cloud call of this process, so a 429 or an outage holds them all (core/rate-limiter.ts).
    limiter:
      settings.cloudQps > 0
        ? new RateLimiter({
            qps: settings.cloudQps,
            burst: settings.cloudBurst,
            hooks: metrics.rateLimiterHooks("cloud"),
          })
        : undefined,
  });
  const cloudInformer = new ExternalInformer<CloudShape>({
    name: "cloud-shapes",
    client: settings.cloudWatch
      ? ownedShapesListWatch(cloud, settings.ownerId)
      : relistOnly(ownedShapesListWatch(cloud, settings.ownerId)),
    key: (s) => s.name,
    revisionOf: (s) => s.revision,
    relistPeriodMs: settings.resyncPeriodMs,
    logger: log,
    hooks: { onWatchRestart: (name) => metrics.informerRestarts.inc({ informer: name }) },
  });

  // Ports over the caches and the APIs.
  const shapes: Lister<Shape> = {
    get: (key) => {
      const slash = key.indexOf("/");
      return shapeInformer.get(key.slice(slash + 1), key.slice(0, slash));
    },
    list: () => shapeInformer.list(),
  };
  const shapeRefs: Lister<ShapeRef> = {
    get: (name) => refInformer.get(name),
    list: () => refInformer.list(),
  };
  const cloudCache: CloudCache = {
    byName: (name) => cloudInformer.get(name),
    list: () => cloudInformer.list(),
  };
  // Every writer the reconcilers get goes through the fence: only a leader writes (see core/fence.ts).
  // The informers' reads (list, watch) do not: a standby keeps its caches warm for a fast takeover.
  const fence = new WriteFence();
  const kube = fence.guard(
    new KubeShapeWriter(kubeConfig, (verb, resource) => metrics.kubeWrites.inc({ verb, resource })),
  );
  const events = fence.guard(
    new KubeEventRecorder(kubeConfig, {
      component: "shapes-controller",
      onWrite: () => metrics.kubeWrites.inc({ verb: "create", resource: "events" }),
      log,
    }),
  );
  const cloudWriter = fence.guard(cloud);
  const counters: ShapeCounters = {
    driftRepaired: () => metrics.driftRepairs.inc(),
    leakRemoved: () => metrics.leaksRemoved.inc(),
    foreignSeen: () => metrics.foreignObjectsSeen.inc(),
    adopted: (from) => metrics.adoptions.inc({ from }),
  };
  const common = { shapes, shapeRefs, cloudCache, cloud: cloudWriter, kube, counters };
  const owners = { ownerId: settings.ownerId, adoptOwnerIds: settings.adoptOwnerIds };
  const observer =
    settings.observe === "get" ? perObjectObserver(cloudWriter, settings.ownerId) : cacheObserver(cloudCache);

  // Controllers.
  const controllers = {
    shapes: new Controller({
      name: "shape",
      reconciler: new ShapeReconciler({ ...common, observer, events, ...owners, log }),
      workers: settings.workers,
      logger: log,
      metrics,
    }),
    shapeRefs: new Controller({
      name: "shaperef",
      reconciler: new ShapeRefReconciler({ ...common, ...owners, log }),
      workers: 1,
      logger: log,
      metrics,
    }),
    sweep: new Controller({
      name: "cloud-sweep",
      reconciler: new CloudSweep({
        ...common,
        ownerId: settings.ownerId,
        graceMs: settings.leakGraceMs,
        log,
      }),
      workers: 1,
      logger: log,
      metrics,
    }),
  };

  // Handlers: events → keys. Keys queue up even while not leading; they run once the controllers start.
  shapeInformer.on("add", (s) => onShapeEvent(controllers, s));
  // Updates of the status alone are our own echo: no reconcile for them (handlers.ts says why).
  shapeInformer.on("update", (old, s) => onShapeUpdate(controllers, old, s));
  shapeInformer.on("delete", (s) => onShapeEvent(controllers, s, true));
  refInformer.on("add", (r) => onShapeRefEvent(controllers, r));
  refInformer.on("update", (_old, r) => onShapeRefEvent(controllers, r));
  refInformer.on("delete", (r) => onShapeRefEvent(controllers, r));
  cloudInformer.on("add", (c) => onCloudEvent(controllers, c));
  cloudInformer.on("update", (_old, c) => onCloudEvent(controllers, c));
  cloudInformer.on("delete", (c) => onCloudEvent(controllers, c));

  const allKeys = {
    shapes: () => shapeInformer.list().map(shapeKey),
    shapeRefs: () => refInformer.list().map((r) => r.metadata.name),
    // The sweep looks at every owned cloud shape, plus the names of every Shape (a crash-left shape
    // whose bookkeeping never happened is found by its name).
    sweep: () => [
      ...new Set([
        ...cloudInformer.list().map((c) => c.name),
        ...shapeInformer.list().map((s) => shapeRefNameOf(s.metadata.namespace, s.metadata.name)),
      ]),
    ],
  };

  let resyncs: PeriodicResync[] = [];
  let ready = false;

  return {
    async startSources(signal) {
      await Promise.all([shapeInformer.start(), refInformer.start()]);
      cloudInformer.start();
      const synced = await Promise.all([
        shapeInformer.waitForSync(signal),
        refInformer.waitForSync(signal),
        cloudInformer.waitForSync(signal),
      ]);
      return synced.every(Boolean);
    },

    async startControllers(signal) {
      fence.open(signal);
      for (const c of Object.values(controllers)) c.start();
      // Full resync at startup: every Shape, ShapeRef and owned cloud shape is reconciled once before we
      // call ourselves ready — this is what catches everything that happened while we were down.
      await Promise.all([
        initialSync(controllers.shapes, allKeys.shapes, signal),
        initialSync(controllers.shapeRefs, allKeys.shapeRefs, signal),
      ]);
      initialSync(controllers.sweep, allKeys.sweep, signal).catch(() => {});
      ready = true;
      log.info("startup resync done: every Shape and ShapeRef reconciled once");
      // Then periodically, with jitter: the safety net for anything an event did not bring.
      resyncs = (["shapes", "shapeRefs", "sweep"] as const).map((name) =>
        startPeriodicResync({
          target: controllers[name],
          listKeys: allKeys[name],
          periodMs: settings.resyncPeriodMs,
          logger: log,
        }),
      );
    },

    async stopControllers() {
      fence.close();
      ready = false;
      for (const r of resyncs) r.stop();
      resyncs = [];
      await Promise.all(Object.values(controllers).map((c) => c.stop()));
    },

    async shutDown() {
      fence.close();
      ready = false;
      for (const r of resyncs) r.stop();
      await Promise.all(Object.values(controllers).map((c) => c.shutDown()));
      await Promise.all([shapeInformer.stop(), refInformer.stop(), cloudInformer.stop()]);
    },

    isReady: () => ready,
  };
}

/** The change-feed ablation: a watch that never delivers, so only the periodic relist observes the cloud. */
function relistOnly<T>(lw: ListWatchClient<T>): ListWatchClient<T> {
  return {
    list: (pageToken, signal) => lw.list(pageToken, signal),
    watch: (_since, _onEvent, signal) =>
      new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true })),
  };
}

/**
 * Assembles the controllers of one plugin from the core: three sources (the resource informer, the
 * intent-record informer, the external list-watch), handlers that turn their events into keys, and three
 * controllers (resource, intent record, sweep), with the full resync at startup and the periodic one after.
 * A process's main decides WHEN they run (leader election, signals); this file decides WHAT.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import { Controller } from "./queue/controller.ts";
import type { HashRange } from "./leadership/ring.ts";
import { ShardPlacement } from "./leadership/sharded.ts";
import { deepEqual } from "./reconcile/diff.ts";
import { KubeEventRecorder, leanEventSink, type EventRecorder } from "./kube/events.ts";
import { KubeHttp } from "./kube/kube-http.ts";
import type { KubeConnection } from "./kube/kubeconfig.ts";
import { onEveryEvent, type CacheEvent } from "./source/cache-events.ts";
import { OwnWrites } from "./source/own-writes.ts";
import type { DecisionHistory } from "./observability/history.ts";
import { ExternalInformer } from "./source/external-informer.ts";
import {
  FencedEventRecorder,
  FencedExternalClient,
  FencedResourceWriter,
  WriteFence,
} from "./leadership/fence.ts";
import { SupervisedInformer } from "./source/informer.ts";
import type { Logger } from "./observability/logger.ts";
import type { CoreMetrics } from "./observability/metrics.ts";
import { reconcileAnnotations } from "./observability/reconcile-scope.ts";
import { initialSync, startPeriodicResync, type PeriodicResync } from "./source/resync.ts";
import type {
  ExternalClient,
  ExternalResourcePlugin,
  IntentRecord,
  ManagedResource,
} from "./reconcile/contract.ts";
import { IntentReconciler } from "./reconcile/intent-reconciler.ts";
import { KubeResourceWriter, type ResourceWriter } from "./reconcile/kube-writer.ts";
import type { Counters, ExternalCache, Lister, SharedDeps } from "./reconcile/ports.ts";
import { ExternalResourceReconciler, type ReconcilerDeps } from "./reconcile/reconciler.ts";
import { Sweep } from "./reconcile/sweep.ts";
import { Tombstones } from "./reconcile/tombstones.ts";
import { TracedEventRecorder, TracedExternalClient, TracedResourceWriter } from "./reconcile/traced.ts";

/** What the controllers of one plugin need to know. */
export interface ExternalResourceSettings<R extends ManagedResource, E> {
  /** The plugin: the two kinds, how one maps to the other, and its events' words. */
  plugin: ExternalResourcePlugin<R, E>;
  /** The external API (every call goes through the write fence: only a leader writes). */
  client: ExternalClient<E>;
  /** The owner mark on the external objects we own (see kube/cluster-identity.ts for the default). */
  ownerId: string;
  /** Earlier owner ids of ours: their objects that match a resource by name and uid are adopted. */
  adoptOwnerIds?: readonly string[];
  /** Reconciles at once for the resources (the intent records and the sweep get one worker each). */
  workers?: number;
  /** How often everything is reconciled again, and the external API relisted. Default 5 min. */
  resyncPeriodMs?: number;
  /** How long an unclaimed object of ours stays before the sweep deletes it. Default 60 s. */
  leakGraceMs?: number;
  /** The component name on the Events we record. */
  component: string;
  /** Looks again this often at a resource whose name a foreign object holds. Default 5 s. */
  conflictRecheckMs?: number;
  /** Waits this long before looking again while an earlier namesake's object is cleaned up. Default 5 s. */
  cleanupWaitMs?: number;
  /**
   * Delete external objects (deletionPolicy Delete) even while the resource's CRD is being deleted: an
   * uninstall, or a mistake. Default false: then they are released (our owner marks removed) instead, and
   * every delete first reads the CRD, which takes `get` on `customresourcedefinitions` for the resource's
   * own CRD in the controller's RBAC (reconcile/uninstall.ts).
   */
  deleteOnUninstall?: boolean;
  /** Keeps what each reconcile of the three controllers saw, decided and did (`GET /why`). Optional. */
  history?: DecisionHistory;
  /**
   * Shard the work among replicas (leadership/sharded.ts): this replica caches and reconciles only the resources
   * whose uid hashes into the ranges `reshard` gives it, with their intent records (by the uid they record)
   * and their external objects (by their uid mark; by name when they have none). One hash per resource, so
   * the three always land on the same replica. `serverSide`: also ask the API server to filter the
   * resources' list and watch (KEP-5866); the filter on our side stays on either way.
   */
  sharding?: { serverSide: boolean };
}

/**
 * The running parts of one plugin's controllers, for a main to start, stop and report on: the main decides
 * WHEN they run (leader election, signals, the run mode), {@link createExternalResourceControllers} WHAT.
 *
 * # Guarantees
 * - Writes happen only between `startControllers` and the abort of its signal (or `stopControllers`,
 *   `shutDown`): at that instant every further write is refused by the fence and requests in flight are
 *   aborted, so a replica that lost its lease writes nothing more.
 * - `isReady` is true only once the sources synced and the startup resync reconciled every resource and
 *   intent record once; false again from `stopControllers` or `shutDown` on.
 * - The sources run independently of the controllers: a standby's caches stay warm, and keys queued while
 *   not leading run once the controllers start.
 *
 * # Assumptions
 * The calls come in order: `startSources`, then `startControllers` / `stopControllers` any number of times
 * (with `reshard` between them when sharded), then `shutDown` once.
 */
export interface ExternalResourceControllers {
  /**
   * Starts the informers and waits until every cache has listed once (false if `signal` aborted first).
   * Sharded: returns at once; the caches start with the first `reshard`.
   */
  startSources(signal: AbortSignal): Promise<boolean>;
  /**
   * Starts reconciling (as leader): full resync of everything first, then periodic resyncs. Writes are
   * allowed until `signal` aborts — at that instant every further write is refused (the fence) and requests
   * in flight are aborted; call `stopControllers` to drain.
   */
  startControllers(signal: AbortSignal): Promise<void>;
  /**
   * Stops reconciling (leadership lost, shutdown, a handover); in-flight reconciles are aborted and drained.
   * With `graceMs`, they first get that long to finish on their own (a handover: their writes complete).
   */
  stopControllers(options?: { graceMs?: number }): Promise<void>;
  /**
   * Sharded only (`settings.sharding`): call with the controllers stopped. Applies new ranges: the caches drop
   * what left them (without events) and relist what joined. Resolves true once all three hold the new ranges,
   * false if `signal` aborted first. Then `startControllers` reconciles every key of the new ranges once.
   */
  reshard(ranges: readonly HashRange[], signal: AbortSignal): Promise<boolean>;
  /** How many objects each cache holds: with sharding, what this replica owns. */
  cached(): { resources: number; intents: number; external: number };
  /** Stops everything for good. */
  shutDown(): Promise<void>;
  /** True once the sources synced and the startup resync has reconciled every object once. */
  isReady(): boolean;
}

/** The key of a namespaced object: `namespace/name`. */
export const keyOf = (obj: ManagedResource): string => `${obj.metadata.namespace}/${obj.metadata.name}`;

/**
 * True when `obj` differs from `old` in anything the reconciler acts on: the spec (its generation), the
 * annotations (paused, refresh), the finalizers, the deletion timestamp. An update of the status alone is not
 * a reason: the status is the controller's own output, and reconciling on its echo would retry a failing
 * resource at once — ignoring the backoff, and the API's Retry-After, just set for it.
 */
export function reconcileWorthy(old: ManagedResource, obj: ManagedResource): boolean {
  const was = old.metadata;
  const is = obj.metadata;
  return (
    was.uid !== is.uid ||
    was.generation !== is.generation ||
    String(was.deletionTimestamp ?? "") !== String(is.deletionTimestamp ?? "") ||
    !deepEqual(was.finalizers ?? [], is.finalizers ?? []) ||
    !deepEqual(was.annotations ?? {}, is.annotations ?? {})
  );
}

/**
 * Builds the controllers of `settings.plugin`; nothing runs until `startSources`. Every call goes over the
 * library's own client on `target` (kubeconfig.ts, what `openKubeAccess` gives): client-node is never loaded
 * here. The informers ask for watch-lists where the API server serves them, else list then watch.
 *
 * Reads top to bottom as what it builds and wires: the three sources, the ports over their caches, the
 * ports the reconcilers write through ({@link composePorts}), the three controllers, the handlers that turn
 * the sources' events into the controllers' keys, and the running parts a main starts and stops.
 *
 * # Guarantees
 * - Only a leader writes: every port the reconcilers get goes through one write fence, open from
 *   `startControllers` until its signal aborts (or `stopControllers`, `shutDown`); the informers read
 *   regardless, so a standby keeps its caches warm.
 * - Nothing is missed while down: `startControllers` reconciles every resource and intent record once
 *   before `isReady` says true, and hands every owned external object to the sweep without waiting for it
 *   (its grace period would hold readiness back); then all three again every `resyncPeriodMs` (with jitter),
 *   but the keys an event settled since the last resync (source/resync.ts).
 * - Keys queue up from the moment the sources start, leading or not; they run once the controllers start.
 * - The echo of our own write (a status update, the finalizer a reconcile just added, an external object we
 *   just wrote) reconciles nothing; a deletion is always handed on.
 * - Sharded (`settings.sharding`): the three caches hold only this replica's ranges, one hash per resource,
 *   so a resource, its intent record and its external object land on the same replica.
 *
 * # Errors
 * Building never throws and makes no request. `startSources` resolves false when its signal aborts first;
 * `reshard` throws when the controllers are not sharded.
 */
export function createExternalResourceControllers<R extends ManagedResource, E extends object>(
  target: KubeConnection,
  settings: ExternalResourceSettings<R, E>,
  metrics: CoreMetrics,
  log: Logger,
): ExternalResourceControllers {
  const http = new KubeHttp(target);
  // Sharded: which objects each cache keeps (this replica's part of the ring; leadership/sharded.ts).
  const shards = settings.sharding && new ShardPlacement(settings.plugin, settings.sharding);
  const sources = buildSources(http, settings, shards, metrics, log);
  const fence = new WriteFence();
  const deps = buildReconcilerDeps(http, fence, sources, settings, metrics, log);
  // The revisions of our own writes, so the handlers drop their echoes (own-writes.ts).
  const echoes = { resources: new OwnWrites(), external: new OwnWrites() };
  // What deleted resources last said of their deletion policy, for a record that trails it (tombstones.ts).
  const tombstones = new Tombstones();
  const controllers = buildControllers(deps, settings, { echoes, tombstones }, metrics, log);
  wireEventsToKeys(sources, controllers, settings.plugin, { echoes, tombstones });
  return runningParts({ http, shards, sources, fence, controllers, settings, log });
}

/** The three sources of one plugin: its resources, its intent records, and its external objects. */
interface Sources<R extends ManagedResource, E> {
  resources: SupervisedInformer<R>;
  intents: SupervisedInformer<KubernetesObject>;
  external: ExternalInformer<E>;
}

/** The three controllers of one plugin: the resources', the intent records', and the sweep. */
interface Controllers {
  resources: Controller;
  intents: Controller;
  sweep: Controller;
}

/** Builds the informers of the resources and the intent records, and the external list-watch. */
function buildSources<R extends ManagedResource, E extends object>(
  http: KubeHttp,
  settings: ExternalResourceSettings<R, E>,
  shards: ShardPlacement<R, E> | undefined,
  metrics: CoreMetrics,
  log: Logger,
): Sources<R, E> {
  const { plugin } = settings;
  const { group, version, plural, intentPlural } = plugin.resource;
  const hooks = { onRestart: (name: string) => metrics.informerRestarts.inc({ informer: name }) };
  return {
    resources: new SupervisedInformer<R>({
      name: plural,
      path: `/apis/${group}/${version}/${plural}`,
      http,
      ...(shards ? { shard: shards.resources } : {}),
      logger: log,
      hooks,
    }),
    intents: new SupervisedInformer<KubernetesObject>({
      name: intentPlural,
      path: `/apis/${group}/${version}/${intentPlural}`,
      http,
      ...(shards ? { shard: shards.intents } : {}),
      logger: log,
      hooks,
    }),
    external: new ExternalInformer<E>({
      name: `external-${plural}`,
      client: plugin.external.listWatch(settings.ownerId),
      key: (obj) => plugin.external.nameOf(obj),
      // A person may rename an object: its id drops the old name at once, its uid mark finds it by resource.
      idOf: (obj) => plugin.external.idOf(obj),
      indexOf: (obj) => plugin.external.marksOf(obj).uid,
      revisionOf: (obj) => plugin.external.revisionOf(obj),
      relistPeriodMs: settings.resyncPeriodMs ?? 300_000,
      ...(plugin.external.watchIdleMs === undefined ? {} : { watchIdleMs: plugin.external.watchIdleMs }),
      ...(shards ? { shard: shards.external } : {}),
      logger: log,
      hooks: { onWatchRestart: (name) => metrics.informerRestarts.inc({ informer: name }) },
    }),
  };
}

/**
 * Builds what the three reconcilers share: the listers over the sources' caches, the ports they write
 * through (traced, then fenced: {@link composePorts}), and the counters over `metrics`.
 */
function buildReconcilerDeps<R extends ManagedResource, E extends object>(
  http: KubeHttp,
  fence: WriteFence,
  sources: Sources<R, E>,
  settings: ExternalResourceSettings<R, E>,
  metrics: CoreMetrics,
  log: Logger,
): SharedDeps<R, E> & { events: EventRecorder } {
  const { plugin } = settings;
  const resources: Lister<R> = {
    get: (key) => {
      const slash = key.indexOf("/");
      return sources.resources.get(key.slice(slash + 1), key.slice(0, slash));
    },
    list: () => sources.resources.list(),
  };
  const intents: Lister<IntentRecord> = {
    get: (name) => {
      const obj = sources.intents.get(name);
      return obj && plugin.resource.readIntent(obj);
    },
    list: () => sources.intents.list().map((obj) => plugin.resource.readIntent(obj)),
  };
  const cache: ExternalCache<E> = {
    get: (name) => sources.external.get(name),
    list: () => sources.external.list(),
    withUid: (uid) => sources.external.indexed(uid),
  };
  const onWrite = (verb: "create" | "patch" | "delete", resource: string) =>
    metrics.kubeWrites.inc({ verb, resource });
  const { kube, client, events } = composePorts(fence, plugin, sources.external, {
    kube: new KubeResourceWriter(http, plugin.resource, onWrite),
    client: settings.client,
    events: new KubeEventRecorder(leanEventSink(http), {
      component: settings.component,
      onWrite: () => metrics.kubeWrites.inc({ verb: "create", resource: "events" }),
      // Which reconcile recorded it (and its trace): `npm run why` and the trace backend take it from here.
      annotations: () => reconcileAnnotations(plugin.resource.group),
      log,
    }),
  });
  const counters: Counters = {
    driftRepaired: () => metrics.driftRepairs.inc(),
    leakRemoved: () => metrics.leaksRemoved.inc(),
    foreignSeen: () => metrics.foreignObjectsSeen.inc(),
    adopted: (from) => metrics.adoptions.inc({ from }),
  };
  return {
    plugin,
    resources,
    intents,
    cache,
    client,
    kube,
    events,
    counters,
    log,
    ownerId: settings.ownerId,
    deleteOnUninstall: settings.deleteOnUninstall ?? false,
  };
}

/**
 * Builds the three controllers and their reconcilers. The intent records and the sweep are keyed by
 * external name; their stories are about the resource that name belongs to, so `npm run why
 * <namespace>/<name>` tells all three.
 */
function buildControllers<R extends ManagedResource, E extends object>(
  deps: SharedDeps<R, E> & { events: EventRecorder },
  settings: ExternalResourceSettings<R, E>,
  memory: { echoes: ReconcilerDeps<R, E>["echoes"]; tombstones: Tombstones },
  metrics: CoreMetrics,
  log: Logger,
): Controllers {
  const { plugin } = settings;
  const { events, ...common } = deps;
  const adoptOwnerIds = settings.adoptOwnerIds ?? [];
  const history = settings.history;
  const resourceKeyOf = (externalName: string) => {
    const owner = plugin.resource.resourceOf(externalName);
    return owner ? `${owner.namespace}/${owner.name}` : externalName;
  };
  const reconciler = new ExternalResourceReconciler<R, E>({
    ...common,
    adoptOwnerIds,
    events,
    ...(settings.conflictRecheckMs === undefined ? {} : { conflictRecheckMs: settings.conflictRecheckMs }),
    ...(settings.cleanupWaitMs === undefined ? {} : { cleanupWaitMs: settings.cleanupWaitMs }),
    echoes: memory.echoes,
  });
  return {
    resources: new Controller({
      name: plugin.resource.kind.toLowerCase(),
      reconciler,
      workers: settings.workers ?? 2,
      logger: log,
      metrics,
      ...(history ? { history } : {}),
    }),
    intents: new Controller({
      name: plugin.resource.intentKind.toLowerCase(),
      reconciler: new IntentReconciler<R, E>({ ...common, adoptOwnerIds, tombstones: memory.tombstones }),
      workers: 1,
      logger: log,
      metrics,
      ...(history ? { history, subjectOf: resourceKeyOf } : {}),
    }),
    sweep: new Controller({
      name: `${plugin.resource.plural}-sweep`,
      reconciler: new Sweep<R, E>({ ...common, graceMs: settings.leakGraceMs ?? 60_000 }),
      workers: 1,
      logger: log,
      metrics,
      ...(history ? { history, subjectOf: resourceKeyOf } : {}),
    }),
  };
}

/**
 * Wires the sources' events to the controllers' keys. Keys queue up even while not leading; they run once
 * the controllers start. Each passes its event as the cause: with tracing on, the reconcile's trace starts
 * at that event.
 */
function wireEventsToKeys<R extends ManagedResource, E extends object>(
  sources: Sources<R, E>,
  controllers: Controllers,
  plugin: ExternalResourcePlugin<R, E>,
  memory: { echoes: ReconcilerDeps<R, E>["echoes"]; tombstones: Tombstones },
): void {
  const { plural, intentPlural } = plugin.resource;
  const { echoes, tombstones } = memory;
  const externalNameOf = (obj: R) =>
    plugin.resource.externalNameOf(obj.metadata.namespace, obj.metadata.name);
  const from = (source: string, event: string, object: string) => ({ source, event, object });
  sources.resources.on("add", (obj) =>
    controllers.resources.enqueue(keyOf(obj), from(plural, "ADDED", keyOf(obj))),
  );
  // Updates of the status alone are our own echo: no reconcile for them (`reconcileWorthy` says why). Nor
  // for the echo of the finalizer a reconcile just added: that reconcile goes on from its write's answer.
  sources.resources.on("update", (old, obj) => {
    const key = keyOf(obj);
    if (!reconcileWorthy(old, obj)) return;
    echoes.resources.offer(key, obj.metadata.resourceVersion, () =>
      controllers.resources.enqueue(key, from(plural, "MODIFIED", key)),
    );
  });
  // Gone: reconcile it (forget its state), and let the intent reconciler check its record for a leak, with
  // the deletion policy it was last seen with: a switch to Orphan its record may not have caught up with.
  sources.resources.on("delete", (obj) => {
    const cause = from(plural, "DELETED", keyOf(obj));
    tombstones.noteDeleted(obj);
    controllers.resources.enqueue(keyOf(obj), cause);
    controllers.intents.enqueue(externalNameOf(obj), cause);
  });
  const WATCH_EVENT = { add: "ADDED", update: "MODIFIED", delete: "DELETED" } as const;
  onEveryEvent(sources.intents, (event, obj: KubernetesObject) => {
    const name = obj.metadata?.name ?? "";
    controllers.intents.enqueue(name, from(intentPlural, WATCH_EVENT[event], name));
  });
  // One of our external objects changed (a person edited or deleted it, or our own write came back):
  // reconcile its resource AT ONCE — this is what makes drift repair fast — and let the sweep look at it.
  // The resource is found by the deterministic name, never by a mark a person may have just rewritten.
  onEveryEvent(
    sources.external,
    externalEventHandler(plugin.external, echoes.external, (name, event) => {
      const cause = from(sources.external.name, WATCH_EVENT[event], name);
      const owner = plugin.resource.resourceOf(name);
      if (owner) controllers.resources.enqueue(`${owner.namespace}/${owner.name}`, cause);
      controllers.sweep.enqueue(name, cause);
    }),
  );
}

/** The running parts a main starts, stops and reports on: the sources, the fence, the controllers. */
function runningParts<R extends ManagedResource, E extends object>(parts: {
  http: KubeHttp;
  shards: ShardPlacement<R, E> | undefined;
  sources: Sources<R, E>;
  fence: WriteFence;
  controllers: Controllers;
  settings: ExternalResourceSettings<R, E>;
  log: Logger;
}): ExternalResourceControllers {
  const { http, shards, sources, fence, controllers, settings, log } = parts;
  const { plugin } = settings;
  const resyncPeriodMs = settings.resyncPeriodMs ?? 300_000;
  const informers = [sources.resources, sources.intents, sources.external] as const;
  const all = [controllers.resources, controllers.intents, controllers.sweep];
  const allKeys = {
    resources: () => sources.resources.list().map(keyOf),
    intents: () => sources.intents.list().map((obj) => obj.metadata?.name ?? ""),
    // The sweep looks at every owned object in the cache (a crash-left object whose bookkeeping never
    // happened is there too: the cache holds everything that carries our owner mark).
    sweep: () => sources.external.list().map((obj) => plugin.external.nameOf(obj)),
  };

  let resyncs: PeriodicResync[] = [];
  let ready = false;

  return {
    async startSources(signal) {
      // Sharded: the sources start with the first range (`reshard`); there is nothing to cache before.
      if (shards) return !signal.aborted;
      await Promise.all([sources.resources.start(), sources.intents.start()]);
      sources.external.start();
      const synced = await Promise.all(informers.map((i) => i.waitForSync(signal)));
      return synced.every(Boolean);
    },

    async startControllers(signal) {
      fence.open(signal);
      for (const c of all) c.start();
      // Full resync at startup: every resource and record is reconciled once before we call ourselves
      // ready — this is what catches everything that happened while we were down. Every owned object goes
      // to the sweep too, unwaited for: its grace period would hold readiness back.
      await Promise.all([
        initialSync(controllers.resources, allKeys.resources, signal),
        initialSync(controllers.intents, allKeys.intents, signal),
      ]);
      initialSync(controllers.sweep, allKeys.sweep, signal).catch(() => {});
      ready = true;
      log.info(
        `startup resync done: every ${plugin.resource.kind} and ${plugin.resource.intentKind} reconciled once`,
      );
      // Then periodically, with jitter: the safety net for anything an event did not bring.
      resyncs = (["resources", "intents", "sweep"] as const).map((name) =>
        startPeriodicResync({
          target: controllers[name],
          reconciled: controllers[name],
          listKeys: allKeys[name],
          periodMs: resyncPeriodMs,
          logger: log,
        }),
      );
    },

    async stopControllers(options = {}) {
      fence.close();
      ready = false;
      for (const r of resyncs) r.stop();
      resyncs = [];
      await Promise.all(all.map((c) => c.stop(options)));
    },

    async reshard(next, signal) {
      if (!shards) throw new Error("cannot reshard: these controllers are not sharded");
      shards.ranges = next;
      const done = await Promise.all(informers.map((i) => i.reshard(signal)));
      return done.every(Boolean);
    },

    cached: () => ({
      resources: sources.resources.list().length,
      intents: sources.intents.list().length,
      external: sources.external.list().length,
    }),

    async shutDown() {
      fence.close();
      ready = false;
      for (const r of resyncs) r.stop();
      await Promise.all(all.map((c) => c.shutDown()));
      await Promise.all(informers.map((i) => i.stop()));
      await http.close();
    },

    isReady: () => ready,
  };
}

/**
 * What an event of the external cache does, given the object as it is now (`onEveryEvent` passes an
 * update's NEW object): hand its name on (`enqueue`: its resource and the sweep), unless it is the echo of our
 * own create or update, which is dropped — the reconcile that wrote it holds the answer, and the object is
 * claimed (the resource's own), so neither the resource nor the sweep needs to look again. A deletion is
 * always handed on.
 */
export function externalEventHandler<E>(
  kind: { nameOf(obj: E): string; revisionOf(obj: E): number },
  echoes: OwnWrites,
  enqueue: (name: string, event: CacheEvent) => void,
): (event: CacheEvent, obj: E) => void {
  return (event, obj) => {
    const name = kind.nameOf(obj);
    if (event === "delete") enqueue(name, event);
    else echoes.offer(name, String(kind.revisionOf(obj)), () => enqueue(name, event));
  };
}

/**
 * The ports the reconcilers get, each real port wrapped in its decorators, in this order:
 *
 *   reconciler → Traced… (a span and a line of the reconcile's story: reconcile/traced.ts)
 *              → Fenced… (refused unless this replica may write: leadership/fence.ts)
 *              → writeThrough, the external client only (what our write answered goes into the cache's
 *                view at once: below)
 *              → the port itself (the API server, the external API, the Events API)
 *
 * Tracing is outside the fence, so a refused call is a failed call in the story. Every call of a port goes
 * through the fence, live reads too; only `classify` (reading an error) does not. The informers' list and
 * watch do not come through here: a standby keeps its caches warm for a fast takeover.
 */
export function composePorts<R extends ManagedResource, E>(
  fence: WriteFence,
  plugin: ExternalResourcePlugin<R, E>,
  cache: { wrote(answer: E): void; deleted(observed: E): void },
  ports: { kube: ResourceWriter<R>; client: ExternalClient<E>; events: EventRecorder },
): { kube: ResourceWriter<R>; client: ExternalClient<E>; events: EventRecorder } {
  return {
    kube: new TracedResourceWriter(new FencedResourceWriter(fence, ports.kube), plugin.resource),
    client: new TracedExternalClient(
      new FencedExternalClient(fence, writeThrough(ports.client, cache)),
      plugin.external,
    ),
    events: new TracedEventRecorder(new FencedEventRecorder(fence, ports.events)),
  };
}

/**
 * The external client that tells the list-watch cache what each of our own writes answered (the created or
 * updated or renamed object; the deleted or released one: external-informer.ts, `wrote` and `deleted`), so the next
 * reconcile reads the state our write made, not the one before it, while the cache trails. Without it, and
 * without the change feed, every resync before the next listing met our own creates and repairs as news: a
 * create again (409, a read by name, an adoption) or a patch of a stale revision (412), measured as the
 * `no-watch` steady state's cloud writes in docs/benchmarks.md. A delete or release that finds the object gone
 * (404) is a delete too. Reads and failures pass through untouched.
 */
export function writeThrough<E>(
  client: ExternalClient<E>,
  cache: { wrote(answer: E): void; deleted(observed: E): void },
): ExternalClient<E> {
  const gone = async (observed: E, step: () => Promise<void>) => {
    try {
      await step();
    } catch (err) {
      if (client.classify(err).failure === "notFound") cache.deleted(observed);
      throw err;
    }
    cache.deleted(observed);
  };
  const rename = client.rename?.bind(client);
  return {
    getByName: (name, signal) => client.getByName(name, signal),
    create: async (desired, signal) => {
      const created = await client.create(desired, signal);
      cache.wrote(created);
      return created;
    },
    update: async (observed, patch, signal) => {
      const updated = await client.update(observed, patch, signal);
      cache.wrote(updated);
      return updated;
    },
    delete: (observed, signal) => gone(observed, () => client.delete(observed, signal)),
    release: (observed, signal) => gone(observed, () => client.release(observed, signal)),
    ...(rename
      ? {
          rename: async (observed: E, name: string, signal: AbortSignal) => {
            const renamed = await rename(observed, name, signal);
            cache.wrote(renamed);
            return renamed;
          },
        }
      : {}),
    classify: (err) => client.classify(err),
  };
}

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { RateLimiterHooks } from "../queue/rate-limiter.ts";

/** Options of {@link CoreMetrics}. */
export interface CoreMetricsOptions {
  /** Prepended to every metric name. Default `controller_`. */
  prefix?: string;
  /** Also collect prom-client's process metrics (CPU, memory, event loop lag) into this registry. Default false. */
  processMetrics?: boolean;
}

/** Seconds buckets for reconcile durations: 5 ms .. 60 s. A reconcile calls remote APIs, so seconds are normal. */
const RECONCILE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Seconds buckets for waits (queue, rate limiter): 1 ms .. 5 min. Long queue waits mean too few workers or a backlog after a resync. */
const WAIT_BUCKETS = [0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300];

/**
 * The metrics of the generic core, in their OWN prom-client registry (never the global one), so two
 * instances (two controllers in one test process) never collide. Serve `registry` on `/metrics`.
 *
 * Created once per process at startup; each member is incremented by the component named in its comment.
 * Names below are shown with the default prefix `controller_`.
 */
export class CoreMetrics {
  /** The registry holding every metric below; serve it on `/metrics`. */
  readonly registry: Registry;

  /**
   * `controller_reconcile_total{controller, result}`: reconciles finished, by result kind
   * (`done`, `requeueAfter`, `failed`, `terminal`; a thrown error counts as `failed`). Incremented by the Controller.
   */
  readonly reconciles: Counter<"controller" | "result">;

  /** `controller_reconcile_duration_seconds{controller}`: how long each reconcile took. Observed by the Controller. */
  readonly reconcileDuration: Histogram<"controller">;

  /** `controller_queue_depth{controller}`: keys waiting for a worker now. Set by the Controller from its queue. */
  readonly queueDepth: Gauge<"controller">;

  /** `controller_queue_wait_seconds{controller}`: time from a key's add to a worker taking it. Observed by the Controller. */
  readonly queueWait: Histogram<"controller">;

  /**
   * `controller_external_requests_total{verb, status}`: calls to the external API, by verb (e.g. `list`, `create`)
   * and HTTP status (or `error` when no response came). Incremented by the external API client.
   */
  readonly externalRequests: Counter<"verb" | "status">;

  /**
   * `controller_kube_writes_total{verb, resource}`: writes to the Kubernetes API by verb (`create`, `patch`,
   * `delete`) and resource (e.g. `shapes/status`, `events`): the reconcilers' writes and Events, not the Lease
   * renewals. Zero in steady state. Incremented by the resource writer and the Event recorder.
   */
  readonly kubeWrites: Counter<"verb" | "resource">;

  /** `controller_drift_repairs_total`: external objects changed behind our back and written back. Incremented by the reconciler. */
  readonly driftRepairs: Counter;

  /**
   * `controller_leaks_removed_total`: leaks removed, external objects of ours that nothing claims any more:
   * deleted, or let go (owner marks removed) for a resource whose deletion policy was `Orphan` or during an
   * uninstall. Incremented by the intent reconciler (a missed deletion whose object it found) and by the
   * sweep (an object no intent record claims).
   */
  readonly leaksRemoved: Counter;

  /**
   * `controller_foreign_objects_seen_total`: foreign external objects met holding the name a resource needs,
   * and left untouched: counted once per resource and holder, not at each recheck. Incremented by the
   * reconciler. (Our list-watch is filtered by owner tag, so foreign objects are only ever seen this way.)
   */
  readonly foreignObjectsSeen: Counter;

  /** `controller_informer_restarts_total{informer}`: watches restarted after an error or silence. Incremented by the informers. */
  readonly informerRestarts: Counter<"informer">;

  /** `controller_leader`: 1 while this process holds the leader lease, else 0. Set by leader election. */
  readonly leader: Gauge;

  /**
   * `controller_rate_limiter_wait_seconds{limiter}`: how long each call waited for the client-side rate limiter
   * (0 for most; a tail here means the limit or a hold is what paces the controller). Observed through
   * {@link rateLimiterHooks}.
   */
  readonly rateLimiterWait: Histogram<"limiter">;

  /**
   * `controller_rate_limiter_held_seconds_total{limiter, reason}`: seconds during which the limiter let no call
   * out, by reason: `retry-after` (the server asked for a pause) or `outage` (answers said the service is
   * unwell). Its rate is the share of time the controller stood still for the server. Counted through
   * {@link rateLimiterHooks}.
   */
  readonly rateLimiterHeld: Counter<"limiter" | "reason">;

  /**
   * `controller_owner_info{owner_id}`: always 1; the label says which owner id this controller stamps on the
   * external objects it creates (by default one per cluster). Set once at startup.
   */
  readonly ownerInfo: Gauge<"owner_id">;

  /**
   * `controller_adoptions_total{from}`: external objects carrying an earlier owner id of ours (`from`, e.g.
   * after an upgrade from a constant default) retagged to the current one. Incremented by the reconciler.
   */
  readonly adoptions: Counter<"from">;

  /** `controller_ring_members`: live members of the sharding ring this replica sees, itself included. Set by the ring. */
  readonly ringMembers: Gauge;

  /** `controller_ring_owned_share`: the share of the hash space this replica acts on (0 to 1). Set by the ring. */
  readonly ringOwnedShare: Gauge;

  /**
   * `controller_ring_owned_objects{cache}`: objects this replica's caches hold, by cache (`resources`,
   * `intents`, `external`): with sharding, what it owns; across the replicas they add up to the whole. Read
   * from the caches at each scrape, once {@link countCached} was called.
   */
  readonly ringOwnedObjects: Gauge<"cache">;

  /**
   * `controller_ring_handovers_total{direction}`: changes of the ranges this replica acts on, by direction
   * (`gained`, `released`; a change that does both counts in both). Incremented by the ring.
   */
  readonly ringHandovers: Counter<"direction">;

  #cached: (() => Record<string, number>) | undefined;

  /** Registers every metric in a new registry. */
  constructor(options: CoreMetricsOptions = {}) {
    const prefix = options.prefix ?? "controller_";
    if (!/^([a-zA-Z_:][a-zA-Z0-9_:]*)?$/.test(prefix)) {
      throw new Error(`cannot use metric prefix ${JSON.stringify(prefix)}: use letters, digits, '_' and ':'`);
    }
    this.registry = new Registry();
    const registers = [this.registry];
    if (options.processMetrics === true) collectDefaultMetrics({ register: this.registry, prefix });

    this.reconciles = new Counter({
      name: `${prefix}reconcile_total`,
      help: "Reconciles finished, by controller and result kind.",
      labelNames: ["controller", "result"],
      registers,
    });
    this.reconcileDuration = new Histogram({
      name: `${prefix}reconcile_duration_seconds`,
      help: "Duration of each reconcile, by controller.",
      labelNames: ["controller"],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    this.queueDepth = new Gauge({
      name: `${prefix}queue_depth`,
      help: "Keys waiting for a worker, by controller.",
      labelNames: ["controller"],
      registers,
    });
    this.queueWait = new Histogram({
      name: `${prefix}queue_wait_seconds`,
      help: "Time from a key's add to a worker taking it, by controller.",
      labelNames: ["controller"],
      buckets: WAIT_BUCKETS,
      registers,
    });
    this.externalRequests = new Counter({
      name: `${prefix}external_requests_total`,
      help: "Calls to the external API, by verb and HTTP status ('error' when no response).",
      labelNames: ["verb", "status"],
      registers,
    });
    this.kubeWrites = new Counter({
      name: `${prefix}kube_writes_total`,
      help: "Writes to the Kubernetes API (the reconcilers' writes and Events, not Lease renewals), by verb (create, patch, delete) and resource.",
      labelNames: ["verb", "resource"],
      registers,
    });
    this.driftRepairs = new Counter({
      name: `${prefix}drift_repairs_total`,
      help: "External objects changed behind the controller's back and written back to the desired state.",
      registers,
    });
    this.leaksRemoved = new Counter({
      name: `${prefix}leaks_removed_total`,
      help: "Leaked external objects (ours, claimed by nothing) deleted, or let go for deletionPolicy Orphan, by the intent reconciler or the sweep.",
      registers,
    });
    this.foreignObjectsSeen = new Counter({
      name: `${prefix}foreign_objects_seen_total`,
      help: "Foreign external objects met holding a name a resource needs (left untouched), once per resource and holder.",
      registers,
    });
    this.informerRestarts = new Counter({
      name: `${prefix}informer_restarts_total`,
      help: "Watches restarted after an error or a silent connection, by informer.",
      labelNames: ["informer"],
      registers,
    });
    this.leader = new Gauge({
      name: `${prefix}leader`,
      help: "1 while this process holds the leader lease, else 0.",
      registers,
    });
    this.ownerInfo = new Gauge({
      name: `${prefix}owner_info`,
      help: "Always 1; owner_id is the owner tag this controller stamps on the external objects it creates.",
      labelNames: ["owner_id"],
      registers,
    });
    this.adoptions = new Counter({
      name: `${prefix}adoptions_total`,
      help: "External objects tagged with an earlier owner id of ours, retagged to the current one.",
      labelNames: ["from"],
      registers,
    });
    this.ringMembers = new Gauge({
      name: `${prefix}ring_members`,
      help: "Live members of the sharding ring this replica sees, itself included.",
      registers,
    });
    this.ringOwnedShare = new Gauge({
      name: `${prefix}ring_owned_share`,
      help: "The share of the hash space this replica acts on, from 0 to 1.",
      registers,
    });
    const cached = () => this.#cached?.() ?? {};
    this.ringOwnedObjects = new Gauge({
      name: `${prefix}ring_owned_objects`,
      help: "Objects this replica's caches hold, by cache: with sharding, what it owns.",
      labelNames: ["cache"],
      registers,
      collect() {
        for (const [cache, count] of Object.entries(cached())) this.set({ cache }, count);
      },
    });
    this.ringHandovers = new Counter({
      name: `${prefix}ring_handovers_total`,
      help: "Changes of the ranges this replica acts on, by direction (gained, released).",
      labelNames: ["direction"],
      registers,
    });
    this.rateLimiterWait = new Histogram({
      name: `${prefix}rate_limiter_wait_seconds`,
      help: "Time each call waited for the client-side rate limiter (its tokens, or a hold), by limiter.",
      labelNames: ["limiter"],
      buckets: WAIT_BUCKETS,
      registers,
    });
    this.rateLimiterHeld = new Counter({
      name: `${prefix}rate_limiter_held_seconds_total`,
      help: "Seconds the rate limiter let no call out, by limiter and reason (retry-after: the server asked; outage: answers said the service is unwell).",
      labelNames: ["limiter", "reason"],
      registers,
    });
  }

  /** Called once: `ring_owned_objects` reads the caches' sizes from `count` at each scrape. */
  countCached(count: () => Record<string, number>): void {
    this.#cached = count;
  }

  /** The hooks that feed the rate limiter metrics above for the limiter named `limiter` (Shapes: `cloud`). */
  rateLimiterHooks(limiter: string): RateLimiterHooks {
    return {
      onWait: (waitMs) => this.rateLimiterWait.observe({ limiter }, waitMs / 1000),
      onHold: (reason, ms) => this.rateLimiterHeld.inc({ limiter, reason }, ms / 1000),
    };
  }

  /** The Prometheus text exposition of every metric, as served on `/metrics`. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}

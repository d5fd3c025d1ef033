/**
 * Both worlds, live, in the demo's process: the page's data source. Four list-watch caches, the same
 * self-healing ones the controller uses (library/src/): Shapes, ShapeRefs and Events from the API
 * server, with the demo's own credentials, and EVERY shape of the cloud (not only ours: the page shows the
 * foreign ones too), from its listing and change feed, with the demo's cloud token.
 *
 * Changes are cut down to what the page shows (wire.ts) and batched: whatever changed within
 * CHANGES_BATCH_MS goes out as one `Changes`, the last state of each object only.
 */
import type { CoreV1Event, KubeConfig } from "@kubernetes/client-node";
import { type Logger } from "reconcile-kit";
import { ExternalInformer, KubeHttp, readDefaultOwnerId, SupervisedInformer } from "reconcile-kit/parts";
import { kubeConnectionOf } from "reconcile-kit/client-node";
import {
  ADOPTION_POLICY_ANNOTATION,
  CloudClient,
  type CloudShape,
  GROUP,
  PAUSED_ANNOTATION,
  type Shape,
  type ShapeRef,
  SHAPEREFS,
  SHAPES,
  shapesListWatch,
  VERSION,
} from "@shapes/controller";
import {
  CHANGES_BATCH_MS,
  EVENTS_KEPT,
  type Changes,
  type Snapshot,
  type ViewCloudShape,
  type ViewCondition,
  type ViewEvent,
  type ViewShape,
  type ViewShapeRef,
} from "./wire.ts";

/** Where both worlds are, and as whom the demo reads them. */
export interface WorldsOptions {
  /** The demo's admin KubeConfig. */
  kubeConfig: KubeConfig;
  cloudUrl: string;
  cloudToken: string;
  logger: Logger;
}

/** What a snapshot of both worlds holds (the server adds the controller, the tour and the faults). */
export type WorldsState = Omit<Snapshot, "controller" | "tour" | "faults">;

/** The client id of the page's cloud reads: its requests are told apart in the cloud's request log. */
export const VIEW_CLIENT_ID = "shapes-two-worlds";

/** See the module comment. */
export class Worlds {
  readonly #shapes: SupervisedInformer<Shape>;
  readonly #shapeRefs: SupervisedInformer<ShapeRef>;
  readonly #events: SupervisedInformer<CoreV1Event>;
  readonly #cloud: ExternalInformer<CloudShape>;
  readonly #http: KubeHttp;
  /** The last Events about our kinds, oldest first (a Map keeps insertion order; an update re-inserts). */
  readonly #recentEvents = new Map<string, ViewEvent>();
  readonly #listeners = new Set<(changes: Changes) => void>();
  #pending = new PendingChanges();
  #flushTimer: NodeJS.Timeout | undefined;
  #ownerId = "";

  constructor(options: WorldsOptions) {
    const { kubeConfig, logger } = options;
    const http = new KubeHttp(kubeConnectionOf(kubeConfig));
    this.#http = http;
    this.#shapes = new SupervisedInformer<Shape>({
      name: "view-shapes",
      http,
      path: `/apis/${GROUP}/${VERSION}/${SHAPES}`,
      logger,
    });
    this.#shapeRefs = new SupervisedInformer<ShapeRef>({
      name: "view-shaperefs",
      http,
      path: `/apis/${GROUP}/${VERSION}/${SHAPEREFS}`,
      logger,
    });
    this.#events = new SupervisedInformer<CoreV1Event>({
      name: "view-events",
      http,
      path: "/api/v1/events",
      logger,
    });
    const cloud = new CloudClient({
      baseUrl: options.cloudUrl,
      token: options.cloudToken,
      clientId: VIEW_CLIENT_ID,
    });
    this.#cloud = new ExternalInformer<CloudShape>({
      name: "view-cloud",
      client: shapesListWatch(cloud, {}),
      key: (s) => s.id,
      revisionOf: (s) => s.revision,
      logger,
    });

    // Each handler notes the object's new state (or that it is gone) for the next batch.
    const note = (change: (pending: PendingChanges) => void) => {
      change(this.#pending);
      this.#scheduleFlush();
    };
    this.#shapes.on("add", (s) => note((p) => p.shape(viewShape(s))));
    this.#shapes.on("update", (_old, s) => note((p) => p.shape(viewShape(s))));
    this.#shapes.on("delete", (s) => note((p) => p.shapeGone(shapeKey(s))));
    this.#shapeRefs.on("add", (r) => note((p) => p.shapeRef(viewShapeRef(r))));
    this.#shapeRefs.on("update", (_old, r) => note((p) => p.shapeRef(viewShapeRef(r))));
    this.#shapeRefs.on("delete", (r) => note((p) => p.shapeRefGone(r.metadata.name)));
    this.#cloud.on("add", (c) => note((p) => p.cloud(c)));
    this.#cloud.on("update", (_old, c) => note((p) => p.cloud(c)));
    this.#cloud.on("delete", (c) => note((p) => p.cloudGone(c.id)));
    const onEvent = (e: CoreV1Event) => {
      const event = viewEvent(e);
      if (!event) return;
      this.#recentEvents.delete(event.id);
      this.#recentEvents.set(event.id, event);
      if (this.#recentEvents.size > EVENTS_KEPT) {
        this.#recentEvents.delete(this.#recentEvents.keys().next().value as string);
      }
      note((p) => p.event(event));
    };
    this.#events.on("add", onEvent);
    this.#events.on("update", (_old, e) => onEvent(e));
  }

  /**
   * Called once: reads the owner id, starts every cache, and resolves once each has listed (or failed to:
   * it then keeps trying, and the page says it is still loading). Rejects only when the owner id cannot be
   * read ("cannot …").
   */
  async start(signal?: AbortSignal): Promise<void> {
    this.#ownerId = await readDefaultOwnerId(this.#http);
    this.#cloud.start();
    await Promise.all([this.#shapes.start(), this.#shapeRefs.start(), this.#events.start()]);
    await Promise.all(
      [this.#shapes, this.#shapeRefs, this.#events, this.#cloud].map((i) => i.waitForSync(signal)),
    );
  }

  /** Stops every cache and the batching. Idempotent. */
  async stop(): Promise<void> {
    clearTimeout(this.#flushTimer);
    this.#listeners.clear();
    await Promise.all([this.#shapes.stop(), this.#shapeRefs.stop(), this.#events.stop(), this.#cloud.stop()]);
    await this.#http.close();
  }

  /** Everything, now, from the caches. */
  state(): WorldsState {
    return {
      ownerId: this.#ownerId,
      synced: [this.#shapes, this.#shapeRefs, this.#events, this.#cloud].every((i) => i.hasSynced()),
      shapes: this.#shapes.list().map(viewShape),
      shapeRefs: this.#shapeRefs.list().map(viewShapeRef),
      cloud: [...this.#cloud.list()],
      events: [...this.#recentEvents.values()],
    };
  }

  /** Calls `listener` with every batch of changes until the returned function is called. */
  onChanges(listener: (changes: Changes) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Sends what changed, once CHANGES_BATCH_MS after the first change of a batch. */
  #scheduleFlush(): void {
    this.#flushTimer ??= setTimeout(() => {
      this.#flushTimer = undefined;
      const changes = this.#pending.take();
      this.#pending = new PendingChanges();
      for (const listener of this.#listeners) listener(changes);
    }, CHANGES_BATCH_MS);
  }
}

/** Changes collected between two flushes: the last state of each object, or that it is gone. */
class PendingChanges {
  readonly #shapes = new Map<string, ViewShape | undefined>();
  readonly #shapeRefs = new Map<string, ViewShapeRef | undefined>();
  readonly #cloud = new Map<string, ViewCloudShape | undefined>();
  readonly #events: ViewEvent[] = [];

  shape(s: ViewShape): void {
    this.#shapes.set(`${s.namespace}/${s.name}`, s);
  }
  shapeGone(key: string): void {
    this.#shapes.set(key, undefined);
  }
  shapeRef(r: ViewShapeRef): void {
    this.#shapeRefs.set(r.name, r);
  }
  shapeRefGone(name: string): void {
    this.#shapeRefs.set(name, undefined);
  }
  cloud(c: CloudShape): void {
    this.#cloud.set(c.id, c);
  }
  cloudGone(id: string): void {
    this.#cloud.set(id, undefined);
  }
  event(e: ViewEvent): void {
    this.#events.push(e);
  }

  take(): Changes {
    const split = <T>(map: Map<string, T | undefined>) => ({
      present: [...map.values()].filter((v): v is T => v !== undefined),
      gone: [...map].filter(([, v]) => v === undefined).map(([k]) => k),
    });
    const shapes = split(this.#shapes);
    const shapeRefs = split(this.#shapeRefs);
    const cloud = split(this.#cloud);
    return {
      shapes: shapes.present,
      shapesGone: shapes.gone,
      shapeRefs: shapeRefs.present,
      shapeRefsGone: shapeRefs.gone,
      cloud: cloud.present,
      cloudGone: cloud.gone,
      events: this.#events,
    };
  }
}

function shapeKey(s: Shape): string {
  return `${s.metadata.namespace}/${s.metadata.name}`;
}

/** A Shape cut down to what the page shows. */
export function viewShape(s: Shape): ViewShape {
  const condition = (type: string): ViewCondition | undefined => {
    const c = s.status?.conditions?.find((x) => x.type === type);
    return c ? { status: c.status, reason: c.reason ?? "", message: c.message ?? "" } : undefined;
  };
  return {
    namespace: s.metadata.namespace,
    name: s.metadata.name,
    uid: s.metadata.uid,
    generation: s.metadata.generation ?? 0,
    observedGeneration: s.status?.observedGeneration,
    type: s.spec.type ?? "",
    color: s.spec.color ?? "",
    size: s.spec.size,
    deletionPolicy: s.spec.deletionPolicy ?? "Delete",
    paused: s.metadata.annotations?.[PAUSED_ANNOTATION] === "true",
    managementPolicies: [...(s.spec.managementPolicies ?? ["*"])],
    adoptionPolicy: s.metadata.annotations?.[ADOPTION_POLICY_ANNOTATION],
    finalizers: [...(s.metadata.finalizers ?? [])],
    deletionTimestamp: s.metadata.deletionTimestamp ? String(s.metadata.deletionTimestamp) : undefined,
    ready: condition("Ready"),
    synced: condition("Synced"),
    cloudId: s.status?.cloudId,
    driftRepairs: s.status?.driftRepairs ?? 0,
  };
}

/** A ShapeRef cut down to what the page shows. */
export function viewShapeRef(r: ShapeRef): ViewShapeRef {
  return {
    name: r.metadata.name,
    shape: { ...r.spec.shape },
    cloudName: r.spec.cloudName,
    phase: r.status?.phase,
    cloudId: r.status?.cloudId,
    owner: r.spec.owner,
    deletionPolicy: r.spec.deletionPolicy ?? "Delete",
  };
}

/** An Event about a Shape or a ShapeRef, cut down; undefined for any other Event. */
export function viewEvent(e: CoreV1Event): ViewEvent | undefined {
  const about = e.involvedObject;
  if (!about?.apiVersion?.startsWith(`${GROUP}/`)) return undefined;
  const at = e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp;
  return {
    id: e.metadata?.uid ?? `${about.name ?? ""}-${e.reason ?? ""}-${String(at)}`,
    at: at ? new Date(at).toISOString() : new Date().toISOString(),
    type: e.type ?? "Normal",
    reason: e.reason ?? "",
    message: e.message ?? "",
    kind: about.kind ?? "",
    namespace: about.namespace ?? "",
    name: about.name ?? "",
    count: e.count ?? 1,
  };
}

/**
 * What the two-worlds page receives from the demo (server.ts → static/view.js): plain JSON, one shape of
 * data per world, cut down to what the page shows. The server never sends a Kubernetes object or a cloud
 * shape as is: a Shape's managedFields alone would double the bytes of a snapshot of 1,000 Shapes.
 *
 * The stream (`GET /api/stream`, Server-Sent Events): one `snapshot` first (and again after the server
 * relisted), then `changes` batched every {@link CHANGES_BATCH_MS} ms at most, `controller` when the
 * controller process changes state, `tour` when `npm run tour` reaches a moment, `faults` when the cloud's
 * fault rules change.
 */
import type { TourMoment } from "../control.ts";

/** A `Shape`, as the page shows it. */
export interface ViewShape {
  namespace: string;
  name: string;
  uid: string;
  generation: number;
  /** `status.observedGeneration`: behind `generation` while the controller has not caught up. */
  observedGeneration: number | undefined;
  type: string;
  color: string;
  size: number | undefined;
  deletionPolicy: string;
  /** The `shapes.example.com/paused` annotation is "true". */
  paused: boolean;
  /** `spec.managementPolicies` (`["*"]` when left out): `["Observe"]` is observe only. */
  managementPolicies: string[];
  /** The `shapes.example.com/adoption-policy` annotation (`adopt`, `adopt-or-create`), when set. */
  adoptionPolicy: string | undefined;
  finalizers: string[];
  /** Set once someone deleted the Shape: the finalizer holds it until the cloud side is done. */
  deletionTimestamp: string | undefined;
  ready: ViewCondition | undefined;
  synced: ViewCondition | undefined;
  cloudId: string | undefined;
  driftRepairs: number;
}

/** A condition of a Shape: `Ready` or `Synced`. */
export interface ViewCondition {
  status: string;
  reason: string;
  message: string;
}

/** A `ShapeRef`: the controller's durable record of one cloud shape. */
export interface ViewShapeRef {
  name: string;
  shape: { namespace: string; name: string; uid: string };
  cloudName: string;
  /**
   * `status.phase`; undefined when the ShapeRef has no status, as the controller leaves it: it writes no
   * status to a ShapeRef (no phase reads as Pending). Only a record from an older controller says
   * `Created`, with `cloudId`.
   */
  phase: string | undefined;
  /** `status.cloudId`, with a status only (see `phase`): the Shape's `cloudId` is where the id always is. */
  cloudId: string | undefined;
  owner: string | undefined;
  deletionPolicy: string;
}

/** A cloud shape: the cloud's own JSON (it is already small). */
export interface ViewCloudShape {
  id: string;
  name: string;
  type: string;
  color: string;
  size?: number;
  tags: Record<string, string>;
  revision: number;
  createdAt: string;
  updatedAt: string;
}

/** A Kubernetes Event about a Shape or a ShapeRef: the controller's decisions, as it told them. */
export interface ViewEvent {
  /** The Event's uid. */
  id: string;
  at: string;
  type: string;
  reason: string;
  message: string;
  kind: string;
  /** Empty for a ShapeRef (cluster-scoped). */
  namespace: string;
  name: string;
  count: number;
}

/** The controller process, as the demo sees it. */
export interface ControllerView {
  state: "starting" | "running" | "stopping" | "stopped" | "crashed";
  pid: number | undefined;
  /** True when the page can ask for its decision history (`/why`). */
  answersWhy: boolean;
}

/** What `npm run tour` is showing: highlighted on the page (the control socket's TourMoment, as is). */
export type ViewTourMoment = TourMoment;

/** A fault rule of the cloud (see mock-cloud's FaultRule). */
export type ViewFaultRule = Record<string, unknown>;

/** Everything, at once: the first message of the stream. */
export interface Snapshot {
  /** The owner id of this cluster's controller: cloud shapes whose `owner` tag says it are ours. */
  ownerId: string;
  /** True once both worlds were listed (else the page says it is still loading). */
  synced: boolean;
  shapes: ViewShape[];
  shapeRefs: ViewShapeRef[];
  cloud: ViewCloudShape[];
  /** The most recent Events, oldest first (at most {@link EVENTS_KEPT}). */
  events: ViewEvent[];
  controller: ControllerView;
  tour: ViewTourMoment | null;
  faults: { rules: ViewFaultRule[] };
}

/** What changed since the last message. Keys: `namespace/name` (Shape), name (ShapeRef), id (cloud). */
export interface Changes {
  shapes: ViewShape[];
  shapesGone: string[];
  shapeRefs: ViewShapeRef[];
  shapeRefsGone: string[];
  cloud: ViewCloudShape[];
  cloudGone: string[];
  events: ViewEvent[];
}

/** How often changes are sent at most: a burst of 1,000 updates is a few messages, not 1,000. */
export const CHANGES_BATCH_MS = 100;
/** How many Events the server keeps and a snapshot carries. */
export const EVENTS_KEPT = 500;

/**
 * Handlers: turn cache events into keys on the right queue (controller-runtime's "handler" step), after
 * dropping the events that cannot matter (its "predicate" step). They never read the API.
 */
import { deepEqual } from "../core/diff.ts";
import { shapeOfCloudName, shapeRefNameOf, type Shape, type ShapeRef } from "./api.ts";
import type { CloudShape } from "./cloud/client.ts";

/** The three queues the shapes controllers feed. */
export interface ShapeQueues {
  shapes: { enqueue(key: string): void };
  shapeRefs: { enqueue(key: string): void };
  sweep: { enqueue(key: string): void };
}

/** The key of a Shape: `namespace/name`. */
export const shapeKey = (shape: Shape): string => `${shape.metadata.namespace}/${shape.metadata.name}`;

/** A Shape changed: reconcile it. When it is gone, let the ShapeRef reconciler check for a leak. */
export function onShapeEvent(queues: ShapeQueues, shape: Shape, deleted = false): void {
  queues.shapes.enqueue(shapeKey(shape));
  if (deleted) queues.shapeRefs.enqueue(shapeRefNameOf(shape.metadata.namespace, shape.metadata.name));
}

/**
 * A Shape was updated: reconcile it when something the reconciler acts on changed — the spec (its
 * generation), the annotations (paused, refresh), the finalizers, the deletion timestamp. An update of the
 * status alone is not a reason: the status is the controller's own output, and reconciling on its echo would
 * retry a failing Shape at once — ignoring the backoff, and the cloud's Retry-After, just set for it.
 */
export function onShapeUpdate(queues: ShapeQueues, old: Shape, shape: Shape): void {
  if (reconcileWorthy(old, shape)) onShapeEvent(queues, shape);
}

/** True when `shape` differs from `old` in anything but its status (and bookkeeping like resourceVersion). */
export function reconcileWorthy(old: Shape, shape: Shape): boolean {
  const was = old.metadata;
  const is = shape.metadata;
  return (
    was.uid !== is.uid ||
    was.generation !== is.generation ||
    String(was.deletionTimestamp ?? "") !== String(is.deletionTimestamp ?? "") ||
    !deepEqual(was.finalizers ?? [], is.finalizers ?? []) ||
    !deepEqual(was.annotations ?? {}, is.annotations ?? {})
  );
}

/** A ShapeRef changed: check whether it dangles. */
export function onShapeRefEvent(queues: ShapeQueues, ref: ShapeRef): void {
  queues.shapeRefs.enqueue(ref.metadata.name);
}

/**
 * One of our cloud shapes changed (a human recolored, retagged or deleted it, or our own write came back):
 * reconcile the Shape that owns it AT ONCE — this is what makes drift repair fast — and let the sweep look
 * at it. The Shape is found by the deterministic cloud name `<namespace>.<name>`, never by the `k8s-name`
 * tag: that tag is for people, and a person may have just rewritten it (which is drift to repair, so it
 * must not also hide the Shape that repairs it).
 */
export function onCloudEvent(queues: ShapeQueues, cloud: CloudShape): void {
  const owner = shapeOfCloudName(cloud.name);
  if (owner) queues.shapes.enqueue(`${owner.namespace}/${owner.name}`);
  queues.sweep.enqueue(cloud.name);
}

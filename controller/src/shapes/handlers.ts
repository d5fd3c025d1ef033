/**
 * Handlers: turn cache events into keys on the right queue (controller-runtime's "handler" step).
 * They only compute keys; they never read the API or decide anything.
 */
import { TAG_NAME, cloudNameOf, shapeRefNameOf, type Shape, type ShapeRef } from "./api.ts";
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

/** A ShapeRef changed: check whether it dangles. */
export function onShapeRefEvent(queues: ShapeQueues, ref: ShapeRef): void {
  queues.shapeRefs.enqueue(ref.metadata.name);
}

/**
 * One of our cloud shapes changed (a human recolored or deleted it, or our own write came back): reconcile
 * the Shape that owns it AT ONCE — this is what makes drift repair fast — and let the sweep look at it.
 */
export function onCloudEvent(queues: ShapeQueues, cloud: CloudShape): void {
  const owner = cloud.tags[TAG_NAME];
  const slash = owner?.indexOf("/") ?? -1;
  // Only a well-formed `namespace/name` tag whose deterministic name matches points at a Shape.
  if (owner && slash > 0 && cloudNameOf(owner.slice(0, slash), owner.slice(slash + 1)) === cloud.name) {
    queues.shapes.enqueue(owner);
  }
  queues.sweep.enqueue(cloud.name);
}

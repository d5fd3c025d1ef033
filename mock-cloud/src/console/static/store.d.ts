/**
 * Types of store.js (browser JavaScript, served as is; its tests run in Node). The contract is documented
 * in store.js.
 */
import type { Shape, WatchEvent } from "../../schemas.ts";

export type { Shape, WatchEvent };

/** Every shape the console knows, by id, and the cloud revision that reflects. */
export declare class ShapeStore {
  /** The listing's revision, then the last applied event's. */
  get revision(): number;
  /** How many shapes there are. */
  get size(): number;
  /** Replaces everything with a complete listing read at `revision`. */
  reset(shapes: readonly Shape[], revision: number): void;
  /** Applies one change; true when the visible state changed. Idempotent; never goes back in time. */
  apply(event: WatchEvent): boolean;
  /** The shape with `id`. */
  get(id: string): Shape | undefined;
  /** Every shape, by name. */
  sorted(): Shape[];
}

/** Who a shape belongs to, from its tags. */
export type Ownership =
  | { readonly ours: true; readonly owner: string; readonly k8sName: string | undefined }
  | { readonly ours: false };

/** Ours when the shape has an `owner` tag (then `k8s-name` names the Shape); foreign otherwise. */
export function ownershipOf(shape: Shape): Ownership;

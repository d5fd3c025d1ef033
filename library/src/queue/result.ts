/**
 * What a reconcile returns. The worker turns each kind into a queue action in ONE `switch`
 * (see `controller.ts`), so a reconciler never touches the queue itself.
 *
 * - `done`: the object is converged. Forget its backoff; the next event or resync brings it back.
 * - `requeueAfter`: converged for now, but look again after `afterMs` (e.g. waiting for the external API).
 *   Resets the backoff: this is not a failure.
 * - `failed`: a transient failure. Retry with per-key exponential backoff, or after `retryAfterMs`
 *   when the external API said how long to wait (HTTP 429/503 `Retry-After`).
 * - `terminal`: retrying cannot help until the object changes: an input the external API refused for good
 *   (classify says "rejected", reported as `Synced=False` `SpecRejected`). Forget the key; a new event (a spec
 *   change, a refresh annotation) brings it back.
 */
export type ReconcileResult =
  | { readonly kind: "done" }
  | { readonly kind: "requeueAfter"; readonly afterMs: number }
  | { readonly kind: "failed"; readonly error: Error; readonly retryAfterMs?: number }
  | { readonly kind: "terminal"; readonly error: Error };

/** The object is converged. */
export const done = (): ReconcileResult => ({ kind: "done" });

/** Converged for now; reconcile again after `afterMs`. */
export const requeueAfter = (afterMs: number): ReconcileResult => ({ kind: "requeueAfter", afterMs });

/** A transient failure: retry with backoff, or after `retryAfterMs` when the external API asked for it. */
export const failed = (error: Error, retryAfterMs?: number): ReconcileResult =>
  retryAfterMs === undefined ? { kind: "failed", error } : { kind: "failed", error, retryAfterMs };

/** A failure that retrying cannot fix until the object changes. */
export const terminal = (error: Error): ReconcileResult => ({ kind: "terminal", error });

/**
 * A reconciler makes the world match one object's desired state.
 *
 * Called by a worker with the key of ONE object; never called concurrently for the same key.
 * It must be idempotent (it may run any number of times for the same state), read what it
 * needs from caches (never mutating cached objects), and report the outcome as a `ReconcileResult`
 * instead of throwing. A thrown error is treated as `failed(error)`.
 */
export interface Reconciler<K extends string = string> {
  /**
   * Converge the object named by `key`. `signal` aborts when the controller stops (shutdown or leadership lost):
   * pass it to every request and return soon after. A failure reported after the abort queues the key again for
   * the next start, without a backoff penalty.
   */
  reconcile(key: K, signal: AbortSignal): Promise<ReconcileResult>;
}

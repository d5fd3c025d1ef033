/**
 * The step: the unit the three reconcilers (reconciler.ts, intent-reconciler.ts, sweep.ts) are written in.
 * A step that may end a reconcile returns a {@link Verdict} — go on with a value, or stop with the result
 * the reconcile returns — and its caller returns a stop at once (`if (v.stop) return v.result`), so every
 * exit of a reconcile is a `return` where it happens, as kube-rs's `finalizer()` and Crossplane's managed
 * `Reconcile` do. Nothing is thrown to leave early.
 */
import type { ReconcileResult } from "../queue/result.ts";

/**
 * What a step of a reconcile says: go on with `value`, or stop the reconcile with `result` (a failure
 * already reported, a wait, a conflict).
 *
 * # Guarantees
 * A stop carries the result the reconcile returns as it is: the caller adds nothing and returns it at once
 * (`if (v.stop) return v.result`).
 */
export type Verdict<T> =
  { readonly stop: false; readonly value: T } | { readonly stop: true; readonly result: ReconcileResult };

/** Go on with `value`. */
export const proceed = <T>(value: T): Verdict<T> => ({ stop: false, value });

/** Stop the reconcile, returning `result`. */
export const stop = (result: ReconcileResult): Verdict<never> => ({ stop: true, result });

/**
 * Runs one step that may throw: its value, or a stop with what `onError` makes of the error.
 *
 * # Errors
 * Never throws what `step` throws: `onError` turns it into the result the reconcile returns. What `onError`
 * itself throws is not caught.
 */
export async function attempt<T>(
  step: () => Promise<T>,
  onError: (err: unknown) => ReconcileResult | Promise<ReconcileResult>,
): Promise<Verdict<T>> {
  let value: T;
  try {
    value = await step();
  } catch (err) {
    return stop(await onError(err));
  }
  return proceed(value);
}

/**
 * Time, as the long-running loops of the core see it (informer restarts, leader election).
 *
 * Leader election and the ring of Leases take a {@link Clock} so their tests can drive time by hand; the
 * informers use {@link systemClock} and keep their periods configurable instead.
 */

/** A source of time and of abortable waits. */
export interface Clock {
  /** Called whenever a component needs "now": milliseconds since the epoch, never decreasing within a test. */
  now(): number;
  /**
   * Called to wait: resolves `true` after `ms` milliseconds, or `false` as soon as `signal` aborts
   * (at once if it already has). Never rejects.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<boolean>;
}

/**
 * Waits `ms` milliseconds on a real timer, or until `signal` aborts. Resolves `true` when the full time
 * passed, `false` when aborted; never rejects. The timer never keeps the process alive.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(true);
      },
      Math.max(0, ms),
    );
    timer.unref();
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A signal with a time limit, from {@link deadline}. */
export interface Deadline {
  /** Aborts `ms` after the deadline was made (on its clock), or when the parent signal aborts. */
  readonly signal: AbortSignal;
  /** Called when the work is over, in a `finally`: stops the timer, so the signal never aborts from it later. */
  cancel(): void;
}

/**
 * A signal for one bounded piece of work (a request that must answer in time): it aborts with
 * `Error(reason)` after `ms` on `clock`, or as soon as `parent` aborts. Call `cancel()` when the work ends.
 */
export function deadline(clock: Clock, ms: number, reason: string, parent?: AbortSignal): Deadline {
  const expired = new AbortController();
  const done = new AbortController();
  void clock.sleep(Math.max(0, ms), done.signal).then((elapsed) => {
    if (elapsed) expired.abort(new Error(reason));
  });
  return {
    signal: parent ? AbortSignal.any([parent, expired.signal]) : expired.signal,
    cancel: () => done.abort(),
  };
}

/** The wall clock: `Date.now()` and real timers. */
export const systemClock: Clock = { now: () => Date.now(), sleep };

/**
 * `ms × (1 + factor × random)`: a wait made up to `factor` longer at random, so replicas and restarts do not
 * retry in lockstep (client-go's `wait.Jitter`). `random` returns a number in [0, 1); injectable for tests.
 */
export function jitter(ms: number, factor: number, random: () => number = Math.random): number {
  return ms * (1 + factor * random());
}

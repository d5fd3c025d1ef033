/**
 * A {@link Clock} that moves only when a test says so. `advance(ms)` fires the due sleeps in time order and,
 * after each, lets the promise chains they woke run to their next wait, so a test steps through minutes of
 * leader election in milliseconds, deterministically.
 */
import type { Clock } from "../support/clock.ts";

interface Sleeper {
  readonly at: number;
  readonly seq: number;
  readonly wake: (elapsed: boolean) => void;
}

/**
 * A clock that moves only when a test says so: `advance(ms)` fires the due sleeps in time order and lets
 * the promise chains they woke run to their next wait, so a test steps through minutes in milliseconds,
 * deterministically.
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #sleepers = new Set<Sleeper>();

  /** Starts at `startMs` (epoch milliseconds); the default is a fixed date so MicroTime strings are stable. */
  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.#now = startMs;
  }

  /** The clock's time, in epoch milliseconds: moves only with `advance`. */
  now(): number {
    return this.#now;
  }

  /**
   * Resolves `true` once `advance` moved the clock `ms` past now, or `false` when `signal` aborts first
   * (at once when it is aborted already).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      if (signal?.aborted === true) return resolve(false);
      const onAbort = () => sleeper.wake(false);
      const sleeper: Sleeper = {
        at: this.#now + Math.max(0, ms),
        seq: this.#seq++,
        wake: (elapsed) => {
          this.#sleepers.delete(sleeper);
          signal?.removeEventListener("abort", onAbort);
          resolve(elapsed);
        },
      };
      this.#sleepers.add(sleeper);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Moves time forward by `ms`, waking due sleepers one at a time, in order, settling after each. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await settle();
    for (;;) {
      const next = [...this.#sleepers]
        .filter((s) => s.at <= target)
        .sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (next === undefined) break;
      this.#now = Math.max(this.#now, next.at);
      next.wake(true);
      await settle();
    }
    this.#now = target;
    await settle();
  }

  /** Advances in `stepMs` steps until `condition()` holds; throws after `maxMs` of clock time. */
  async advanceUntil(condition: () => boolean, maxMs: number, stepMs = 100): Promise<void> {
    const deadline = this.#now + maxMs;
    while (!condition()) {
      if (this.#now >= deadline) throw new Error(`condition not met within ${maxMs} ms of clock time`);
      await this.advance(stepMs);
    }
  }
}

/** Lets every promise chain woken so far run until it waits again (on the clock or on real I/O). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

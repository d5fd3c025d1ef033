/**
 * A client-side rate limit for the calls one process makes to a remote API, shared by every caller: client-go's
 * token bucket (`flowcontrol.NewTokenBucketRateLimiter(qps, burst)`), plus the holds a good tenant of a shared
 * API needs, so that when the server throttles or fails for everyone, every caller backs off together instead
 * of each one earning its own 429.
 *
 * What it promises:
 * - Rate: after a quiet spell up to `burst` calls go at once, then `qps` per second on average.
 * - FIFO: callers get their token in the order they asked; a later caller never overtakes a waiting one.
 * - Abortable: a caller whose signal aborts while it waits is rejected at once with the signal's reason and
 *   loses its place (a lost leadership or a shutdown never hangs here), and it spends no token.
 * - Free when there is room: with a token in the bucket, nobody waiting and no hold, `acquire` takes the token
 *   synchronously — no timer, no allocation beyond the resolved promise.
 * - Holds: `holdUntil(t)` lets no call go before `t`, whoever asks (a server's Retry-After); holds only ever
 *   extend. Answers that say the whole service is unwell hold every call for a doubling delay (the outage
 *   backoff); the first healthy answer resets the doubling (a hold already running runs out: it is at most one
 *   step long). Tokens keep refilling during a hold; the calls released when it ends are the waiting ones,
 *   which are at most the callers' own concurrency (each is a worker blocked in a call).
 * - Timers never keep the process alive (the default clock's `sleep` is unref'd).
 *
 * It gates when calls go out; it does not retry. A failed call is still the caller's to retry (for a
 * controller: the work queue's per-key backoff), and the hold makes that retry wait with everyone else.
 *
 * Why by hand and not p-queue's `interval`/`intervalCap` (p-queue 10 is already a dependency; checked in its
 * source and by running it):
 * - Its default fixed window resets the count at each window edge: with `intervalCap: 10, interval: 200`, 19
 *   tasks started within 200 ms around an edge — twice the cap.
 * - Its `strict` sliding window never exceeds the cap, but cannot say "burst B, then Q per second": with
 *   `intervalCap: B, interval: B/Q` it starts B tasks, then nothing until the window slides, then B again (30
 *   tasks at cap 10 per 200 ms started at 0, 200 and 400 ms, ten at a time); with `intervalCap: 1` there is no
 *   burst at all.
 * - "Nothing until T, whoever asks" would be `pause()` plus our own timer to `start()`, rescheduled by every
 *   later Retry-After — the hold logic is ours either way — and `start()` releases a whole window at once.
 * - It reads `Date.now()` and real timers; this takes the core's {@link Clock}, so its tests step through
 *   holds and refills deterministically with a manual clock.
 * A token bucket with a FIFO of waiters and a hold deadline is the small remainder, written here.
 */
import { systemClock, type Clock } from "../support/clock.ts";
import { ExponentialBackoff } from "./queue.ts";

/**
 * What a client of a remote API needs from a limiter. `RateLimiter` implements it; a client that gets none
 * sends every call at once, as before.
 */
export interface RequestLimiter {
  /**
   * Called before each request, with the request's signal: resolves when the request may go out. Rejects
   * with `signal.reason` if the signal aborts first (or already has); the request must then not be sent.
   */
  acquire(signal?: AbortSignal): Promise<void>;
  /**
   * Called after each answer with its HTTP status (0: no answer came — a network error or a timeout, not the
   * caller's own abort) and the server's Retry-After in ms when it sent one. Never throws.
   */
  report(status: number, retryAfterMs?: number): void;
}

/** Why every call is being held: the server said how long (`retry-after`), or answers said it is unwell. */
export type HoldReason = "retry-after" | "outage";

/** Called by a {@link RateLimiter} as things happen (metrics). Each is optional and must not throw. */
export interface RateLimiterHooks {
  /** A call got its token after waiting `waitMs` (0 when there was room). Not called for aborted waits. */
  onWait?: (waitMs: number) => void;
  /** Every call is held `ms` longer than before, for `reason`. The sum of `ms` is the time calls were held. */
  onHold?: (reason: HoldReason, ms: number) => void;
}

/** Options of a {@link RateLimiter}. */
export interface RateLimiterOptions {
  /** Average calls per second. Must be positive (a caller that wants no limit builds no limiter). */
  qps: number;
  /** Calls that may go at once after a quiet spell (the bucket's size): a positive integer. */
  burst: number;
  /** First hold of the outage backoff. Default {@link DEFAULT_OUTAGE_BASE_MS}. */
  outageBaseMs?: number;
  /** Longest hold of the outage backoff. Default {@link DEFAULT_OUTAGE_MAX_MS}. */
  outageMaxMs?: number;
  /** Time and timers. Default the wall clock. */
  clock?: Clock;
  /** Told as calls wait and as holds start (metrics). Default none. */
  hooks?: RateLimiterHooks;
}

/** First outage hold: 100 ms, like the work queue's first retry — one bad answer costs next to nothing. */
export const DEFAULT_OUTAGE_BASE_MS = 100;

/**
 * Longest outage hold: 10 s. At worst one round of calls per 10 s while the service is down (the per-key
 * backoff, up to 60 s, still spaces each key's own retries), and at most 10 s of extra wait once it is back.
 * A cap reached within the first seconds of an outage would flatten the doubling a key's own backoff promises.
 */
export const DEFAULT_OUTAGE_MAX_MS = 10_000;

/**
 * What an answer says about the whole service:
 * - `hold`: 429 or 503 with a Retry-After — the server said when to come back: nobody calls before then.
 * - `unwell`: no answer (status 0), 502, 504, 503 without Retry-After, or a 429 without one — the service (or
 *   its gateway) is down or overloaded and did not say for how long: the outage backoff.
 * - `healthy`: any other 1xx–4xx — the service answered; a 404, 409 or 412 is about one object, not the service.
 * - `neutral`: 500 and the other 5xx — one request failed; that says too little about the service either way.
 */
export type ServiceSignal = "hold" | "unwell" | "healthy" | "neutral";

/** Reads an HTTP answer as a {@link ServiceSignal}. Pure. */
export function serviceSignalOf(status: number, retryAfterMs?: number): ServiceSignal {
  const said = retryAfterMs !== undefined && retryAfterMs > 0;
  if (status === 429 || status === 503) return said ? "hold" : "unwell";
  if (status === 0 || status === 502 || status === 504) return "unwell";
  if (status >= 500) return "neutral";
  return "healthy";
}

/** A caller waiting for its token. */
interface Waiter {
  /** Hands the token over (`at`: now). */
  grant(at: number): void;
}

const GRANTED: Promise<void> = Promise.resolve();

/** See the module comment: a token bucket with FIFO waiters, holds and an outage backoff. */
export class RateLimiter implements RequestLimiter {
  readonly #qps: number;
  readonly #burst: number;
  readonly #clock: Clock;
  readonly #hooks: RateLimiterHooks;
  readonly #outage: ExponentialBackoff<"service">;
  readonly #waiters: Waiter[] = [];
  #tokens: number;
  /** When `#tokens` was last brought up to date. */
  #refilledAt: number;
  /** No call goes out before this time (the latest of every hold). */
  #heldUntil = 0;
  /** The end of the current outage hold: unwell answers before it were for calls sent before it. */
  #outageUntil = 0;
  #pumping = false;

  /** Throws when `qps` is not positive or `burst` is not a positive integer. */
  constructor(options: RateLimiterOptions) {
    if (!(options.qps > 0 && Number.isFinite(options.qps))) {
      throw new Error(`cannot limit calls to ${options.qps} per second: it must be a positive number`);
    }
    if (!(Number.isInteger(options.burst) && options.burst >= 1)) {
      throw new Error(`cannot use a burst of ${options.burst}: it must be a positive integer`);
    }
    this.#qps = options.qps;
    this.#burst = options.burst;
    this.#clock = options.clock ?? systemClock;
    this.#hooks = options.hooks ?? {};
    this.#outage = new ExponentialBackoff(
      options.outageBaseMs ?? DEFAULT_OUTAGE_BASE_MS,
      options.outageMaxMs ?? DEFAULT_OUTAGE_MAX_MS,
    );
    this.#tokens = options.burst;
    this.#refilledAt = this.#clock.now();
  }

  /** {@inheritDoc RequestLimiter.acquire} */
  acquire(signal?: AbortSignal): Promise<void> {
    const since = this.#clock.now();
    if (signal?.aborted !== true && this.#waiters.length === 0 && this.#take(since)) {
      this.#hooks.onWait?.(0);
      return GRANTED;
    }
    return this.#wait(since, signal);
  }

  /** Queues a caller until the pump grants its token; rejects with `signal.reason` (what `throwIfAborted` throws). */
  async #wait(since: number, signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    const granted = await new Promise<boolean>((resolve) => {
      const onAbort = () => {
        const index = this.#waiters.indexOf(waiter);
        if (index >= 0) this.#waiters.splice(index, 1);
        resolve(false);
      };
      const waiter: Waiter = {
        grant: (at) => {
          signal?.removeEventListener("abort", onAbort);
          this.#hooks.onWait?.(at - since);
          resolve(true);
        },
      };
      this.#waiters.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
      void this.#pump();
    });
    if (!granted) signal?.throwIfAborted();
  }

  /** {@inheritDoc RequestLimiter.report} */
  report(status: number, retryAfterMs?: number): void {
    switch (serviceSignalOf(status, retryAfterMs)) {
      case "hold":
        this.holdUntil(this.#clock.now() + (retryAfterMs ?? 0), "retry-after");
        return;
      case "unwell":
        return this.unwell();
      case "healthy":
        return this.healthy();
      case "neutral":
        return;
    }
  }

  /**
   * Called when a server asked for a pause (Retry-After): no call goes out before `deadline` (a time of this
   * limiter's clock: epoch ms by default). A deadline before the current hold's end changes nothing.
   */
  holdUntil(deadline: number, reason: HoldReason = "retry-after"): void {
    const from = Math.max(this.#clock.now(), this.#heldUntil);
    if (!(deadline > from)) return;
    this.#heldUntil = deadline;
    this.#hooks.onHold?.(reason, deadline - from);
  }

  /**
   * Called when an answer said the whole service is unwell: holds every call for the next step of the outage
   * backoff. Answers that arrive during that hold belong to calls sent before it and do not double it again.
   */
  unwell(): void {
    const now = this.#clock.now();
    if (now < this.#outageUntil) return;
    this.#outageUntil = now + this.#outage.next("service");
    this.holdUntil(this.#outageUntil, "outage");
  }

  /** Called when the service answered: the next unwell answer starts the outage backoff over. */
  healthy(): void {
    this.#outage.forget("service");
  }

  /** Callers waiting for a token now. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** Takes a token if the bucket has one and no hold runs. */
  #take(now: number): boolean {
    this.#refill(now);
    if (now < this.#heldUntil || this.#tokens < 1 - 1e-9) return false;
    this.#tokens = Math.max(0, this.#tokens - 1);
    return true;
  }

  #refill(now: number): void {
    const elapsed = now - this.#refilledAt;
    if (elapsed > 0) this.#tokens = Math.min(this.#burst, this.#tokens + (elapsed * this.#qps) / 1000);
    this.#refilledAt = now; // a clock that went back starts over from here
  }

  /** One loop at a time hands out tokens to the waiters, in order, sleeping until the next one is due. */
  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#waiters.length > 0) {
        const now = this.#clock.now();
        while (this.#waiters.length > 0 && this.#take(now)) this.#waiters.shift()?.grant(now);
        if (this.#waiters.length === 0) break;
        // Until the hold ends, or until the bucket has refilled to one token. Holds only ever extend, so waking
        // at the old time and looking again is enough; at least 1 ms, so rounding never spins.
        const dueInMs =
          now < this.#heldUntil ? this.#heldUntil - now : ((1 - this.#tokens) * 1000) / this.#qps;
        await this.#clock.sleep(Math.max(1, Math.ceil(dueInMs)));
      }
    } finally {
      this.#pumping = false;
    }
  }
}

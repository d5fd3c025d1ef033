/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics, written small
 * (@kubernetes/client-node has none).
 *
 * The Lease record says who holds it (`holderIdentity`), for how long (`leaseDurationSeconds`) and when it was
 * last renewed. Every replica runs the same loop:
 * - Candidate: every `retryPeriod` (jittered), read the Lease. Take it when it is absent, has no holder, or
 *   has EXPIRED: its record has not changed for `leaseDuration` as measured on OUR clock since WE first saw
 *   that record (like client-go: no comparison of timestamps written by another machine's clock). Every write
 *   is a replace guarded by the resourceVersion we read: of two replicas racing, one gets 409 and stays
 *   candidate. A takeover increments `leaseTransitions`.
 * - Leader: renew every `retryPeriod`. Leadership is valid until `renewDeadline` after the START of the last
 *   successful renewal; when that passes without a newer one, or a renewal shows someone else holds the Lease,
 *   leadership is lost at once: the AbortSignal handed to `onStartedLeading` fires, and every write guarded by
 *   it stops.
 *
 * Why this is safe: another replica can take over no earlier than `leaseDuration` after it saw our last
 * renewal, which it cannot see before we sent it. We stop at most `renewDeadline` after sending it. The gap
 * (`leaseDuration − renewDeadline`, 5 s by default) covers clocks running at slightly different rates and the
 * time our writes need to notice the aborted signal.
 *
 * On graceful shutdown the leader stops leading, waits for `onStoppedLeading`, then releases the Lease (clears
 * the holder) so another replica takes over at its next retry instead of waiting the lease out.
 */
import { deadline, jitter, systemClock, type Clock } from "../support/clock.ts";
import type { Logger } from "../observability/logger.ts";

/** The leader-election fields of a Lease's spec. Times are MicroTime strings (see {@link toMicroTime}). */
export interface LeaseRecord {
  /** Who holds the Lease; absent or empty when nobody does. */
  holderIdentity?: string;
  leaseDurationSeconds: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions: number;
}

/** A Lease as read or written: its record and the resourceVersion that guards the next write. */
export interface ObservedLease {
  record: LeaseRecord;
  resourceVersion: string;
}

/** A write lost a race: the Lease exists already (create) or changed since it was read (update). HTTP 409. */
export class LeaseConflictError extends Error {
  constructor(message = "cannot write the lease: it changed since it was read") {
    super(message);
    this.name = "LeaseConflictError";
  }
}

/**
 * The three calls leader election makes on ONE Lease. Implemented over the library's client in
 * `lean-lease-client.ts` and in memory by the tests. Each call is one request that honours `signal`; none retries by itself.
 */
export interface LeaseClient {
  /** Reads the Lease; resolves undefined when it does not exist (404). */
  get(signal: AbortSignal): Promise<ObservedLease | undefined>;
  /** Creates the Lease; rejects with {@link LeaseConflictError} when it already exists. */
  create(record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease>;
  /** Replaces the Lease's record if it is still at `resourceVersion`, else rejects with {@link LeaseConflictError}. */
  update(record: LeaseRecord, resourceVersion: string, signal: AbortSignal): Promise<ObservedLease>;
}

/** Callbacks for metrics; cheap, must not throw. */
export interface LeaderElectionHooks {
  /** Called with true when this replica starts leading, false when it stops. */
  onLeaderChange?(isLeader: boolean): void;
}

/** Options of a {@link LeaderElector}. Durations default to client-go's: 15 s, 10 s, 2 s. */
export interface LeaderElectorOptions {
  client: LeaseClient;
  /** This replica's identity, unique among replicas (e.g. the pod name plus a random suffix). */
  identity: string;
  /** How long others wait, after the Lease last changed, before taking it over. Default 15 s. */
  leaseDurationMs?: number;
  /** How long the leader keeps leading without a successful renewal. Default 10 s. */
  renewDeadlineMs?: number;
  /** Time between attempts to acquire or renew. Default 2 s (candidates add up to 120% jitter). */
  retryPeriodMs?: number;
  /**
   * Called each time this replica starts leading. `signal` aborts the instant leadership is lost or the
   * elector stops: pass it to every write. Should start work and return; a returned promise is not awaited
   * (its rejection is logged).
   */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /**
   * Called each time this replica stops leading, after the signal aborted. Awaited before the Lease is
   * released on shutdown, so it can wait for in-flight writes to end.
   */
  onStoppedLeading?: () => void | Promise<void>;
  hooks?: LeaderElectionHooks;
  logger: Logger;
  /** Injectable for tests. Default: the wall clock. */
  clock?: Clock;
  /** Returns a number in [0, 1) for jitter; injectable for tests. Default `Math.random`. */
  random?: () => number;
}

/** client-go's `JitterFactor`: candidates retry after `retryPeriod × (1 + 1.2 × random)`. */
const JITTER_FACTOR = 1.2;

/** Called to format a Lease time: RFC 3339 with SIX decimals. `toISOString()` has three, which the API server rejects. */
export function toMicroTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

type Attempt = "acquired" | "held-by-other" | "failed";

/** See the module comment. Create one per process; `run` it for the life of the process. */
export class LeaderElector {
  /** This replica's identity, as given. */
  readonly identity: string;

  readonly #client: LeaseClient;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  readonly #onStoppedLeading: () => void | Promise<void>;
  readonly #hooks: LeaderElectionHooks;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #random: () => number;

  /** The Lease as we last read or wrote it, and when (our clock) its record last changed. */
  #observed: ObservedLease | undefined;
  #observedAt = 0;
  /** The current leadership, while leading. */
  #leadership: AbortController | undefined;
  #running = false;

  /** Checks the durations (client-go's rules); nothing runs until `run()`. */
  constructor(options: LeaderElectorOptions) {
    this.identity = options.identity;
    this.#client = options.client;
    this.#leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.#renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.#retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.#onStartedLeading = options.onStartedLeading;
    this.#onStoppedLeading = options.onStoppedLeading ?? (() => {});
    this.#hooks = options.hooks ?? {};
    this.#logger = options.logger.child({ identity: options.identity });
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    if (!options.identity) throw new Error("cannot elect a leader without an identity");
    if (!(this.#leaseDurationMs > this.#renewDeadlineMs)) {
      throw new Error("cannot elect a leader: the lease duration must be longer than the renew deadline");
    }
    if (!(this.#renewDeadlineMs > JITTER_FACTOR * this.#retryPeriodMs)) {
      throw new Error("cannot elect a leader: the renew deadline must exceed 1.2 × the retry period");
    }
    if (this.#leaseDurationMs % 1000 !== 0) {
      throw new Error(
        "cannot elect a leader: the lease duration must be whole seconds (the Lease stores seconds)",
      );
    }
  }

  /** True while this replica leads: from acquiring the Lease until the leadership signal aborts. */
  isLeader(): boolean {
    return this.#leadership !== undefined && !this.#leadership.signal.aborted;
  }

  /**
   * Called once, at startup: campaigns, leads, and campaigns again after losing leadership, until `signal`
   * aborts. Then, if leading, it stops leading, awaits `onStoppedLeading` and releases the Lease. Resolves
   * when all that is done; never rejects for API errors (they are logged and retried).
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error(`cannot run leader election for ${this.identity} twice`);
    this.#running = true;
    while (!signal.aborted) {
      const acquiredAt = await this.#campaign(signal);
      if (acquiredAt === undefined) break;
      await this.#lead(signal, acquiredAt);
    }
  }

  /**
   * Tries every retry period (jittered) until the Lease is ours. Returns when the successful attempt started,
   * or undefined when `signal` aborted first.
   */
  async #campaign(signal: AbortSignal): Promise<number | undefined> {
    while (!signal.aborted) {
      const { outcome, startedAt } = await this.#tryAcquireOrRenew(signal, this.#renewDeadlineMs);
      if (outcome === "acquired") return startedAt;
      await this.#clock.sleep(jitter(this.#retryPeriodMs, JITTER_FACTOR, this.#random), signal);
    }
    return undefined;
  }

  /** Leads until leadership is lost or `signal` aborts; then runs the stop sequence. */
  async #lead(signal: AbortSignal, acquiredAt: number): Promise<void> {
    const leadership = new AbortController();
    this.#leadership = leadership;
    // The acquisition counts as the first successful renewal.
    let validUntil = acquiredAt + this.#renewDeadlineMs;
    const lose = (reason: string) => {
      if (leadership.signal.aborted) return;
      leadership.abort(new Error(`cannot keep leading: ${reason}`));
      this.#logger.warn({ reason }, "stopped leading");
    };
    this.#logger.info({ transitions: this.#observed?.record.leaseTransitions }, "started leading");
    this.#hooks.onLeaderChange?.(true);
    this.#callStarted(leadership.signal);

    const deadline = this.#enforceDeadline(leadership, () => validUntil, lose);
    const stopOrLost = AbortSignal.any([signal, leadership.signal]);
    while (await this.#clock.sleep(this.#retryPeriodMs, stopOrLost)) {
      const { outcome, startedAt } = await this.#tryAcquireOrRenew(
        stopOrLost,
        validUntil - this.#clock.now(),
      );
      if (leadership.signal.aborted || signal.aborted) break;
      if (outcome === "acquired") validUntil = startedAt + this.#renewDeadlineMs;
      else if (outcome === "held-by-other") lose("another replica holds the lease");
      // "failed": try again next period; the deadline decides when to give up.
    }

    const graceful = signal.aborted && !leadership.signal.aborted;
    lose(graceful ? "shutting down" : "leadership lost");
    await deadline;
    this.#hooks.onLeaderChange?.(false);
    try {
      await this.#onStoppedLeading();
    } catch (error) {
      this.#logger.error({ err: error }, "onStoppedLeading failed");
    }
    if (graceful) await this.#release();
  }

  /** Aborts `leadership` when the clock passes `validUntil()`, re-checked each time it wakes. */
  async #enforceDeadline(
    leadership: AbortController,
    validUntil: () => number,
    lose: (reason: string) => void,
  ): Promise<void> {
    while (!leadership.signal.aborted) {
      const remaining = validUntil() - this.#clock.now();
      if (remaining <= 0)
        return lose(`no successful renewal within the ${this.#renewDeadlineMs} ms deadline`);
      await this.#clock.sleep(remaining, leadership.signal);
    }
  }

  #callStarted(signal: AbortSignal): void {
    try {
      const started = this.#onStartedLeading(signal);
      if (started instanceof Promise) {
        started.catch((error: unknown) => this.#logger.error({ err: error }, "onStartedLeading failed"));
      }
    } catch (error) {
      this.#logger.error({ err: error }, "onStartedLeading failed");
    }
  }

  /**
   * One attempt, client-go's `tryAcquireOrRenew`: read; create if absent; stop if someone else holds an
   * unexpired Lease; else write ourselves in as holder, guarded by the resourceVersion read.
   * Requests are aborted by `signal` or after `timeoutMs`.
   */
  async #tryAcquireOrRenew(
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<{ outcome: Attempt; startedAt: number }> {
    const startedAt = this.#clock.now();
    const timeout = deadline(this.#clock, timeoutMs, "cannot reach the lease in time", signal);
    try {
      return { outcome: await this.#attempt(startedAt, timeout.signal), startedAt };
    } catch (error) {
      const level = error instanceof LeaseConflictError ? "debug" : "warn";
      this.#logger[level]({ err: error }, "cannot acquire or renew the lease");
      return { outcome: "failed", startedAt };
    } finally {
      timeout.cancel();
    }
  }

  async #attempt(now: number, signal: AbortSignal): Promise<Attempt> {
    const current = await this.#client.get(signal);
    if (current === undefined) {
      this.#observe(await this.#client.create(this.#recordFor(undefined, now), signal), now);
      return "acquired";
    }
    if (!sameRecord(current.record, this.#observed?.record)) this.#observe(current, now);
    else this.#observed = current;

    const holder = current.record.holderIdentity;
    const expiresAt = this.#observedAt + current.record.leaseDurationSeconds * 1000;
    if (holder && holder !== this.identity && expiresAt > now) return "held-by-other";

    this.#observe(
      await this.#client.update(this.#recordFor(current.record, now), current.resourceVersion, signal),
      now,
    );
    return "acquired";
  }

  /** The record that makes us the holder: renewing keeps acquireTime and transitions; taking over bumps them. */
  #recordFor(current: LeaseRecord | undefined, now: number): LeaseRecord {
    const renewing = current?.holderIdentity === this.identity;
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.#leaseDurationMs / 1000,
      acquireTime: renewing ? (current?.acquireTime ?? toMicroTime(now)) : toMicroTime(now),
      renewTime: toMicroTime(now),
      leaseTransitions: current === undefined ? 0 : current.leaseTransitions + (renewing ? 0 : 1),
    };
  }

  #observe(lease: ObservedLease, at: number): void {
    this.#observed = lease;
    this.#observedAt = at;
  }

  /** Clears the holder (client-go's release) if we still hold the Lease as we last saw it. Best effort. */
  async #release(): Promise<void> {
    const observed = this.#observed;
    if (observed?.record.holderIdentity !== this.identity) return;
    const now = this.#clock.now();
    const released: LeaseRecord = {
      leaseDurationSeconds: 1,
      acquireTime: toMicroTime(now),
      renewTime: toMicroTime(now),
      leaseTransitions: observed.record.leaseTransitions,
    };
    const timeout = deadline(this.#clock, this.#renewDeadlineMs, "cannot release the lease in time");
    try {
      this.#observed = await this.#client.update(released, observed.resourceVersion, timeout.signal);
      this.#logger.info("released the lease");
    } catch (error) {
      this.#logger.warn(
        { err: error },
        "cannot release the lease; another replica takes over when it expires",
      );
    } finally {
      timeout.cancel();
    }
  }
}

function sameRecord(a: LeaseRecord, b: LeaseRecord | undefined): boolean {
  return (
    b !== undefined &&
    (a.holderIdentity ?? "") === (b.holderIdentity ?? "") &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.acquireTime === b.acquireTime &&
    a.renewTime === b.renewTime &&
    a.leaseTransitions === b.leaseTransitions
  );
}

/**
 * A ring of replicas from Leases, and the handover protocol that keeps two replicas from ever acting on the
 * same key. Written small, like leader-election.ts: client-go has no ring either (controller-runtime users
 * reach for timebertt/kubernetes-controller-sharding, which adds a sharder that labels every object; here the
 * API server filters by hash itself, KEP-5866, so no object is ever written to move it).
 *
 * Membership. Each replica holds a Lease of its own, labelled with the ring's name, renewed every
 * `retryPeriod`. The ring's members are the holders of the Leases that are alive: a Lease is dead when its
 * record has not changed for `leaseDuration`, measured on OUR clock since WE first saw that record (as leader
 * election does: no comparison of timestamps written by another machine). Every replica hashes the members
 * it sees onto the same consistent-hash ring (ring.ts), so replicas that see the same members agree on who
 * owns what without talking to each other.
 *
 * The handover. Replicas do not see a change at the same moment, so "owns by my view of the ring" is not
 * enough. Each replica also writes, in its Lease (`view`), the members it computed its share from: its CLAIM
 * is its share of THAT ring. The rules:
 * 1. Before it writes a new view, a replica stops acting on what the new view takes away from it, and drains
 *    the reconciles in flight (`onAssign` with the smaller ranges resolves only then).
 * 2. After its view is written, it reads the ring again and acts on its claim minus what the other live
 *    members still claim (they may not have stopped yet). It takes the rest once they have written theirs.
 * So when two replicas both act on a key, each read the other's Lease after writing its own; the later of the
 * two reads saw the other's claim on that key, and would not have taken it. A member that died claims nothing
 * once its Lease is dead; it stopped acting `renewDeadline` after its last renewal (the same margin as leader
 * election: every write goes through a fence that closes then), before anyone else sees the Lease die.
 *
 * On a graceful stop a replica stops acting, drains, and deletes its Lease: the others take its share at their
 * next read instead of waiting for the Lease to die.
 */
import { deadline, jitter, systemClock, type Clock } from "../support/clock.ts";
import { LeaseConflictError, toMicroTime } from "./leader-election.ts";
import type { Logger } from "../observability/logger.ts";
import {
  DEFAULT_VIRTUAL_NODES,
  HashRing,
  intersect,
  sameRanges,
  shareOf,
  subtract,
  type HashRange,
} from "./ring.ts";

/** A member's Lease as the ring reads it. */
export interface MemberLease {
  /** The Lease's name. */
  name: string;
  /** The member holding it (its identity); absent when nobody does. */
  holder?: string;
  leaseDurationSeconds: number;
  /** MicroTime string of the last renewal. */
  renewTime?: string;
  /** The members the holder computed its claim from; absent before it wrote one. */
  view?: readonly string[];
  resourceVersion: string;
}

/** What a replica writes into its own Lease. */
export interface OwnLease {
  holder: string;
  leaseDurationSeconds: number;
  acquireTime: string;
  renewTime: string;
  view?: readonly string[];
}

/**
 * The calls the ring makes on the Leases of one ring (one namespace, one label). Implemented over the API
 * server in `kube-ring-leases.ts` and in memory by the tests. Each call is one request that honours `signal`.
 */
export interface RingLeaseClient {
  /** Lists the ring's Leases: a consistent read (never from a stale cache). */
  list(signal: AbortSignal): Promise<MemberLease[]>;
  /** Creates our Lease; rejects with {@link LeaseConflictError} when it exists. */
  create(name: string, lease: OwnLease, signal: AbortSignal): Promise<MemberLease>;
  /** Replaces our Lease if still at `resourceVersion`, else rejects with {@link LeaseConflictError}. */
  update(name: string, lease: OwnLease, resourceVersion: string, signal: AbortSignal): Promise<MemberLease>;
  /** Deletes our Lease if still at `resourceVersion`; resolves when it is gone (already gone included). */
  delete(name: string, resourceVersion: string, signal: AbortSignal): Promise<void>;
}

/** Callbacks for metrics; cheap, must not throw. */
export interface LeaseRingHooks {
  /** The live members this replica sees, itself included, after each read. */
  onMembers?(count: number): void;
  /** Called on each change of the ranges acted on: what was gained and what was released. */
  onHandover?(change: { gained: boolean; released: boolean; share: number }): void;
}

/** Options of a {@link LeaseRing}. Durations default to leader election's: 15 s, 10 s, 2 s. */
export interface LeaseRingOptions {
  client: RingLeaseClient;
  /** This replica's identity, unique in the ring (e.g. the pod name). */
  identity: string;
  /** The name of this replica's own Lease. */
  leaseName: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Points per member on the ring. Every replica of a ring must use the same number. Default 64. */
  virtualNodes?: number;
  /**
   * Called each time the ranges this replica may act on change (gained or released). `signal` aborts the
   * instant this replica stops being a member (no renewal within the renew deadline, or stopping): pass it to
   * every write. Must resolve only once nothing outside `ranges` is being worked on any more (in-flight work
   * drained), and should not wait for the new ranges' work itself. Calls never overlap.
   */
  onAssign: (ranges: readonly HashRange[], signal: AbortSignal) => Promise<void>;
  /** Called when this replica stops being a member, after the signal aborted: stop all work and drain it. */
  onRevoke: () => Promise<void>;
  hooks?: LeaseRingHooks;
  logger: Logger;
  /** Injectable for tests. Default: the wall clock. */
  clock?: Clock;
}

interface Observation {
  /** Live members, this replica included while it is a member; sorted. */
  members: string[];
  /** What each OTHER live member claims, by its written view. */
  claims: HashRange[];
}

/** See the module comment. Create one per process; `run` it for the life of the process. */
export class LeaseRing {
  readonly identity: string;
  readonly #client: RingLeaseClient;
  readonly #leaseName: string;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #virtualNodes: number;
  readonly #onAssign: LeaseRingOptions["onAssign"];
  readonly #onRevoke: LeaseRingOptions["onRevoke"];
  readonly #hooks: LeaseRingHooks;
  readonly #logger: Logger;
  readonly #clock: Clock;

  /** Our Lease as last written or read (its resourceVersion guards the next write). */
  #own: MemberLease | undefined;
  #acquireTime: string | undefined;
  /** The view in our Lease, as last written; the view to write next. */
  #written: readonly string[] | undefined;
  #want: readonly string[] | undefined;
  /** When each Lease's current record was first seen (our clock), by Lease name. */
  readonly #seen = new Map<string, { record: string; at: number }>();
  #observation: Observation | undefined;
  /** Valid from a successful renewal until `renewDeadline` after its start without a newer one. */
  #membership: AbortController | undefined;
  #deadline: AbortController | undefined;
  /** What we act on now (what the last `onAssign` got). */
  #acting: HashRange[] = [];
  #revoked = true;
  /** Serialises the Lease calls of the heartbeat and of the handover steps. */
  #serial: Promise<unknown> = Promise.resolve();
  #wake: (() => void) | undefined;
  #pendingWake = false;

  /** Checks the durations; nothing runs until `run()`. */
  constructor(options: LeaseRingOptions) {
    this.identity = options.identity;
    this.#client = options.client;
    this.#leaseName = options.leaseName;
    this.#leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.#renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.#retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.#virtualNodes = options.virtualNodes ?? DEFAULT_VIRTUAL_NODES;
    this.#onAssign = options.onAssign;
    this.#onRevoke = options.onRevoke;
    this.#hooks = options.hooks ?? {};
    this.#logger = options.logger.child({ identity: options.identity, ring: options.leaseName });
    this.#clock = options.clock ?? systemClock;
    if (!options.identity) throw new Error("cannot join a ring without an identity");
    if (!(this.#leaseDurationMs > this.#renewDeadlineMs && this.#renewDeadlineMs > this.#retryPeriodMs)) {
      throw new Error("cannot join a ring: it needs lease duration > renew deadline > retry period");
    }
    if (this.#leaseDurationMs % 1000 !== 0) {
      throw new Error(
        "cannot join a ring: the lease duration must be whole seconds (the Lease stores seconds)",
      );
    }
  }

  /** The ranges this replica acts on now. */
  get acting(): readonly HashRange[] {
    return this.#acting;
  }

  /** True while this replica is a member: its last renewal is within the renew deadline. */
  isMember(): boolean {
    return this.#membership !== undefined && !this.#membership.signal.aborted;
  }

  /**
   * Called once, at startup: renews, reads the ring and hands ranges over until `signal` aborts; then stops
   * acting, drains and deletes its Lease. Resolves when all that is done; never rejects for API errors.
   */
  async run(signal: AbortSignal): Promise<void> {
    const heartbeat = (async () => {
      while (!signal.aborted) {
        await this.#beat(signal);
        await this.#clock.sleep(jitter(this.#retryPeriodMs, 0.1), signal);
      }
    })();
    while (!signal.aborted) {
      await this.#nextWake(signal);
      if (signal.aborted) break;
      try {
        await this.#step(signal);
      } catch (error) {
        this.#logger.error({ err: error }, "cannot hand ranges over; trying again at the next read");
      }
    }
    await heartbeat;
    await this.#leave();
  }

  /** One handover step from the latest read: see the module comment's rules. */
  async #step(signal: AbortSignal): Promise<void> {
    const membership = this.#membership;
    if (membership === undefined || membership.signal.aborted) {
      // Not a member (our renewals fail): act on nothing. The fence already refuses every write.
      if (!this.#revoked) await this.#revoke();
      return;
    }
    const seen = this.#observation;
    if (seen === undefined) return;
    const mine = new HashRing(seen.members, this.#virtualNodes).rangesOf(this.identity);
    if (!sameMembers(this.#written, seen.members)) {
      // Rule 1: the ring changed. Stop acting on what it takes from us, then write the new view.
      const keep = intersect(this.#acting, mine);
      if (!sameRanges(keep, this.#acting)) await this.#assign(keep, membership.signal);
      // Already tried and failed: the heartbeat writes it at its next renewal (no hot loop on errors).
      if (sameMembers(this.#want, seen.members)) return;
      this.#want = seen.members;
      this.#logger.info({ members: seen.members }, "the ring changed: writing our new view");
      await this.#beat(signal);
      return;
    }
    // Rule 2: our Lease says what we claim. Act on it, except what others still claim.
    const acting = subtract(mine, seen.claims);
    const changed = !sameRanges(acting, this.#acting) || (this.#revoked && acting.length > 0);
    if (changed) await this.#assign(acting, membership.signal);
  }

  async #assign(ranges: HashRange[], signal: AbortSignal): Promise<void> {
    const gained = subtract(ranges, this.#acting).length > 0;
    const released = subtract(this.#acting, ranges).length > 0;
    this.#acting = ranges;
    this.#revoked = false;
    const share = shareOf(ranges);
    this.#logger.info(
      { share: Math.round(share * 1000) / 1000, ranges: ranges.length, gained, released },
      "acting on a new part of the ring",
    );
    this.#hooks.onHandover?.({ gained, released, share });
    try {
      await this.#onAssign(ranges, signal);
    } catch (error) {
      // Half done is not safe to build on: stop everything, and assign again from scratch at the next read.
      await this.#revoke();
      throw error;
    }
  }

  async #revoke(): Promise<void> {
    this.#revoked = true;
    this.#acting = [];
    this.#hooks.onHandover?.({ gained: false, released: true, share: 0 });
    this.#logger.warn("no longer a member of the ring: acting on nothing");
    await this.#onRevoke();
  }

  /** Renews our Lease (writing the wanted view), then reads the ring. Serialised; never rejects. */
  #beat(signal: AbortSignal): Promise<void> {
    const run = this.#serial.then(async () => {
      if (signal.aborted) return;
      const startedAt = this.#clock.now();
      const timeout = deadline(
        this.#clock,
        this.#renewDeadlineMs,
        "cannot reach the ring's leases in time",
        signal,
      );
      try {
        await this.#renew(startedAt, timeout.signal);
        this.#renewed(startedAt);
      } catch (error) {
        const level = error instanceof LeaseConflictError ? "debug" : "warn";
        this.#logger[level]({ err: error }, "cannot renew our lease in the ring");
      }
      try {
        this.#observe(await this.#client.list(timeout.signal));
      } catch (error) {
        this.#logger.warn({ err: error }, "cannot read the ring's leases");
      } finally {
        timeout.cancel();
      }
      this.#wakeUp();
    });
    this.#serial = run;
    return run;
  }

  async #renew(now: number, signal: AbortSignal): Promise<void> {
    this.#acquireTime ??= toMicroTime(now);
    const want = this.#want;
    const lease: OwnLease = {
      holder: this.identity,
      leaseDurationSeconds: this.#leaseDurationMs / 1000,
      acquireTime: this.#acquireTime,
      renewTime: toMicroTime(now),
      ...(want ? { view: want } : {}),
    };
    try {
      this.#own =
        this.#own === undefined
          ? await this.#client.create(this.#leaseName, lease, signal)
          : await this.#client.update(this.#leaseName, lease, this.#own.resourceVersion, signal);
    } catch (error) {
      // Our Lease exists already (a restart under the same name) or changed: take its version from the read.
      if (error instanceof LeaseConflictError) this.#own = undefined;
      throw error;
    }
    this.#written = want;
  }

  /** A renewal started at `startedAt` succeeded: we are a member until `renewDeadline` after it. */
  #renewed(startedAt: number): void {
    if (this.#membership === undefined || this.#membership.signal.aborted) {
      this.#membership = new AbortController();
      this.#logger.info("joined the ring");
    }
    this.#deadline?.abort();
    const deadline = new AbortController();
    this.#deadline = deadline;
    const membership = this.#membership;
    const remaining = startedAt + this.#renewDeadlineMs - this.#clock.now();
    void this.#clock.sleep(remaining, deadline.signal).then((elapsed) => {
      if (!elapsed || membership.signal.aborted) return;
      membership.abort(new Error(`cannot stay in the ring: no renewal within ${this.#renewDeadlineMs} ms`));
      this.#logger.warn("left the ring: no successful renewal within the renew deadline");
      this.#wakeUp();
    });
  }

  /** Reads the ring's Leases into the live members and the other members' claims. */
  #observe(leases: MemberLease[]): void {
    const now = this.#clock.now();
    const live: MemberLease[] = [];
    const listed = new Set<string>();
    for (const lease of leases) {
      listed.add(lease.name);
      if (lease.name === this.#leaseName) {
        // Our own Lease: keep its version (a conflict left us without one).
        this.#own ??= lease;
        continue;
      }
      const record = `${lease.holder ?? ""}|${lease.renewTime ?? ""}|${lease.leaseDurationSeconds}`;
      let seen = this.#seen.get(lease.name);
      if (seen?.record !== record) {
        seen = { record, at: now };
        this.#seen.set(lease.name, seen);
      }
      if (lease.holder && now - seen.at < lease.leaseDurationSeconds * 1000) live.push(lease);
    }
    for (const name of this.#seen.keys()) if (!listed.has(name)) this.#seen.delete(name);
    const members = new Set(live.map((lease) => lease.holder as string));
    if (this.isMember()) members.add(this.identity);
    const claims = live.flatMap((lease) =>
      lease.view && lease.holder !== this.identity
        ? new HashRing(lease.view, this.#virtualNodes).rangesOf(lease.holder as string)
        : [],
    );
    this.#observation = { members: [...members].sort(), claims };
    this.#hooks.onMembers?.(members.size);
  }

  /** Graceful stop: act on nothing, drain, then delete our Lease so the others take over at once. */
  async #leave(): Promise<void> {
    this.#deadline?.abort();
    this.#membership?.abort(new Error("cannot act: the ring member is stopping"));
    if (!this.#revoked) await this.#revoke();
    await this.#serial;
    const own = this.#own;
    if (own === undefined) return;
    const timeout = deadline(this.#clock, this.#renewDeadlineMs, "cannot delete our lease in time");
    try {
      await this.#client.delete(this.#leaseName, own.resourceVersion, timeout.signal);
      this.#logger.info("left the ring: deleted our lease");
    } catch (error) {
      this.#logger.warn({ err: error }, "cannot delete our lease; the others take over when it expires");
    } finally {
      timeout.cancel();
    }
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    if (wake) wake();
    else this.#pendingWake = true;
  }

  #nextWake(signal: AbortSignal): Promise<void> {
    if (this.#pendingWake) {
      this.#pendingWake = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const onAbort = () => resolve();
      signal.addEventListener("abort", onAbort, { once: true });
      this.#wake = () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
    });
  }
}

function sameMembers(a: readonly string[] | undefined, b: readonly string[]): boolean {
  return a !== undefined && a.length === b.length && a.every((m, i) => m === b[i]);
}

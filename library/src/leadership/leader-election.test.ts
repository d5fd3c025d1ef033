import { afterEach, describe, expect, it } from "vitest";
import {
  LeaderElector,
  LeaseConflictError,
  toMicroTime,
  type LeaderElectorOptions,
  type LeaseClient,
  type LeaseRecord,
  type ObservedLease,
} from "./leader-election.ts";
import { silentLogger } from "../observability/logger.ts";
import type { Clock } from "../support/clock.ts";
import { ManualClock } from "../testing/manual-clock.ts";

const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const LEASE_MS = 15_000;
const DEADLINE_MS = 10_000;
const RETRY_MS = 2_000;

/** One Lease in memory, with the API server's rules: resourceVersion-guarded writes, MicroTime format. */
class FakeLeaseApi {
  lease: ObservedLease | undefined;
  readonly writes: { by: string; record: LeaseRecord }[] = [];
  conflicts = 0;
  #rv = 0;

  /** Another writer (kubectl, a rogue replica) replaces the record. */
  overwrite(record: LeaseRecord): void {
    this.lease = { record: structuredClone(record), resourceVersion: String(++this.#rv) };
  }

  write(by: string, record: LeaseRecord, expectedRv: string | undefined): ObservedLease {
    for (const time of [record.acquireTime, record.renewTime]) {
      if (time !== undefined && !MICRO_TIME.test(time))
        throw new Error(`cannot parse MicroTime ${time}: 400`);
    }
    if (expectedRv === undefined ? this.lease !== undefined : this.lease?.resourceVersion !== expectedRv) {
      this.conflicts++;
      throw new LeaseConflictError();
    }
    this.writes.push({ by, record: structuredClone(record) });
    this.lease = { record: structuredClone(record), resourceVersion: String(++this.#rv) };
    return structuredClone(this.lease);
  }
}

/** One replica's connection to the fake API, which a test can break. */
class FakeLeaseClient implements LeaseClient {
  /** ok; fail: every request errors (500); hang: no request is ever answered (a dead network). */
  mode: "ok" | "fail" | "hang" = "ok";
  /** Clock time each request takes to reach the API server (when a clock is given). */
  latencyMs = 0;
  abortedRequests = 0;
  readonly #api: FakeLeaseApi;
  readonly #name: string;
  readonly #clock: Clock | undefined;

  constructor(api: FakeLeaseApi, name: string, clock?: Clock) {
    this.#api = api;
    this.#name = name;
    this.#clock = clock;
  }

  async get(signal: AbortSignal): Promise<ObservedLease | undefined> {
    await this.#network(signal);
    return structuredClone(this.#api.lease);
  }

  async create(record: LeaseRecord, signal: AbortSignal): Promise<ObservedLease> {
    await this.#network(signal);
    return this.#api.write(this.#name, record, undefined);
  }

  async update(record: LeaseRecord, resourceVersion: string, signal: AbortSignal): Promise<ObservedLease> {
    await this.#network(signal);
    return this.#api.write(this.#name, record, resourceVersion);
  }

  async #network(signal: AbortSignal): Promise<void> {
    if (this.mode === "fail") throw new Error("cannot reach the API server: 500");
    if (this.mode === "hang") {
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));
    } else if (this.latencyMs > 0 && this.#clock !== undefined) {
      await this.#clock.sleep(this.latencyMs, signal);
    }
    if (signal.aborted) {
      this.abortedRequests++;
      throw new Error("aborted");
    }
  }
}

interface Period {
  from: number;
  to?: number;
}

const running: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((stop) => stop()));
});

/** Another machine's view of the same time, `skewMs` off. */
function skewed(clock: ManualClock, skewMs: number): Clock {
  return { now: () => clock.now() + skewMs, sleep: (ms, signal) => clock.sleep(ms, signal) };
}

/** A replica: its elector, its breakable client, and the periods it led (by its leadership signal). */
function contender(
  api: FakeLeaseApi,
  clock: ManualClock,
  identity: string,
  options: Partial<LeaderElectorOptions> = {},
) {
  const client = new FakeLeaseClient(api, identity, clock);
  const periods: Period[] = [];
  const stoppedWhileHolder: boolean[] = [];
  const stop = new AbortController();
  const elector = new LeaderElector({
    client,
    identity,
    leaseDurationMs: LEASE_MS,
    renewDeadlineMs: DEADLINE_MS,
    retryPeriodMs: RETRY_MS,
    clock,
    random: () => 0.5,
    logger: silentLogger(),
    onStartedLeading: (signal) => {
      const period: Period = { from: clock.now() };
      periods.push(period);
      signal.addEventListener("abort", () => (period.to = clock.now()));
    },
    onStoppedLeading: () => {
      stoppedWhileHolder.push(api.lease?.record.holderIdentity === identity);
    },
    ...options,
  });
  const done = elector.run(stop.signal);
  let stopped = false;
  const shutdown = async () => {
    if (!stopped) stop.abort();
    stopped = true;
    // A dead replica never answers; let its loop end so the test can finish.
    client.mode = "fail";
    await clock.advance(DEADLINE_MS);
    await done;
  };
  running.push(shutdown);
  return { elector, client, periods, stoppedWhileHolder, shutdown, done, stop: () => stop.abort() };
}

type Contender = ReturnType<typeof contender>;

function leaders(...cs: Contender[]): string[] {
  return cs.filter((c) => c.elector.isLeader()).map((c) => c.elector.identity);
}

/** No two replicas' leadership periods overlap. */
function expectNoOverlap(...cs: Contender[]): void {
  const all = cs.flatMap((c) => c.periods.map((p) => ({ who: c.elector.identity, ...p })));
  for (const a of all) {
    for (const b of all) {
      if (a.who === b.who) continue;
      const overlap = a.from < (b.to ?? Infinity) && b.from < (a.to ?? Infinity);
      expect(overlap, `${a.who} ${JSON.stringify(a)} overlaps ${b.who} ${JSON.stringify(b)}`).toBe(false);
    }
  }
}

function epochMs(microTime: string | undefined): number {
  return Date.parse(microTime ?? "");
}

describe("LeaderElector with two contenders", () => {
  it("elects exactly one leader; the other's create loses the race with a 409", async () => {
    const api = new FakeLeaseApi();
    const clock = new ManualClock();
    const a = contender(api, clock, "a");
    const b = contender(api, clock, "b");
    for (let t = 0; t < 60_000; t += 250) {
      await clock.advance(250);
      expect(leaders(a, b).length).toBeLessThanOrEqual(1);
    }
    expect(leaders(a, b)).toHaveLength(1);
    expect(api.lease?.record.holderIdentity).toBe(leaders(a, b)[0]);
    expect(api.conflicts).toBeGreaterThanOrEqual(1);
    expect(api.lease?.record.leaseTransitions).toBe(0);
    expectNoOverlap(a, b);
  });

  it("the other takes over after the leader dies, never while the old leader still leads", async () => {
    const api = new FakeLeaseApi();
    const clock = new ManualClock();
    const a = contender(api, clock, "a");
    await clock.advanceUntil(() => a.elector.isLeader(), 10_000);
    const b = contender(api, clock, "b");
    await clock.advance(20_000); // a renews; b watches
    expect(leaders(a, b)).toEqual(["a"]);

    a.client.mode = "hang"; // a's machine is gone: no renewal ever reaches the API server
    const lastRenewal = epochMs(api.lease?.record.renewTime);
    await clock.advanceUntil(() => b.elector.isLeader(), 60_000);

    expect(a.elector.isLeader()).toBe(false);
    expect(a.client.abortedRequests).toBeGreaterThan(0); // its hung renewal was cut at the deadline
    expectNoOverlap(a, b);
    const aLost = a.periods[0]!.to!;
    const bStarted = b.periods[0]!.from;
    expect(aLost - lastRenewal).toBeLessThanOrEqual(DEADLINE_MS);
    expect(bStarted - lastRenewal).toBeGreaterThanOrEqual(LEASE_MS); // b waited the lease out
    expect(api.lease?.record).toMatchObject({
      holderIdentity: "b",
      leaseTransitions: 1,
      leaseDurationSeconds: 15,
    });
    expect(api.lease?.record.acquireTime).toBe(toMicroTime(bStarted));
  });

  it("a replica whose clock is an hour ahead does not steal a live lease (expiry is judged locally)", async () => {
    const api = new FakeLeaseApi();
    const clock = new ManualClock();
    const a = contender(api, clock, "a");
    await clock.advanceUntil(() => a.elector.isLeader(), 10_000);
    const b = contender(api, clock, "b", { clock: skewed(clock, 3_600_000) });
    for (let t = 0; t < 60_000; t += 250) {
      await clock.advance(250);
      expect(leaders(a, b)).toEqual(["a"]);
    }
    a.client.mode = "fail";
    await clock.advanceUntil(() => b.elector.isLeader(), 60_000);
    expectNoOverlap(a, b);
  });

  it("a graceful shutdown releases the lease: the other takes over within one retry, not a lease duration", async () => {
    const api = new FakeLeaseApi();
    const clock = new ManualClock();
    const a = contender(api, clock, "a");
    await clock.advanceUntil(() => a.elector.isLeader(), 10_000);
    const b = contender(api, clock, "b");
    await clock.advance(10_000);

    a.stop();
    await clock.advance(0);
    await a.done; // stopped leading, ran onStoppedLeading, released
    expect(a.stoppedWhileHolder).toEqual([true]); // onStoppedLeading ran BEFORE the release
    expect(api.lease?.record.holderIdentity).toBeUndefined();
    expect(api.lease?.record.leaseDurationSeconds).toBe(1);
    const releasedAt = clock.now();

    await clock.advanceUntil(() => b.elector.isLeader(), 60_000);
    expect(b.periods[0]!.from - releasedAt).toBeLessThanOrEqual(RETRY_MS * (1 + 1.2));
    expect(api.lease?.record).toMatchObject({ holderIdentity: "b", leaseTransitions: 1 });
    expectNoOverlap(a, b);
  });

  it("alternates leadership through repeated deaths and recoveries, one leader at a time", async () => {
    const api = new FakeLeaseApi();
    const clock = new ManualClock();
    const a = contender(api, clock, "a");
    const b = contender(api, clock, "b");
    for (let round = 0; round < 4; round++) {
      await clock.advanceUntil(() => leaders(a, b).length === 1, 60_000);
      const leader = a.elector.isLeader() ? a : b;
      const follower = leader === a ? b : a;
      leader.client.mode = "fail";
      await clock.advanceUntil(() => follower.elector.isLeader(), 60_000, 250);
      leader.client.mode = "ok";
      expect(leaders(a, b)).toEqual([follower.elector.identity]);
    }
    expectNoOverlap(a, b);
    expect(api.lease?.record.leaseTransitions).toBe(4);
  });
});

describe("LeaderElector losing leadership", () => {
  it("renewals failing past the deadline abort the signal; leadership comes back when the API does", async () => {
    const api = new FakeLeaseApi();
    const clock = new ManualClock();
    const a = contender(api, clock, "a");
    await clock.advanceUntil(() => a.elector.isLeader(), 10_000);
    await clock.advance(7_000);
    a.client.mode = "fail";
    const lastRenewal = epochMs(api.lease?.record.renewTime);
    await clock.advanceUntil(() => !a.elector.isLeader(), 30_000, 50);

    const lostAt = a.periods[0]!.to!;
    expect(lostAt - lastRenewal).toBeLessThanOrEqual(DEADLINE_MS);
    expect(lostAt - lastRenewal).toBeGreaterThan(DEADLINE_MS - RETRY_MS); // it did retry until the deadline
    expect(a.stoppedWhileHolder).toEqual([true]); // lost, not released: the record still names it

    a.client.mode = "ok";
    await clock.advanceUntil(() => a.elector.isLeader(), 30_000);
    expect(a.periods).toHaveLength(2);
    expect(api.lease?.record.leaseTransitions).toBe(0); // it renewed its own lease
  });

  it("leads no longer than the deadline after the START of its last renewal, even when renewals are slow", async () => {
    const api = new FakeLeaseApi();
    const clock = new ManualClock();
    const a = contender(api, clock, "a");
    a.client.latencyMs = 1_500; // a read and a write: 3 s per renewal
    await clock.advanceUntil(() => a.elector.isLeader(), 10_000);
    await clock.advance(30_000);
    expect(a.periods).toHaveLength(1); // slow renewals still kept it leading

    a.client.mode = "hang";
    const lastRenewalStart = epochMs(api.lease?.record.renewTime);
    await clock.advanceUntil(() => !a.elector.isLeader(), 30_000, 50);
    // Another replica may take over LEASE_MS after it saw the write, which is after the renewal started.
    expect(a.periods[0]!.to! - lastRenewalStart).toBeLessThanOrEqual(DEADLINE_MS);
  });

  it("loses leadership at the next renewal when someone else holds the lease", async () => {
    const api = new FakeLeaseApi();
    const clock = new ManualClock();
    const a = contender(api, clock, "a");
    await clock.advanceUntil(() => a.elector.isLeader(), 10_000);
    await clock.advance(5_000);
    const now = toMicroTime(clock.now());
    api.overwrite({
      holderIdentity: "intruder",
      leaseDurationSeconds: 15,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: 1,
    });
    const overwrittenAt = clock.now();
    await clock.advanceUntil(() => !a.elector.isLeader(), 30_000, 50);
    expect(a.periods[0]!.to! - overwrittenAt).toBeLessThanOrEqual(RETRY_MS);
    expect(api.lease?.record.holderIdentity).toBe("intruder"); // a never overwrote it back
  });
});

describe("LeaderElector details", () => {
  it("writes acquireTime and renewTime as MicroTime with six decimals", async () => {
    expect(toMicroTime(Date.UTC(2026, 0, 1, 12, 30, 45, 123))).toBe("2026-01-01T12:30:45.123000Z");
    expect(toMicroTime(Date.UTC(2026, 0, 1))).toBe("2026-01-01T00:00:00.000000Z");
    const api = new FakeLeaseApi();
    const clock = new ManualClock();
    const a = contender(api, clock, "a");
    await clock.advance(10_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(api.writes.length).toBeGreaterThan(3);
    for (const { record } of api.writes) {
      expect(record.renewTime).toMatch(MICRO_TIME);
      expect(record.acquireTime).toMatch(MICRO_TIME);
    }
    // Renewals keep the acquisition time and move the renew time.
    const last = api.writes.at(-1)!.record;
    expect(last.acquireTime).toBe(api.writes[0]!.record.acquireTime);
    expect(epochMs(last.renewTime)).toBeGreaterThan(epochMs(last.acquireTime));
  });

  it("reports leadership changes through the hook", async () => {
    const api = new FakeLeaseApi();
    const clock = new ManualClock();
    const changes: boolean[] = [];
    const a = contender(api, clock, "a", { hooks: { onLeaderChange: (leading) => changes.push(leading) } });
    await clock.advanceUntil(() => a.elector.isLeader(), 10_000);
    a.stop();
    await clock.advance(0);
    await a.done;
    expect(changes).toEqual([true, false]);
  });

  const invalid = [
    {
      reason: "a lease shorter than the renew deadline lets another replica lead before this one stops",
      options: { leaseDurationMs: 10_000, renewDeadlineMs: 10_000 },
      message: /lease duration must be longer than the renew deadline/,
    },
    {
      reason: "a renew deadline within one jittered retry period leaves no room for a second attempt",
      options: { renewDeadlineMs: 2_000, retryPeriodMs: 2_000 },
      message: /renew deadline must exceed 1.2/,
    },
    {
      reason: "the Lease stores its duration in whole seconds",
      options: { leaseDurationMs: 15_500 },
      message: /whole seconds/,
    },
    {
      reason: "an elector needs an identity to write as holder",
      options: { identity: "" },
      message: /identity/,
    },
  ];
  it.each(invalid)("rejects options: $reason", ({ options, message }) => {
    expect(
      () =>
        new LeaderElector({
          client: new FakeLeaseClient(new FakeLeaseApi(), "x"),
          identity: "x",
          onStartedLeading: () => {},
          logger: silentLogger(),
          ...options,
        }),
    ).toThrow(message);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import { LeaseConflictError } from "./leader-election.ts";
import { silentLogger } from "../observability/logger.ts";
import { ManualClock } from "../testing/manual-clock.ts";
import { LeaseRing, type MemberLease, type OwnLease, type RingLeaseClient } from "./lease-ring.ts";
import { intersect, normalize, shareOf, subtract, type HashRange } from "./ring.ts";

const LEASE_MS = 15_000;
const DEADLINE_MS = 10_000;
const RETRY_MS = 2_000;

/** The ring's Leases in memory, with the API server's rules: resourceVersion-guarded writes. */
class FakeLeases {
  readonly leases = new Map<string, MemberLease>();
  #rv = 0;

  write(name: string, lease: OwnLease, expectedRv: string | undefined): MemberLease {
    const current = this.leases.get(name);
    if (expectedRv === undefined ? current !== undefined : current?.resourceVersion !== expectedRv) {
      throw new LeaseConflictError();
    }
    const written: MemberLease = {
      name,
      holder: lease.holder,
      leaseDurationSeconds: lease.leaseDurationSeconds,
      renewTime: lease.renewTime,
      ...(lease.view ? { view: [...lease.view] } : {}),
      resourceVersion: String(++this.#rv),
    };
    this.leases.set(name, written);
    return structuredClone(written);
  }
}

/** One replica's connection to the fake API, which a test can break. */
class FakeClient implements RingLeaseClient {
  mode: "ok" | "fail" = "ok";
  readonly api: FakeLeases;
  constructor(api: FakeLeases) {
    this.api = api;
  }

  async list(): Promise<MemberLease[]> {
    await this.#network();
    return structuredClone([...this.api.leases.values()]);
  }
  async create(name: string, lease: OwnLease): Promise<MemberLease> {
    await this.#network();
    return this.api.write(name, lease, undefined);
  }
  async update(name: string, lease: OwnLease, rv: string): Promise<MemberLease> {
    await this.#network();
    return this.api.write(name, lease, rv);
  }
  async delete(name: string, rv: string): Promise<void> {
    await this.#network();
    if (this.api.leases.get(name)?.resourceVersion === rv) this.api.leases.delete(name);
  }
  async #network(): Promise<void> {
    await Promise.resolve(); // an answer never comes in the same tick
    if (this.mode === "fail") throw new Error("cannot reach the API server: 500");
  }
}

interface Replica {
  name: string;
  ring: LeaseRing;
  client: FakeClient;
  /** What the replica acts on, as its onAssign/onRevoke last said; [] while it may not act. */
  acting: HashRange[];
  stop: AbortController;
  done: Promise<void>;
}

const clock = new ManualClock();
const api = new FakeLeases();
let replicas: Replica[] = [];
/** Every overlap seen between two replicas' acting ranges, checked after every step of the clock. */
let overlaps: string[] = [];

function start(name: string): Replica {
  const client = new FakeClient(api);
  const replica = { name, client, acting: [] as HashRange[], stop: new AbortController() } as Replica;
  replica.ring = new LeaseRing({
    client,
    identity: name,
    leaseName: `ring-${name}`,
    leaseDurationMs: LEASE_MS,
    renewDeadlineMs: DEADLINE_MS,
    retryPeriodMs: RETRY_MS,
    virtualNodes: 16,
    // Both take a while: a release waits for the reconciles in flight (slow: 1.5 s here), a gain for the
    // caches to relist (100 ms). Until then the old ranges hold.
    onAssign: async (ranges, signal) => {
      const releasing = subtract(replica.acting, ranges).length > 0;
      await clock.sleep(releasing ? 1_500 : 100);
      replica.acting = signal.aborted ? [] : normalize(ranges);
      checkOverlaps();
    },
    onRevoke: () => {
      replica.acting = [];
      return Promise.resolve();
    },
    logger: silentLogger(),
    clock,
  });
  replica.done = replica.ring.run(replica.stop.signal);
  replicas.push(replica);
  return replica;
}

function checkOverlaps(): void {
  for (const a of replicas) {
    for (const b of replicas) {
      if (a.name < b.name && intersect(a.acting, b.acting).length > 0) {
        overlaps.push(`${a.name} and ${b.name} at ${clock.now()}`);
      }
    }
  }
}

/** Advances the clock in small steps, checking for overlaps after each, until `condition` holds. */
async function until(condition: () => boolean, maxMs = 120_000): Promise<void> {
  await clock.advanceUntil(
    () => {
      checkOverlaps();
      return condition();
    },
    maxMs,
    250,
  );
}

const covered = (rs: Replica[]) => Math.abs(rs.reduce((sum, r) => sum + shareOf(r.acting), 0) - 1) < 1e-5;
const everyoneActs = (rs: Replica[]) => rs.every((r) => r.acting.length > 0);

afterEach(async () => {
  for (const r of replicas) r.stop.abort();
  await clock.advance(DEADLINE_MS);
  await Promise.all(replicas.map((r) => r.done));
  replicas = [];
  overlaps = [];
  api.leases.clear();
});

describe("LeaseRing", () => {
  it("splits the space among three replicas, each part to exactly one", async () => {
    const rs = ["a", "b", "c"].map(start);
    await until(() => covered(rs) && everyoneActs(rs));
    expect(overlaps).toEqual([]);
    expect(api.leases.get("ring-a")?.view).toEqual(["a", "b", "c"]);
  });

  it("hands part of everyone's share to a replica that joins, never to two at once", async () => {
    const rs = ["a", "b", "c"].map(start);
    await until(() => covered(rs) && everyoneActs(rs));
    const d = start("d");
    await until(() => covered([...rs, d]) && d.acting.length > 0);
    expect(overlaps).toEqual([]);
    for (const r of rs) expect(shareOf(r.acting)).toBeLessThan(0.6);
  });

  it("gives a stopped replica's share to the others at once: it deleted its lease", async () => {
    const rs = ["a", "b", "c"].map(start);
    await until(() => covered(rs) && everyoneActs(rs));
    const [a, b, c] = rs as [Replica, Replica, Replica];
    c.stop.abort();
    await until(() => !api.leases.has("ring-c"));
    const stoppedAt = clock.now();
    await until(() => covered([a, b]));
    expect(clock.now() - stoppedAt).toBeLessThan(3 * RETRY_MS);
    expect(overlaps).toEqual([]);
  });

  it("takes a dead replica's share only after its lease expired, and it stopped acting before that", async () => {
    const rs = ["a", "b", "c"].map(start);
    await until(() => covered(rs) && everyoneActs(rs));
    const [a, b, c] = rs as [Replica, Replica, Replica];
    const share = shareOf(c.acting);
    c.client.mode = "fail"; // c can no longer renew: to the others, its lease stops changing
    const cutAt = clock.now();
    await until(() => c.acting.length === 0);
    const cStoppedAt = clock.now();
    expect(cStoppedAt - cutAt).toBeLessThanOrEqual(DEADLINE_MS + 250);
    await until(() => covered([a, b]));
    // Nobody took c's share while c might still have been acting.
    expect(clock.now()).toBeGreaterThan(cStoppedAt);
    expect(clock.now() - cutAt).toBeGreaterThanOrEqual(LEASE_MS - RETRY_MS);
    expect(clock.now() - cutAt).toBeLessThanOrEqual(LEASE_MS + 2 * RETRY_MS + 1_000);
    expect(share).toBeGreaterThan(0);
    expect(overlaps).toEqual([]);
  });

  it("lets a replica that could not renew come back and take a share again", async () => {
    const rs = ["a", "b"].map(start);
    await until(() => covered(rs) && everyoneActs(rs));
    const [a, b] = rs as [Replica, Replica];
    b.client.mode = "fail";
    await until(() => covered([a]));
    b.client.mode = "ok";
    await until(() => covered(rs) && everyoneActs(rs));
    expect(overlaps).toEqual([]);
  });

  it("survives joins and leaves in quick succession without an overlap", async () => {
    const rs = ["a", "b", "c"].map(start);
    await clock.advance(1_000);
    const d = start("d");
    await clock.advance(3_000);
    (rs[0] as Replica).stop.abort();
    await clock.advance(500);
    const e = start("e");
    const live = [rs[1], rs[2], d, e] as Replica[];
    await until(() => covered(live) && everyoneActs(live));
    expect(overlaps).toEqual([]);
  });

  it("refuses timings that cannot be safe", () => {
    const options = {
      client: new FakeClient(api),
      identity: "x",
      leaseName: "ring-x",
      logger: silentLogger(),
    };
    const noop = async () => {};
    expect(
      () =>
        new LeaseRing({
          ...options,
          onAssign: noop,
          onRevoke: noop,
          leaseDurationMs: 5_000,
          renewDeadlineMs: 5_000,
        }),
    ).toThrow(/lease duration > renew deadline/);
    expect(
      () => new LeaseRing({ ...options, onAssign: noop, onRevoke: noop, leaseDurationMs: 15_500 }),
    ).toThrow(/whole seconds/);
    expect(() => new LeaseRing({ ...options, identity: "", onAssign: noop, onRevoke: noop })).toThrow(
      /identity/,
    );
  });
});

import { describe, expect, it } from "vitest";
import {
  DEFAULT_OUTAGE_BASE_MS,
  DEFAULT_OUTAGE_MAX_MS,
  RateLimiter,
  serviceSignalOf,
  type HoldReason,
  type RateLimiterOptions,
} from "./rate-limiter.ts";
import { ManualClock } from "../testing/manual-clock.ts";

/** A limiter on a manual clock, recording when (ms after the start) each call got its token, and every hold. */
function harness(options: Omit<RateLimiterOptions, "clock" | "hooks">) {
  const clock = new ManualClock();
  const t0 = clock.now();
  const waits: number[] = [];
  const holds: Array<[HoldReason, number]> = [];
  const limiter = new RateLimiter({
    ...options,
    clock,
    hooks: { onWait: (ms) => waits.push(ms), onHold: (reason, ms) => holds.push([reason, ms]) },
  });
  const granted: Array<{ call: string; at: number }> = [];
  const outcomes = new Map<string, unknown>();
  /** Starts a call named `call`: it records its grant time, or its rejection. */
  const call = (name: string, signal?: AbortSignal) => {
    limiter.acquire(signal).then(
      () => granted.push({ call: name, at: clock.now() - t0 }),
      (reason: unknown) => outcomes.set(name, reason),
    );
  };
  const at = (ms: number) => clock.advance(t0 + ms - clock.now());
  return { clock, t0, limiter, call, granted, outcomes, waits, holds, at };
}

describe("RateLimiter: the token bucket", () => {
  it.each([
    {
      reason: "a burst goes at once, then one per 1/qps",
      qps: 10,
      burst: 3,
      calls: 6,
      want: [0, 0, 0, 100, 200, 300],
    },
    { reason: "a burst of one spaces every call", qps: 4, burst: 1, calls: 3, want: [0, 250, 500] },
    { reason: "fewer calls than the burst never wait", qps: 1, burst: 5, calls: 5, want: [0, 0, 0, 0, 0] },
    {
      reason: "a fractional rate works (one call per 2 s)",
      qps: 0.5,
      burst: 1,
      calls: 3,
      want: [0, 2_000, 4_000],
    },
  ])("$reason", async ({ qps, burst, calls, want }) => {
    const h = harness({ qps, burst });
    for (let i = 0; i < calls; i++) h.call(`c${i}`);
    await h.at(10_000);
    expect(h.granted.map((g) => g.at)).toEqual(want);
    expect(h.waits).toEqual(want); // all asked at 0
  });

  it("costs nothing when there is room: the token is taken synchronously, no timer", async () => {
    const h = harness({ qps: 1, burst: 2 });
    const acquired = h.limiter.acquire();
    let done = false;
    void acquired.then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(true);
    expect(h.limiter.waiting).toBe(0);
  });

  it("refills while idle, up to the burst and no more", async () => {
    const h = harness({ qps: 10, burst: 2 });
    h.call("a");
    h.call("b");
    await h.at(60_000); // an hour of tokens would be 600: the bucket holds 2
    for (const name of ["c", "d", "e"]) h.call(name);
    await h.at(60_200);
    expect(h.granted.map((g) => `${g.call}@${g.at}`)).toEqual([
      "a@0",
      "b@0",
      "c@60000",
      "d@60000",
      "e@60100",
    ]);
  });

  it("serves waiters first come, first served: a later caller never overtakes", async () => {
    const h = harness({ qps: 10, burst: 1 });
    h.call("first"); // takes the only token
    h.call("second");
    await h.at(50);
    h.call("third"); // asks while "second" waits: it queues behind it
    await h.at(1_000);
    expect(h.granted.map((g) => `${g.call}@${g.at}`)).toEqual(["first@0", "second@100", "third@200"]);
  });

  it.each([
    { reason: "bad qps", options: { qps: 0, burst: 1 }, message: /cannot limit calls to 0 per second/ },
    { reason: "negative qps", options: { qps: -1, burst: 1 }, message: /cannot limit calls/ },
    { reason: "a zero burst", options: { qps: 1, burst: 0 }, message: /cannot use a burst of 0/ },
    { reason: "a fractional burst", options: { qps: 1, burst: 1.5 }, message: /cannot use a burst/ },
  ])("rejects $reason", ({ options, message }) => {
    expect(() => new RateLimiter(options)).toThrow(message);
  });
});

describe("RateLimiter: aborting a wait", () => {
  it("rejects a waiter with its signal's reason, frees its place, and spends no token", async () => {
    const h = harness({ qps: 10, burst: 1 });
    const leadership = new AbortController();
    h.call("a");
    h.call("b", leadership.signal);
    h.call("c");
    await h.at(50);
    const reason = new Error("leadership lost");
    leadership.abort(reason);
    await h.at(1_000);
    expect(h.outcomes.get("b")).toBe(reason);
    // c takes the token b would have had: at 100, not 200.
    expect(h.granted.map((g) => `${g.call}@${g.at}`)).toEqual(["a@0", "c@100"]);
    expect(h.limiter.waiting).toBe(0);
  });

  it("rejects at once, without a token, when the signal has already aborted", async () => {
    const h = harness({ qps: 10, burst: 1 });
    h.call("dead", AbortSignal.abort(new Error("stopping")));
    h.call("alive");
    await h.at(0);
    expect((h.outcomes.get("dead") as Error).message).toBe("stopping");
    expect(h.granted).toEqual([{ call: "alive", at: 0 }]);
  });

  it("a shutdown during a long hold does not hang", async () => {
    const h = harness({ qps: 10, burst: 10 });
    h.limiter.holdUntil(h.t0 + 3_600_000);
    const stop = new AbortController();
    h.call("a", stop.signal);
    await h.at(1_000);
    stop.abort(new Error("shutting down"));
    await h.at(1_000);
    expect((h.outcomes.get("a") as Error).message).toBe("shutting down");
  });
});

describe("RateLimiter: holds", () => {
  it("holdUntil keeps every call until the deadline, though tokens are there, then serves them in order", async () => {
    const h = harness({ qps: 100, burst: 10 });
    h.limiter.holdUntil(h.t0 + 2_000);
    h.call("a");
    h.call("b");
    await h.at(1_999);
    expect(h.granted).toEqual([]);
    await h.at(2_000);
    expect(h.granted.map((g) => `${g.call}@${g.at}`)).toEqual(["a@2000", "b@2000"]);
    expect(h.holds).toEqual([["retry-after", 2_000]]);
  });

  it.each([
    { reason: "a later deadline extends the hold", first: 1_000, second: 3_000, want: 3_000, held: 3_000 },
    {
      reason: "an earlier deadline does not shorten it",
      first: 3_000,
      second: 1_000,
      want: 3_000,
      held: 3_000,
    },
  ])("$reason", async ({ first, second, want, held }) => {
    const h = harness({ qps: 100, burst: 10 });
    h.limiter.holdUntil(h.t0 + first);
    h.limiter.holdUntil(h.t0 + second);
    h.call("a");
    await h.at(10_000);
    expect(h.granted).toEqual([{ call: "a", at: want }]);
    expect(h.holds.reduce((sum, [, ms]) => sum + ms, 0)).toBe(held);
  });

  it("a hold in the past holds nothing", async () => {
    const h = harness({ qps: 100, burst: 10 });
    await h.at(5_000);
    h.limiter.holdUntil(h.t0 + 1_000);
    h.call("a");
    await h.at(5_000);
    expect(h.granted).toEqual([{ call: "a", at: 5_000 }]);
    expect(h.holds).toEqual([]);
  });

  it("a hold that starts while a caller waits for a token holds it too", async () => {
    const h = harness({ qps: 1, burst: 1 });
    h.call("a");
    h.call("b"); // due at 1000
    await h.at(500);
    h.limiter.report(429, 2_000); // held until 2500
    await h.at(10_000);
    expect(h.granted.map((g) => `${g.call}@${g.at}`)).toEqual(["a@0", "b@2500"]);
  });
});

describe("RateLimiter: what an answer says about the service", () => {
  it.each([
    { reason: "429 with Retry-After: the server said when", status: 429, retryAfterMs: 2_000, want: "hold" },
    { reason: "503 with Retry-After: the server said when", status: 503, retryAfterMs: 1_000, want: "hold" },
    { reason: "429 without Retry-After: overloaded, no word on how long", status: 429, want: "unwell" },
    { reason: "429 with Retry-After 0: no word on how long", status: 429, retryAfterMs: 0, want: "unwell" },
    { reason: "503 without Retry-After: down", status: 503, want: "unwell" },
    { reason: "502 from a gateway", status: 502, want: "unwell" },
    { reason: "504 from a gateway", status: 504, want: "unwell" },
    { reason: "no answer at all (network error, timeout)", status: 0, want: "unwell" },
    { reason: "a 500 is one request's failure", status: 500, want: "neutral" },
    { reason: "a 501 is one request's failure", status: 501, want: "neutral" },
    { reason: "a success", status: 200, want: "healthy" },
    { reason: "a 204", status: 204, want: "healthy" },
    { reason: "404: about one object, the service answered", status: 404, want: "healthy" },
    { reason: "409: about one name, the service answered", status: 409, want: "healthy" },
    { reason: "412: about one revision, the service answered", status: 412, want: "healthy" },
    { reason: "a Retry-After on a 404 means nothing", status: 404, retryAfterMs: 5_000, want: "healthy" },
  ])("$reason → $want", ({ status, retryAfterMs, want }) => {
    expect(serviceSignalOf(status, retryAfterMs)).toBe(want);
  });
});

describe("RateLimiter: the outage backoff", () => {
  /** Reports `statuses` one per step of `stepMs`, and returns the holds they caused. */
  async function reportEach(statuses: number[], stepMs: number) {
    const h = harness({ qps: 100, burst: 10, outageBaseMs: 100, outageMaxMs: 1_000 });
    for (const [i, status] of statuses.entries()) {
      await h.at(i * stepMs);
      h.limiter.report(status);
    }
    return h.holds;
  }

  it.each([
    {
      reason: "consecutive unwell answers double the hold, up to the cap",
      statuses: [503, 502, 0, 504, 503, 503],
      want: [100, 200, 400, 800, 1_000, 1_000],
    },
    {
      reason: "a success resets the doubling",
      statuses: [503, 503, 200, 503, 503],
      want: [100, 200, 100, 200],
    },
    {
      reason: "a 404 resets it too: the service answered",
      statuses: [503, 503, 404, 503],
      want: [100, 200, 100],
    },
    {
      reason: "a 500 neither holds nor resets",
      statuses: [503, 503, 500, 503],
      want: [100, 200, 400],
    },
    { reason: "a 412 or 409 never holds", statuses: [412, 409, 404], want: [] },
  ])("$reason", async ({ statuses, want }) => {
    // 5 s apart: every hold has run out before the next answer.
    const holds = await reportEach(statuses, 5_000);
    expect(holds).toEqual(want.map((ms) => ["outage", ms]));
  });

  it("answers arriving during an outage hold were for calls sent before it: they do not double it", async () => {
    const h = harness({ qps: 100, burst: 10, outageBaseMs: 100, outageMaxMs: 10_000 });
    h.limiter.report(503); // hold until 100
    await h.at(10);
    h.limiter.report(503); // sent before the hold: ignored
    h.limiter.report(0);
    await h.at(100);
    h.limiter.report(503); // the first call after the hold: doubles
    expect(h.holds).toEqual([
      ["outage", 100],
      ["outage", 200],
    ]);
  });

  it("holds every call, whoever asks, until the backoff step has passed", async () => {
    const h = harness({ qps: 100, burst: 10 });
    h.limiter.report(0);
    h.call("other-key");
    await h.at(DEFAULT_OUTAGE_BASE_MS - 1);
    expect(h.granted).toEqual([]);
    await h.at(DEFAULT_OUTAGE_BASE_MS);
    expect(h.granted).toEqual([{ call: "other-key", at: DEFAULT_OUTAGE_BASE_MS }]);
  });

  it("defaults to 100 ms doubling to 10 s", async () => {
    const h = harness({ qps: 100, burst: 10 });
    for (let i = 0; i < 12; i++) {
      await h.at(i * 20_000);
      h.limiter.report(503);
    }
    expect(h.holds.map(([, ms]) => ms)).toEqual([
      100, 200, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000, 10_000, 10_000, 10_000,
    ]);
    expect(DEFAULT_OUTAGE_MAX_MS).toBe(10_000);
  });

  it("a Retry-After hold and an outage hold add up to the time held, each counted once", async () => {
    const h = harness({ qps: 100, burst: 10 });
    h.limiter.report(429, 1_000); // held until 1000
    h.limiter.report(0); // outage until 100: inside the Retry-After, adds nothing
    await h.at(1_000);
    h.limiter.report(503, 500); // held until 1500
    h.call("a");
    await h.at(5_000);
    expect(h.holds).toEqual([
      ["retry-after", 1_000],
      ["retry-after", 500],
    ]);
    expect(h.granted).toEqual([{ call: "a", at: 1_500 }]);
  });
});

import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_BASE_DELAY_MS, DEFAULT_MAX_DELAY_MS, ExponentialBackoff, WorkQueue } from "./queue.ts";

/** Waits until `assertion` passes; the deadline is generous because the machine may be busy. */
function eventually(assertion: () => void): Promise<void> {
  return vi.waitFor(assertion, { timeout: 10_000, interval: 5 });
}

/**
 * A process function whose runs end only when the test says so, recording what ran, in what order,
 * how many ran at once, and whether two runs of the same key ever overlapped.
 */
class GatedRuns {
  readonly started: string[] = [];
  readonly #pending: Array<{ key: string; finish: () => void }> = [];
  readonly #active = new Map<string, number>();
  running = 0;
  maxRunning = 0;
  overlaps = 0;

  readonly process = async (key: string): Promise<void> => {
    const active = (this.#active.get(key) ?? 0) + 1;
    this.#active.set(key, active);
    if (active > 1) this.overlaps++;
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    this.started.push(key);
    const done = Promise.withResolvers<void>();
    this.#pending.push({ key, finish: done.resolve });
    await done.promise;
    this.running--;
    this.#active.set(key, active - 1);
  };

  /** Ends the oldest running run of `key`. */
  finish(key: string): void {
    const index = this.#pending.findIndex((run) => run.key === key);
    if (index < 0) throw new Error(`no run of ${key} is in progress`);
    this.#pending.splice(index, 1)[0]?.finish();
  }
}

/** Waits until the queue has nothing waiting and nothing running. */
async function idle(queue: WorkQueue): Promise<void> {
  await eventually(() => expect(queue.depth + queue.inFlight).toBe(0));
}

afterEach(() => {
  vi.useRealTimers();
});

describe("ExponentialBackoff", () => {
  it.each([
    { reason: "the first failure waits the base", base: 5, max: 1000, failures: 1, want: 5 },
    { reason: "each failure doubles the delay", base: 5, max: 1000, failures: 4, want: 40 },
    { reason: "the delay never exceeds the cap", base: 5, max: 100, failures: 10, want: 100 },
    { reason: "a cap below a doubling is reached exactly", base: 100, max: 250, failures: 3, want: 250 },
    { reason: "hundreds of failures do not overflow", base: 100, max: 60_000, failures: 2000, want: 60_000 },
    {
      reason: "defaults are 100 ms doubling",
      base: undefined,
      max: undefined,
      failures: 2,
      want: 2 * DEFAULT_BASE_DELAY_MS,
    },
  ])("$reason", ({ base, max, failures, want }) => {
    const backoff = new ExponentialBackoff(base, max);
    let delay = 0;
    for (let i = 0; i < failures; i++) delay = backoff.next("k");
    expect(delay).toBe(want);
    expect(backoff.failures("k")).toBe(failures);
  });

  it("forget resets one key and leaves the others alone", () => {
    const backoff = new ExponentialBackoff(10, 1000);
    backoff.next("a");
    backoff.next("a");
    backoff.next("b");
    backoff.forget("a");
    expect(backoff.next("a")).toBe(10);
    expect(backoff.next("b")).toBe(20);
  });

  it.each([
    { reason: "a zero base would retry in a hot loop", base: 0, max: 10 },
    { reason: "a cap below the base is a typo", base: 100, max: 10 },
  ])("rejects bad settings: $reason", ({ base, max }) => {
    expect(() => new ExponentialBackoff(base, max)).toThrow(/^cannot /);
  });

  it("defaults to a 60 s cap", () => {
    const backoff = new ExponentialBackoff();
    for (let i = 0; i < 30; i++) backoff.next("k");
    expect(backoff.next("k")).toBe(DEFAULT_MAX_DELAY_MS);
  });
});

describe("WorkQueue dedup", () => {
  it.each([
    { reason: "a key added three times while waiting runs once", adds: ["a", "a", "a"], want: ["a"] },
    {
      reason: "different keys each run, first added first",
      adds: ["a", "b", "a", "c", "b"],
      want: ["a", "b", "c"],
    },
    { reason: "nothing added, nothing run", adds: [], want: [] },
  ])("$reason", async ({ adds, want }) => {
    const runs: string[] = [];
    const queue = new WorkQueue(
      (key) => {
        runs.push(key);
        return Promise.resolve();
      },
      { autoStart: false },
    );
    for (const key of adds) queue.add(key);
    expect(queue.depth).toBe(want.length);
    queue.resume();
    await idle(queue);
    expect(runs).toEqual(want);
  });
});

describe("WorkQueue isWaiting", () => {
  it("says whether a run of the key waits to start: once added, until it ran", async () => {
    const queue = new WorkQueue(() => Promise.resolve(), { autoStart: false });
    queue.add("a");
    expect([queue.isWaiting("a"), queue.isWaiting("b")]).toEqual([true, false]);
    queue.resume();
    await idle(queue);
    expect(queue.isWaiting("a")).toBe(false);
  });
});

describe("WorkQueue workers", () => {
  it("never runs the same key twice at once; an add during a run means one more run after it", async () => {
    const runs = new GatedRuns();
    const queue = new WorkQueue(runs.process, { concurrency: 4 });
    queue.add("a");
    await eventually(() => expect(runs.started).toEqual(["a"]));

    for (let i = 0; i < 3; i++) queue.add("a"); // all folded into one more run
    queue.add("b");
    await eventually(() => expect(runs.started).toEqual(["a", "b"]));
    expect(queue.depth).toBe(0); // a dirty in-flight key is not "waiting for a worker"

    runs.finish("a");
    await eventually(() => expect(runs.started).toEqual(["a", "b", "a"]));
    runs.finish("a");
    runs.finish("b");
    await idle(queue);
    expect(runs.started).toEqual(["a", "b", "a"]);
    expect(runs.overlaps).toBe(0);
  });

  it("runs N different keys in parallel and no more", async () => {
    const runs = new GatedRuns();
    const queue = new WorkQueue(runs.process, { concurrency: 3 });
    for (const key of ["a", "b", "c", "d", "e"]) queue.add(key);
    await eventually(() => expect(runs.running).toBe(3));
    expect(runs.started).toEqual(["a", "b", "c"]);
    expect(queue.depth).toBe(2);

    runs.finish("b");
    await eventually(() => expect(runs.started).toEqual(["a", "b", "c", "d"]));
    for (const key of ["a", "c", "d"]) runs.finish(key);
    await eventually(() => expect(runs.started).toHaveLength(5));
    runs.finish("e");
    await idle(queue);
    expect(runs.maxRunning).toBe(3);
  });

  it("under a storm of adds: no overlap per key, and every add is followed by a run", async () => {
    const keys = ["a", "b", "c"];
    const active = new Map<string, number>();
    const lastAdd = new Map<string, number>();
    const lastStart = new Map<string, number>();
    let clock = 0;
    let overlaps = 0;
    const queue = new WorkQueue(
      async (key) => {
        lastStart.set(key, ++clock);
        const n = (active.get(key) ?? 0) + 1;
        active.set(key, n);
        if (n > 1) overlaps++;
        for (let i = 0; i < (clock % 5) + 1; i++) await new Promise((r) => setImmediate(r));
        active.set(key, n - 1);
      },
      { concurrency: 8 },
    );
    for (let i = 0; i < 300; i++) {
      const key = keys[i % keys.length] ?? "a";
      lastAdd.set(key, ++clock);
      queue.add(key);
      if (i % 7 === 0) await new Promise((r) => setImmediate(r));
    }
    await idle(queue);
    expect(overlaps).toBe(0);
    for (const key of keys) expect(lastStart.get(key)).toBeGreaterThan(lastAdd.get(key) ?? Infinity);
  });

  it("retries with backoff when the process function throws", async () => {
    vi.useFakeTimers();
    let calls = 0;
    const queue = new WorkQueue(
      () => {
        calls++;
        return calls === 1 ? Promise.reject(new Error("boom")) : Promise.resolve();
      },
      { baseDelayMs: 100 },
    );
    queue.add("a");
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toBe(1);
    expect(queue.failures("a")).toBe(1);
    await vi.advanceTimersByTimeAsync(99);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
  });
});

describe("WorkQueue delays", () => {
  /** A queue over fake timers that records the fake time at which each key runs. */
  function timedQueue(options: { baseDelayMs?: number; maxDelayMs?: number } = {}) {
    vi.useFakeTimers();
    const runsAt: number[] = [];
    const queue = new WorkQueue(
      () => {
        runsAt.push(Date.now());
        return Promise.resolve();
      },
      {
        ...options,
        now: () => Date.now(),
      },
    );
    return { queue, runsAt, t0: Date.now() };
  }

  it("backoff grows per failure and stops at the cap", async () => {
    const { queue, runsAt, t0 } = timedQueue({ baseDelayMs: 100, maxDelayMs: 500 });
    const chosen: number[] = [];
    for (let i = 0; i < 5; i++) {
      const before = Date.now();
      chosen.push(queue.addRateLimited("a"));
      await vi.advanceTimersByTimeAsync(chosen[i]! - 1);
      expect(runsAt, `failure ${i + 1} must not retry early`).toHaveLength(i);
      await vi.advanceTimersByTimeAsync(1);
      expect(runsAt[i]! - before).toBe(chosen[i]);
    }
    expect(chosen).toEqual([100, 200, 400, 500, 500]);
    expect(runsAt.at(-1)! - t0).toBe(1700);
  });

  it.each([
    { reason: "no Retry-After: the backoff decides", failuresBefore: 0, retryAfterMs: undefined, want: 100 },
    {
      reason: "a Retry-After longer than the backoff wins",
      failuresBefore: 0,
      retryAfterMs: 5000,
      want: 5000,
    },
    { reason: "a backoff longer than the Retry-After wins", failuresBefore: 3, retryAfterMs: 300, want: 800 },
    {
      reason: "a Retry-After beyond the backoff cap still wins",
      failuresBefore: 20,
      retryAfterMs: 120_000,
      want: 120_000,
    },
  ])("addRateLimited: $reason", async ({ failuresBefore, retryAfterMs, want }) => {
    const { queue, runsAt, t0 } = timedQueue({ baseDelayMs: 100, maxDelayMs: 60_000 });
    for (let i = 0; i < failuresBefore; i++) queue.addRateLimited("a");
    await vi.advanceTimersByTimeAsync(DEFAULT_MAX_DELAY_MS * 10); // let those earlier retries run
    runsAt.length = 0;
    const start = Date.now();
    expect(queue.addRateLimited("a", retryAfterMs)).toBe(want);
    await vi.advanceTimersByTimeAsync(want - 1);
    expect(runsAt).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(runsAt).toEqual([start + want]);
    expect(start).toBeGreaterThanOrEqual(t0);
  });

  it.each([
    { reason: "an earlier pending delay wins over a later one", first: 1000, second: 5000, want: [1000] },
    { reason: "a later delay does not postpone an earlier one", first: 5000, second: 1000, want: [1000] },
    { reason: "a zero delay adds at once, beside a pending delay", first: 0, second: 1000, want: [0, 1000] },
  ])("addAfter: $reason", async ({ first, second, want }) => {
    const { queue, runsAt, t0 } = timedQueue();
    queue.addAfter("a", first);
    queue.addAfter("a", second);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(runsAt.map((t) => t - t0)).toEqual(want);
    expect(queue.delayed).toBe(0);
  });

  it.each([
    {
      reason: "pure retries: the time bound never bites, the delay doubles",
      failAt: [0, 100, 300, 700],
      want: [100, 200, 400, 800],
    },
    {
      reason: "events bring the key back between retries: the delay stays within twice the time failing",
      failAt: [0, 10, 20, 30, 40, 50, 60],
      want: [100, 100, 100, 100, 100, 100, 120],
    },
    {
      reason: "a key failing for long reaches the full backoff",
      failAt: [0, 10, 20, 5_000],
      want: [100, 100, 100, 800],
    },
  ])("addRateLimited bounds the backoff by time: $reason", async ({ failAt, want }) => {
    const { queue, t0 } = timedQueue({ baseDelayMs: 100, maxDelayMs: 60_000 });
    const chosen: number[] = [];
    for (const at of failAt) {
      await vi.advanceTimersByTimeAsync(t0 + at - Date.now());
      chosen.push(queue.addRateLimited("a"));
    }
    expect(chosen).toEqual(want);
  });

  it.each([
    { reason: "an event during the Retry-After waits for it", addAt: 500, want: [2000] },
    { reason: "an event after the Retry-After runs at once", addAt: 2500, want: [2000, 2500] },
  ])("a Retry-After holds every add: $reason", async ({ addAt, want }) => {
    const { queue, runsAt, t0 } = timedQueue({ baseDelayMs: 100 });
    queue.addRateLimited("a", 2000);
    await vi.advanceTimersByTimeAsync(addAt);
    queue.add("a");
    await vi.advanceTimersByTimeAsync(10_000);
    expect(runsAt.map((t) => t - t0)).toEqual(want);
  });

  it("a Retry-After holds the rerun of a key added while it ran", async () => {
    vi.useFakeTimers();
    const t0 = Date.now();
    const runsAt: number[] = [];
    const queue: WorkQueue<string> = new WorkQueue<string>(
      (key) => {
        runsAt.push(Date.now() - t0);
        if (runsAt.length === 1) {
          queue.add(key); // its own write echoes back while it runs
          queue.addRateLimited(key, 2000); // and it ends with a 429
        }
        return Promise.resolve();
      },
      { now: () => Date.now() },
    );
    queue.add("a");
    await vi.advanceTimersByTimeAsync(10_000);
    expect(runsAt).toEqual([0, 2000]);
  });

  it("forget lifts a Retry-After hold", async () => {
    const { queue, runsAt, t0 } = timedQueue({ baseDelayMs: 100 });
    queue.addRateLimited("a", 2000);
    queue.forget("a");
    await vi.advanceTimersByTimeAsync(100);
    queue.add("a");
    await vi.advanceTimersByTimeAsync(0);
    expect(runsAt.map((t) => t - t0)).toEqual([100]);
  });

  it("forget resets the backoff of a key", () => {
    const { queue } = timedQueue({ baseDelayMs: 100 });
    queue.addRateLimited("a");
    queue.addRateLimited("a");
    expect(queue.failures("a")).toBe(2);
    queue.forget("a");
    expect(queue.failures("a")).toBe(0);
    expect(queue.addRateLimited("a")).toBe(100);
  });

  it("reports depth and wait time to its hooks", async () => {
    vi.useFakeTimers();
    const depths: number[] = [];
    const waits: number[] = [];
    const queue = new WorkQueue(async () => {}, {
      autoStart: false,
      now: () => Date.now(),
      onDepth: (d) => depths.push(d),
      onWait: (w) => waits.push(w),
    });
    queue.add("a");
    await vi.advanceTimersByTimeAsync(250);
    queue.add("b");
    queue.add("a");
    await vi.advanceTimersByTimeAsync(50);
    queue.resume();
    await vi.advanceTimersByTimeAsync(0);
    expect(depths).toEqual([1, 2, 1, 0]);
    expect(waits).toEqual([300, 50]); // from the FIRST add of each key
  });
});

describe("WorkQueue shutdown", () => {
  it("refuses new work, clears timers, and drain waits for the run in flight", async () => {
    const runs = new GatedRuns();
    const queue = new WorkQueue(runs.process, { concurrency: 1 });
    queue.add("a");
    queue.add("b");
    queue.addAfter("c", 60_000);
    await eventually(() => expect(runs.started).toEqual(["a"]));

    queue.shutDown();
    expect(queue.depth).toBe(0);
    expect(queue.delayed).toBe(0);
    queue.add("d");
    queue.addAfter("e", 10);
    queue.resume();

    let drained = false;
    const drain = queue.drain().then(() => (drained = true));
    await new Promise((r) => setImmediate(r));
    expect(drained).toBe(false);
    runs.finish("a");
    await drain;
    expect(queue.inFlight).toBe(0);
    expect(runs.started).toEqual(["a"]); // b was dropped, d and e refused
  });

  it("pause stops handing out keys; resume hands them out again", async () => {
    const runs = new GatedRuns();
    const queue = new WorkQueue(runs.process, { concurrency: 2 });
    queue.add("a");
    await eventually(() => expect(runs.started).toEqual(["a"]));
    queue.pause();
    queue.add("b");
    runs.finish("a");
    await queue.drain();
    expect(runs.started).toEqual(["a"]);
    expect(queue.depth).toBe(1);
    queue.resume();
    await eventually(() => expect(runs.started).toEqual(["a", "b"]));
    runs.finish("b");
    await idle(queue);
  });

  it("its delay timers do not keep the process alive", () => {
    const queueUrl = new URL("./queue.ts", import.meta.url).href;
    const script = `
      import { WorkQueue } from ${JSON.stringify(queueUrl)};
      const queue = new WorkQueue(async () => {});
      queue.addAfter("a", 3_600_000);
      queue.addRateLimited("b", 3_600_000);
      console.log("delayed", queue.delayed);
    `;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], {
      cwd: fileURLToPath(new URL(".", import.meta.url)),
      timeout: 20_000,
      encoding: "utf8",
    });
    expect(out.trim()).toBe("delayed 2");
  });
});

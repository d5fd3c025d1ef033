import { afterEach, describe, expect, it, vi } from "vitest";
import { Controller } from "../queue/controller.ts";
import { silentLogger } from "../observability/logger.ts";
import { initialSync, startPeriodicResync } from "./resync.ts";
import { done, failed, type ReconcileResult } from "../queue/result.ts";

/** Waits until `assertion` passes; the deadline is generous because the machine may be busy. */
function eventually(assertion: () => void): Promise<void> {
  return vi.waitFor(assertion, { timeout: 10_000, interval: 5 });
}

/** A started controller whose reconciles of each key end only when the test releases them. */
function gatedController() {
  const started: string[] = [];
  const releases = new Map<string, (result: ReconcileResult) => void>();
  const controller = new Controller({
    name: "resync",
    workers: 3,
    logger: silentLogger(),
    reconciler: {
      reconcile(key) {
        started.push(key);
        const { promise, resolve } = Promise.withResolvers<ReconcileResult>();
        releases.set(key, resolve);
        return promise;
      },
    },
  });
  const release = (key: string, result: ReconcileResult = done()) => {
    const resolve = releases.get(key);
    if (resolve === undefined) throw new Error(`${key} is not being reconciled`);
    releases.delete(key);
    resolve(result);
  };
  return { controller, started, release };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("initialSync", () => {
  it("enqueues every listed key and resolves only after each was reconciled once", async () => {
    const { controller, started, release } = gatedController();
    controller.start();
    let synced: number | undefined;
    const sync = initialSync(controller, () => Promise.resolve(["a", "b", "a", "c"])).then(
      (n) => (synced = n),
    );

    await eventually(() => expect([...started].sort()).toEqual(["a", "b", "c"]));
    release("a");
    release("b", failed(new Error("cloud down"))); // any finished reconcile counts: readiness must not hang on one object
    await new Promise((r) => setImmediate(r));
    expect(synced).toBeUndefined(); // c is still running
    release("c");
    await sync;
    expect(synced).toBe(3);
    await controller.shutDown();
  });

  it("waits for a stopped controller to be started", async () => {
    const { controller, started, release } = gatedController();
    let synced = false;
    const sync = initialSync(controller, () => ["a"]).then(() => (synced = true));
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([]);
    expect(synced).toBe(false);
    controller.start();
    await eventually(() => expect(started).toEqual(["a"]));
    release("a");
    await sync;
    expect(synced).toBe(true);
    await controller.shutDown();
  });

  it.each([
    { reason: "nothing to sync is synced at once", keys: [], want: 0 },
    { reason: "duplicates count once", keys: ["x", "x"], want: 1 },
  ])("$reason", async ({ keys, want }) => {
    const controller = new Controller({
      name: "c",
      reconciler: { reconcile: () => Promise.resolve(done()) },
      logger: silentLogger(),
    });
    controller.start();
    expect(await initialSync(controller, () => keys)).toBe(want);
    await controller.shutDown();
  });

  it("rejects when stopped before every key was reconciled", async () => {
    const { controller } = gatedController();
    const abort = new AbortController();
    const sync = initialSync(controller, () => ["a"], abort.signal);
    abort.abort();
    await expect(sync).rejects.toThrow(/^cannot finish the initial sync/);
  });

  it("rejects with the listing's error when listing fails", async () => {
    const { controller } = gatedController();
    await expect(
      initialSync(controller, () => Promise.reject(new Error("cannot list shapes: 503"))),
    ).rejects.toThrow("cannot list shapes: 503");
  });
});

describe("startPeriodicResync", () => {
  it.each([
    { reason: "random 0: exactly the period", random: 0, jitter: 0.2, wantMs: 1000 },
    { reason: "random 0.5 with 20% jitter: 10% later", random: 0.5, jitter: 0.2, wantMs: 1100 },
    { reason: "jitter 0 ignores random", random: 0.9, jitter: 0, wantMs: 1000 },
  ])("fires after period × (1 + jitter × random): $reason", async ({ random, jitter, wantMs }) => {
    vi.useFakeTimers();
    const enqueued: string[] = [];
    const resync = startPeriodicResync({
      target: { enqueue: (key: string) => enqueued.push(key) },
      listKeys: () => ["a", "b"],
      periodMs: 1000,
      jitter,
      random: () => random,
      logger: silentLogger(),
    });
    await vi.advanceTimersByTimeAsync(wantMs - 1);
    expect(enqueued).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(enqueued).toEqual(["a", "b"]);
    resync.stop();
  });

  it("draws a new jitter each period, keeps going after a failed listing, and stops for good", async () => {
    vi.useFakeTimers();
    const randoms = [0, 1, 0.5, 0];
    const enqueued: number[] = [];
    let listings = 0;
    const resync = startPeriodicResync({
      target: { enqueue: () => enqueued.push(Date.now()) },
      listKeys: () => {
        listings++;
        return listings === 2
          ? Promise.reject(new Error("cannot list: API server down"))
          : Promise.resolve(["k"]);
      },
      periodMs: 1000,
      jitter: 0.5,
      random: () => randoms.shift() ?? 0,
      logger: silentLogger(),
    });
    const t0 = Date.now();
    await vi.advanceTimersByTimeAsync(1000 + 1500 + 1250);
    expect(listings).toBe(3);
    expect(enqueued.map((t) => t - t0)).toEqual([1000, 3750]); // the second listing failed
    resync.stop();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(listings).toBe(3);
  });

  it("does not enqueue a listing that ends after stop", async () => {
    vi.useFakeTimers();
    const listing = Promise.withResolvers<string[]>();
    const enqueued: string[] = [];
    const resync = startPeriodicResync({
      target: { enqueue: (key: string) => enqueued.push(key) },
      listKeys: () => listing.promise,
      periodMs: 1000,
      random: () => 0,
      logger: silentLogger(),
    });
    await vi.advanceTimersByTimeAsync(1000);
    resync.stop();
    listing.resolve(["a"]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(enqueued).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it.each([
    { reason: "a zero period would spin", periodMs: 0, jitter: 0.1 },
    { reason: "a negative jitter could shorten the period to nothing", periodMs: 1000, jitter: -1 },
  ])("rejects bad settings: $reason", ({ periodMs, jitter }) => {
    expect(() =>
      startPeriodicResync({
        target: { enqueue: () => {} },
        listKeys: () => [],
        periodMs,
        jitter,
        logger: silentLogger(),
      }),
    ).toThrow(/^cannot /);
  });
  /**
   * A target whose reconciles are reported by hand: `finish(key, result)` is the controller saying a reconcile
   * of `key` ended. Two periods of 1 s; what each one enqueued.
   */
  it.each([
    {
      reason: "an event's done reconcile since the last resync: left out of the next one only",
      between: [[["a", done()]], []] as [string, ReconcileResult][][],
      want: [["a", "b"], ["b"], ["a", "b"]],
    },
    {
      reason: "the resync's own reconcile settles nothing: every key again next period (a steady state)",
      between: [
        [
          ["a", done()],
          ["b", done()],
        ],
        [],
      ] as [string, ReconcileResult][][],
      want: [
        ["a", "b"],
        ["a", "b"],
        ["a", "b"],
      ],
      ownFirst: true,
    },
    {
      reason: "an event's reconcile that failed after a done one: enqueued as ever",
      between: [
        [],
        [
          ["a", done()],
          ["a", failed(new Error("cloud down"))],
        ],
      ] as [string, ReconcileResult][][],
      want: [
        ["a", "b"],
        ["a", "b"],
        ["a", "b"],
      ],
    },
    {
      reason: "a key settled by an event twice in a row is left out twice: it was looked at in each period",
      between: [[["a", done()]], [["a", done()]]] as [string, ReconcileResult][][],
      want: [["a", "b"], ["b"], ["b"]],
    },
    {
      reason:
        "a key still waiting in the queue at a resync: the reconcile that follows settles it for the next one",
      between: [[["b", done()]], []] as [string, ReconcileResult][][],
      want: [["a", "b"], ["a"], ["a", "b"]],
      ownFirst: true,
      waitingAtFirst: ["b"],
    },
  ])("with reconciled: $reason", async ({ between, want, ownFirst, waitingAtFirst }) => {
    vi.useFakeTimers();
    const periods: string[][] = [];
    let listener: ((key: string, result: ReconcileResult) => void) | undefined;
    const finish = (key: string, result: ReconcileResult) => listener?.(key, result);
    const resync = startPeriodicResync({
      target: { enqueue: (key: string) => periods.at(-1)?.push(key) },
      reconciled: {
        onReconciled: (l) => {
          listener = l;
          return () => (listener = undefined);
        },
        // Waiting at the first resync only (the queue still held the key's ADDED event).
        isWaiting: (key) => periods.length === 1 && (waitingAtFirst ?? []).includes(key),
      },
      listKeys: () => {
        periods.push([]);
        return ["a", "b"];
      },
      periodMs: 1000,
      random: () => 0,
      logger: silentLogger(),
    });
    await vi.advanceTimersByTimeAsync(1000);
    for (const events of between) {
      // The reconciles of what the resync just enqueued finish first (unless the case says they are the events).
      if (!ownFirst) for (const key of periods.at(-1) ?? []) finish(key, done());
      for (const [key, result] of events) finish(key, result);
      await vi.advanceTimersByTimeAsync(1000);
    }
    expect(periods).toEqual(want.slice(0, between.length + 1));
    resync.stop();
    expect(listener).toBeUndefined();
  });
});

import { afterEach, describe, expect, it, vi } from "vitest";
import { Controller } from "./controller.ts";
import { silentLogger } from "../observability/logger.ts";
import { CoreMetrics } from "../observability/metrics.ts";
import { done, failed, requeueAfter, terminal, type ReconcileResult, type Reconciler } from "./result.ts";

/** Waits until `assertion` passes; the deadline is generous because the machine may be busy. */
function eventually(assertion: () => void): Promise<void> {
  return vi.waitFor(assertion, { timeout: 10_000, interval: 5 });
}

/** A reconciler that returns scripted results in order (then `done`), recording the fake time of each call. */
class ScriptedReconciler implements Reconciler {
  readonly callsAt: number[] = [];
  readonly #script: Array<ReconcileResult | Error>;

  constructor(script: Array<ReconcileResult | Error>) {
    this.#script = [...script];
  }

  reconcile(): Promise<ReconcileResult> {
    this.callsAt.push(Date.now());
    const next = this.#script.shift() ?? done();
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  }
}

/** A controller over fake timers, started, with the given reconciler. */
function fakeTimeController(reconciler: Reconciler, metrics?: CoreMetrics) {
  vi.useFakeTimers();
  const controller = new Controller({
    name: "test",
    reconciler,
    workers: 2,
    queue: { baseDelayMs: 100, maxDelayMs: 10_000, now: () => Date.now() },
    logger: silentLogger(),
    metrics,
  });
  controller.start();
  return { controller, t0: Date.now() };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("Controller turns each result into the right queue action", () => {
  it.each([
    { reason: "done: converged, nothing scheduled", script: [done()], wantAt: [0] },
    {
      reason: "requeueAfter: looked at again after the delay",
      script: [requeueAfter(500)],
      wantAt: [0, 500],
    },
    { reason: "error: retried after the base backoff", script: [failed(new Error("x"))], wantAt: [0, 100] },
    {
      reason: "error with Retry-After: retried when the server said",
      script: [failed(new Error("429"), 3000)],
      wantAt: [0, 3000],
    },
    { reason: "a thrown error counts as error", script: [new Error("bug")], wantAt: [0, 100] },
    { reason: "terminal: not retried", script: [terminal(new Error("name taken"))], wantAt: [0] },
    {
      reason: "errors back off exponentially",
      script: [failed(new Error("1")), failed(new Error("2")), failed(new Error("3"))],
      wantAt: [0, 100, 300, 700],
    },
  ])("$reason", async ({ script, wantAt }) => {
    const reconciler = new ScriptedReconciler(script);
    const { controller, t0 } = fakeTimeController(reconciler);
    controller.enqueue("ns/a");
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(reconciler.callsAt.map((t) => t - t0)).toEqual(wantAt);
    await controller.shutDown();
  });

  it.each([
    { reason: "success forgets the backoff", reset: done(), wantAt: [0, 100, 300, 10_000, 10_100] },
    {
      reason: "requeueAfter forgets the backoff",
      reset: requeueAfter(9_700),
      wantAt: [0, 100, 300, 10_000, 10_100],
    },
    {
      reason: "terminal forgets the backoff",
      reset: terminal(new Error("stop")),
      wantAt: [0, 100, 300, 10_000, 10_100],
    },
  ])("$reason: the next failure starts at the base delay again", async ({ reset }) => {
    const reconciler = new ScriptedReconciler([
      failed(new Error("1")),
      failed(new Error("2")),
      reset,
      failed(new Error("after reset")),
      done(),
    ]);
    const { controller, t0 } = fakeTimeController(reconciler);
    controller.enqueue("k");
    await vi.advanceTimersByTimeAsync(1000);
    expect(reconciler.callsAt.map((t) => t - t0)).toEqual([0, 100, 300]);
    await vi.advanceTimersByTimeAsync(9000); // t = 10 000, when requeueAfter(9 700) brings the key back by itself
    if (reset.kind !== "requeueAfter") controller.enqueue("k"); // the others need a new event
    await vi.advanceTimersByTimeAsync(3_600_000);
    // Without the reset the failure after it would wait 400 ms, not 100.
    expect(reconciler.callsAt.map((t) => t - t0)).toEqual([0, 100, 300, 10_000, 10_100]);
    await controller.shutDown();
  });
});

describe("Controller workers", () => {
  it("never reconciles one key twice at once, and runs different keys in parallel", async () => {
    const active = new Map<string, number>();
    let overlaps = 0;
    let running = 0;
    let maxRunning = 0;
    const reconciled: string[] = [];
    const reconciler: Reconciler = {
      async reconcile(key) {
        const n = (active.get(key) ?? 0) + 1;
        active.set(key, n);
        if (n > 1) overlaps++;
        maxRunning = Math.max(maxRunning, ++running);
        for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
        running--;
        active.set(key, n - 1);
        reconciled.push(key);
        return done();
      },
    };
    const controller = new Controller({ name: "t", reconciler, workers: 4, logger: silentLogger() });
    controller.start();
    for (let i = 0; i < 200; i++) {
      controller.enqueue(`k${i % 6}`);
      if (i % 5 === 0) await new Promise((r) => setImmediate(r));
    }
    await eventually(() => expect(controller.depth).toBe(0));
    expect(await controller.stop()).toBe(true);
    expect(overlaps).toBe(0);
    expect(maxRunning).toBe(4);
    expect(new Set(reconciled)).toEqual(new Set(["k0", "k1", "k2", "k3", "k4", "k5"]));
  });

  it("tells onReconciled listeners about every finished reconcile, with its result", async () => {
    const reconciler = new ScriptedReconciler([failed(new Error("once"))]);
    const { controller } = fakeTimeController(reconciler);
    const seen: string[] = [];
    const unsubscribe = controller.onReconciled((key, result) => seen.push(`${key}:${result.kind}`));
    controller.enqueue("a");
    await vi.advanceTimersByTimeAsync(1000);
    unsubscribe();
    controller.enqueue("b");
    await vi.advanceTimersByTimeAsync(1000);
    expect(seen).toEqual(["a:failed", "a:done"]);
    await controller.shutDown();
  });
});

describe("Controller stop and start", () => {
  /** A reconciler that runs until its signal aborts, then reports the abort as a failure. */
  function untilAborted() {
    const started: string[] = [];
    const signals: AbortSignal[] = [];
    const reconciler: Reconciler = {
      async reconcile(key, signal) {
        started.push(key);
        signals.push(signal);
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        return failed(new Error("aborted"));
      },
    };
    return { reconciler, started, signals };
  }

  it("stop aborts in-flight reconciles, waits for them, keeps their keys for the next start", async () => {
    const { reconciler, started, signals } = untilAborted();
    const metrics = new CoreMetrics();
    const controller = new Controller({ name: "t", reconciler, workers: 1, logger: silentLogger(), metrics });
    controller.start();
    controller.enqueue("a");
    controller.enqueue("b");
    await eventually(() => expect(started).toEqual(["a"]));

    expect(await controller.stop()).toBe(true);
    expect(signals[0]?.aborted).toBe(true);
    expect(controller.isRunning).toBe(false);
    expect(controller.depth).toBe(2); // b never started; a went back without a backoff penalty
    controller.enqueue("c"); // accepted while stopped
    expect(started).toEqual(["a"]);

    controller.start(); // regained leadership
    await eventually(() => expect(started).toEqual(["a", "b"]));
    expect(signals[1]?.aborted).toBe(false);
    expect(await controller.shutDown()).toBe(true);
    expect(started).toEqual(["a", "b"]); // shut down: a and c are dropped, not run
    controller.enqueue("d");
    controller.start();
    expect(controller.isRunning).toBe(false);
    expect(await metrics.text()).toMatch(/controller_reconcile_total\{controller="t",result="failed"\} 2/);
  });

  it("stop gives up after its deadline when a reconcile ignores the abort", async () => {
    vi.useFakeTimers();
    const release = Promise.withResolvers<ReconcileResult>();
    let started = false;
    const controller = new Controller({
      name: "t",
      reconciler: {
        reconcile: () => {
          started = true;
          return release.promise;
        },
      },
      logger: silentLogger(),
      stopTimeoutMs: 5000,
    });
    controller.start();
    controller.enqueue("a");
    await vi.advanceTimersByTimeAsync(0);
    expect(started).toBe(true);

    let result: boolean | undefined;
    const stopping = controller.stop().then((r) => (result = r));
    await vi.advanceTimersByTimeAsync(4999);
    expect(result).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await stopping;
    expect(result).toBe(false);
    release.resolve(done());
    vi.useRealTimers();
    expect(await controller.stop()).toBe(true);
  });
});

describe("Controller metrics", () => {
  it("counts reconciles by result, their duration, and the queue depth and wait", async () => {
    const metrics = new CoreMetrics();
    const reconciler = new ScriptedReconciler([failed(new Error("x")), done(), terminal(new Error("t"))]);
    const { controller } = fakeTimeController(reconciler, metrics);
    controller.enqueue("a");
    await vi.advanceTimersByTimeAsync(1000);
    controller.enqueue("a");
    await vi.advanceTimersByTimeAsync(1000);
    const text = await metrics.text();
    expect(text).toContain('controller_reconcile_total{controller="test",result="failed"} 1');
    expect(text).toContain('controller_reconcile_total{controller="test",result="done"} 1');
    expect(text).toContain('controller_reconcile_total{controller="test",result="terminal"} 1');
    expect(text).toContain('controller_reconcile_duration_seconds_count{controller="test"} 3');
    expect(text).toContain('controller_queue_wait_seconds_count{controller="test"} 3');
    expect(text).toContain('controller_queue_depth{controller="test"} 0');
    await controller.shutDown();
  });
});

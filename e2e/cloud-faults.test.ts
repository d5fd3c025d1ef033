/**
 * Scenario: the cloud misbehaves — a storm of 429s that say how long to wait (Retry-After), a full outage
 * (503) that says nothing. The controller must back off, not hammer: it waits as long as the cloud asks,
 * and without an answer it waits longer after each failure (exponential backoff). Once the faults clear,
 * everything converges.
 *
 * Backoff is read from the cloud's request log: when each of the controller's writes arrived and when the
 * answer before it left, as measured by the cloud itself. The assertions are lower bounds on the pauses
 * (a timer never fires early), never upper bounds on speed.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DEFAULT_BASE_DELAY_MS } from "reconcile-kit/parts";
import {
  type ControllerProcess,
  type RequestLogEntry,
  type Stack,
  waitConverged,
  waitFor,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

/**
 * How much shorter a measured pause may look than the controller's real one: the cloud stamps an answer
 * "finished" when the response's close event runs, which can be a few ms after the controller already
 * read it and started its timer.
 */
const SLACK_MS = 50;

/** The pause before each attempt after the first: next arrival minus the previous answer's departure. */
function pauses(attempts: readonly RequestLogEntry[]): number[] {
  return attempts.slice(1).map((a, i) => a.startedAtMs - (attempts[i]?.finishedAtMs ?? a.startedAtMs));
}

describe("cloud faults", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;
  /** The controller's creates during the 429 storm, in order (filled by the first test). */
  const retryAfterMs = 2_000;

  beforeAll(async () => {
    stack = await startStack("cloud-faults");
    controller = await stack.startController();
    ns = await stack.kube.createNamespace("faults");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const controllerWrites = async (method: string, path: string): Promise<RequestLogEntry[]> =>
    (await stack.cloud.requests()).filter(
      (r) => r.clientId === "controller" && r.method === method && r.path === path,
    );

  test("a 429 storm with Retry-After: the controller paces itself by the cloud's answer, then converges", async () => {
    await stack.cloud.clearRequests();
    await stack.cloud.setFaults([
      { method: "POST", path: "/v1/shapes", throttleRate: 1, retryAfterSeconds: retryAfterMs / 1000 },
    ]);
    await stack.kube.applyShape(ns, "throttled", { type: "square", color: "red" });

    const paced = (attempts: readonly RequestLogEntry[]) =>
      pauses(attempts).filter((p) => p >= retryAfterMs - SLACK_MS).length;
    await waitFor("three retries paced by the Retry-After", async () => {
      expect(paced(await controllerWrites("POST", "/v1/shapes"))).toBeGreaterThanOrEqual(3);
    });
    await stack.cloud.clearFaults();
    await waitConverged(stack, ns, "throttled");

    const throttled = await controllerWrites("POST", "/v1/shapes");
    expect(throttled.map((r) => r.status).at(-1), "the create that got through").toBe(201);
    expect(new Set(throttled.slice(0, -1).map((r) => r.status))).toEqual(new Set([429]));
    // Paced by Retry-After, not hammering: every pause is at least the Retry-After — even the first, though
    // that run's own writes (the finalizer, the Synced=False status) echo back as Shape updates while it
    // runs: the queue holds every add of a key until its Retry-After has passed (library/src/queue/queue.ts), and a
    // status-only update is not a reason to reconcile (reconcileWorthy in library/src/controllers.ts).
    expect(throttled.length).toBeGreaterThan(1);
    const measured = pauses(throttled);
    for (const pause of measured) {
      expect(pause, `pauses ${measured.join(", ")} ms`).toBeGreaterThanOrEqual(retryAfterMs - SLACK_MS);
    }
  });

  test("an outage without Retry-After: each write is retried ever more slowly (exponential backoff), then converges", async () => {
    await stack.kube.applyShape(ns, "steady", { type: "circle", color: "blue" });
    const steady = await waitConverged(stack, ns, "steady");
    await stack.cloud.clearRequests();
    await stack.cloud.setFaults([{ outage: true }]);

    // During the outage: a new Shape (a create) and a spec change (a patch).
    await stack.kube.applyShape(ns, "newcomer", { type: "triangle", color: "green" });
    await stack.kube.patchShape(ns, "steady", { spec: { color: "black" } });
    const patchPath = `/v1/shapes/${steady.cloud.id}`;
    await waitFor("six failed creates and six failed patches", async () => {
      expect((await controllerWrites("POST", "/v1/shapes")).length).toBeGreaterThanOrEqual(6);
      expect((await controllerWrites("PATCH", patchPath)).length).toBeGreaterThanOrEqual(6);
    });
    await stack.cloud.clearFaults();
    await waitConverged(stack, ns, "newcomer");
    const after = await waitConverged(stack, ns, "steady");
    expect(after.cloud).toMatchObject({ id: steady.cloud.id, color: "black" });

    // Per write, each pause is at least the work queue's backoff for that failure (library/src/queue/queue.ts): doubling with
    // each failure, but never more than twice the time the write has been failing. The rate limiter's outage
    // hold only ever lengthens a pause (library/src/queue/rate-limiter.ts): it holds every call, so a retry may also wait
    // out a hold another write's failure started. The first three are exempt: the first run's own write (a new
    // Shape's finalizer) echoes back as an event, and events are not rate limited (only a Retry-After holds
    // them), so it may bring an early run; the first failure's 100 ms timer still fires after it.
    for (const [what, attempts] of [
      ["create", await controllerWrites("POST", "/v1/shapes")],
      ["patch", await controllerWrites("PATCH", patchPath)],
    ] as const) {
      const failed = attempts.filter((a) => a.status === 503);
      expect(failed.length, `failed ${what}s`).toBeGreaterThanOrEqual(6);
      expect(attempts.at(-1)?.status, `the last ${what}`).toBe(what === "create" ? 201 : 200);
      const measured = pauses(attempts);
      const first = attempts[0]?.finishedAtMs ?? 0;
      measured.forEach((pause, k) => {
        const failingMs = (attempts[k]?.finishedAtMs ?? first) - first;
        const backoff = Math.min(
          DEFAULT_BASE_DELAY_MS * 2 ** k,
          Math.max(DEFAULT_BASE_DELAY_MS, 2 * failingMs),
        );
        if (k >= 3)
          expect(pause, `${what} pauses ${measured.join(", ")} ms`).toBeGreaterThanOrEqual(
            backoff - SLACK_MS,
          );
      });
    }
  });

  test("the controller logged nothing unexpected (only the throttled and failed writes, retried)", async () => {
    expect(
      await controller.problems({ allow: [/^(?=.*"reconcile failed, retrying")(?=.*HTTP (429|503))/] }),
    ).toEqual([]);
  });
});

/**
 * Scenario: two replicas with leader election (`--leader-elect`, a Lease in shapes-system that
 * deploy/rbac.yaml grants). Exactly one leads (the `leader` metric, the Lease's holder); only the leader
 * writes — the cloud's request log names the writer of every request (X-Client-Id = the replica's
 * identity), and the standby's own metrics count no write at all. When the leader is SIGKILLed (no chance
 * to release the Lease), the standby takes over once the Lease expires, and what happens next converges.
 *
 * Lease timings are short so the takeover fits in a test: --lease-duration 4s, --renew-deadline 3s,
 * --retry-period 500ms.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  CLOUD_WRITE_VERBS,
  CONTROLLER_NAMESPACE,
  type ControllerProcess,
  METRIC,
  type Stack,
  waitConverged,
  waitFor,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

const LEASE = "shapes-controller";

describe("leader election", () => {
  let stack: Stack;
  let replicas: ControllerProcess[];
  let ns: string;
  let leader: ControllerProcess;
  let standby: ControllerProcess;

  beforeAll(async () => {
    stack = await startStack("leader-election");
    ns = await stack.kube.createNamespace("leader");
    const replica = (name: string) =>
      stack.startController({
        name,
        leaderElection: { namespace: CONTROLLER_NAMESPACE, name: LEASE },
        extraArgs: ["--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms"],
      });
    // Both are ready once their caches synced: the leader after its startup resync, the standby at once.
    replicas = await Promise.all([replica("replica-a"), replica("replica-b")]);
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** The replicas whose `leader` metric is 1 (a killed one counts as not leading). */
  async function leaders(): Promise<ControllerProcess[]> {
    const leading: ControllerProcess[] = [];
    for (const r of replicas) if (r.running && (await r.metrics()).sum(METRIC.leader) === 1) leading.push(r);
    return leading;
  }

  const writesOf = (m: Awaited<ReturnType<ControllerProcess["metrics"]>>) => ({
    kube: m.sum(METRIC.kubeWrites),
    cloud: m.sum(METRIC.externalRequests, { verb: [...CLOUD_WRITE_VERBS] }),
  });

  test("exactly one replica leads, and it holds the Lease", async () => {
    [leader] = await waitFor("exactly one leader", async () => {
      const leading = await leaders();
      expect(leading.map((r) => r.options.name)).toHaveLength(1);
      return leading as [ControllerProcess];
    });
    standby = replicas.find((r) => r !== leader) as ControllerProcess;
    const lease = await stack.kube.getLease(CONTROLLER_NAMESPACE, LEASE);
    expect(lease?.spec?.holderIdentity).toBe(leader.options.name);
    expect((await standby.metrics()).sum(METRIC.leader)).toBe(0);
  });

  test("only the leader writes: every cloud write carries its identity; the standby wrote nothing", async () => {
    const names = ["one", "two", "three", "four"];
    for (const n of names) await stack.kube.applyShape(ns, n, { type: "square", color: "red" });
    for (const n of names) await waitConverged(stack, ns, n);
    // Drift too: the leader repairs it.
    const { cloud } = await waitConverged(stack, ns, "one");
    await stack.cloud.patch(cloud.id, { color: "green" });
    await waitFor("the drift to be repaired", async () => {
      const c = await waitConverged(stack, ns, "one", { timeoutMs: 1_000 });
      expect(c.shape.status?.driftRepairs).toBe(1);
    });

    const controllerWrites = (await stack.cloud.requests()).filter((r) => r.clientId !== "e2e-test");
    expect(controllerWrites.length).toBeGreaterThanOrEqual(names.length + 1);
    expect(new Set(controllerWrites.map((r) => r.clientId))).toEqual(new Set([leader.options.name]));
    expect(writesOf(await standby.metrics())).toEqual({ kube: 0, cloud: 0 });
    expect(writesOf(await leader.metrics()).cloud).toBeGreaterThanOrEqual(names.length + 1);
  });

  test("the leader is SIGKILLed: the standby takes over, and a Shape created after that converges", async () => {
    const killedAt = Date.now();
    await leader.kill();

    await waitFor("the standby to lead", async () => {
      expect((await leaders()).map((r) => r.options.name)).toEqual([standby.options.name]);
    });
    const lease = await stack.kube.getLease(CONTROLLER_NAMESPACE, LEASE);
    expect(lease?.spec?.holderIdentity).toBe(standby.options.name);

    await stack.kube.applyShape(ns, "after-takeover", { type: "hexagon", color: "blue", size: 3 });
    await waitConverged(stack, ns, "after-takeover");
    // Shapes from the old leader's time are still looked after: a drift on one is repaired.
    const { cloud } = await waitConverged(stack, ns, "two");
    await stack.cloud.patch(cloud.id, { color: "yellow" });
    await waitFor("the new leader to repair the drift", async () => {
      const c = await waitConverged(stack, ns, "two", { timeoutMs: 1_000 });
      expect(c.shape.status?.driftRepairs).toBe(1);
    });

    // Never two writers: every write before the kill is the old leader's, every one after is the new one's.
    const writes = (await stack.cloud.requests()).filter((r) => r.clientId !== "e2e-test");
    const before = writes.filter((r) => r.startedAtMs < killedAt);
    const after = writes.filter((r) => r.startedAtMs >= killedAt);
    expect(new Set(before.map((r) => r.clientId))).toEqual(new Set([leader.options.name]));
    expect(after.length).toBeGreaterThanOrEqual(2);
    expect(new Set(after.map((r) => r.clientId))).toEqual(new Set([standby.options.name]));
  });

  test("neither replica logged anything unexpected", async () => {
    for (const r of replicas) expect(await r.problems(), r.options.name).toEqual([]);
  });
});

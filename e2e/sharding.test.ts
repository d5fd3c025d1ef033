/**
 * Scenario: outgrowing one replica. Replicas run with `--sharding`: each holds a Lease of its own in
 * shapes-system (labelled shapes.example.com/ring=shapes-controller), the live ones form a consistent-hash
 * ring, and each caches and reconciles the Shapes whose uid hashes into its part, with their ShapeRefs and
 * cloud shapes (library/src/leadership/). The project's control plane has the API server's
 * ShardedListAndWatch feature on (KEP-5866), so each replica's Shape list and watch carry only its part.
 *
 * What it proves, on the real API server, with 120 Shapes: every Shape is reconciled by exactly one replica
 * (the cloud's request log names the writer of every request: X-Client-Id = the replica's identity, and the
 * replicas' `ring_owned_objects` add up); a killed replica's Shapes are taken over once its Lease expired;
 * through 3 → 2 → 3 → 2 → 4 replicas the request log shows no duplicate create, no DELETE, and no two
 * replicas writing one cloud shape at the same time; Shapes applied during a handover converge.
 *
 * Lease timings are short so the handovers fit in a test: --lease-duration 4s, --renew-deadline 3s,
 * --retry-period 500ms. The replicas run as deploy/rbac.yaml's service account plus deploy/sharding/rbac.yaml.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { cloudNameOf } from "@shapes/controller";
import {
  conditionOf,
  CONTROLLER_NAMESPACE,
  type ControllerProcess,
  METRIC,
  REPO_ROOT,
  type RequestLogEntry,
  type Stack,
  waitFor,
} from "@shapes/stack";
import { applyManifestFile } from "reconcile-kit/harness";
import { startStack } from "./support/stack.ts";

const RING = "shapes.example.com/ring=shapes-controller";
const TIMINGS = ["--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms"];
const SHAPES = 120;
const WAIT = { timeoutMs: 240_000, intervalMs: 500 };

describe("sharding: outgrowing one replica", () => {
  let stack: Stack;
  let ns: string;
  const replicas = new Map<string, ControllerProcess>();
  /** name → spec size, for every Shape applied: what convergence means. */
  const sizes = new Map<string, number>();

  const startReplica = async (name: string) => {
    const replica = await stack.startController({ name, extraArgs: ["--sharding", ...TIMINGS] });
    replicas.set(name, replica);
    return replica;
  };
  const running = () => [...replicas.values()].filter((r) => r.running);

  beforeAll(async () => {
    stack = await startStack("sharding", { cloudRequestLog: 50_000 });
    await applyManifestFile(stack.kubeConfig, join(REPO_ROOT, "deploy", "sharding", "rbac.yaml"));
    ns = await stack.kube.createNamespace("sharding");
    await Promise.all(["replica-a", "replica-b", "replica-c"].map(startReplica));
  }, 240_000);
  afterAll(async () => {
    await stack?.stop();
  });

  /** Waits until every running replica sees all of them and their parts cover the hash space once. */
  async function ringSettled(): Promise<void> {
    await waitFor(
      `a ring of ${running().length} replicas covering the hash space`,
      async () => {
        let share = 0;
        for (const r of running()) {
          const m = await r.metrics();
          expect(m.sum(METRIC.ringMembers), r.options.name).toBe(running().length);
          expect(m.sum(METRIC.ringOwnedShare), r.options.name).toBeGreaterThan(0);
          share += m.sum(METRIC.ringOwnedShare);
        }
        expect(share).toBeCloseTo(1, 3);
      },
      WAIT,
    );
  }

  /** Applies Shapes (at most 20 at a time) with the given size. */
  async function apply(names: readonly string[], size: number): Promise<void> {
    for (let i = 0; i < names.length; i += 20) {
      await Promise.all(
        names.slice(i, i + 20).map(async (name) => {
          await stack.kube.applyShape(ns, name, { type: "circle", color: "blue", size });
          sizes.set(name, size);
        }),
      );
    }
  }

  /** Waits until every Shape applied so far has its cloud shape at its spec, and says Ready for its generation. */
  async function allConverged(): Promise<void> {
    await waitFor(
      `${sizes.size} Shapes to converge`,
      async () => {
        const shapes = new Map((await stack.kube.listShapes(ns)).map((s) => [s.metadata.name, s]));
        const cloud = new Map((await stack.cloud.list()).map((c) => [c.name, c]));
        const behind: string[] = [];
        for (const [name, size] of sizes) {
          const shape = shapes.get(name);
          const c = cloud.get(cloudNameOf(ns, name));
          const ready = conditionOf(shape, "Ready");
          const ok =
            shape !== undefined &&
            c?.size === size &&
            c.tags["k8s-uid"] === shape.metadata.uid &&
            ready?.status === "True" &&
            ready.observedGeneration === shape.metadata.generation;
          if (!ok) behind.push(name);
        }
        expect(behind.slice(0, 5), `${behind.length} not converged`).toEqual([]);
      },
      WAIT,
    );
  }

  /** The replicas' writes to the cloud, from its request log (the test's own client is not a replica). */
  async function replicaWrites(): Promise<RequestLogEntry[]> {
    return (await stack.cloud.requests()).filter((e) => e.clientId?.startsWith("replica-"));
  }

  /** Who wrote each cloud shape (by id, from the path), in order. */
  function writersById(writes: readonly RequestLogEntry[]): Map<string, RequestLogEntry[]> {
    const byId = new Map<string, RequestLogEntry[]>();
    for (const w of writes) {
      const id = /^\/v1\/shapes\/([^/?]+)/.exec(w.path)?.[1];
      if (id !== undefined) byId.set(id, [...(byId.get(id) ?? []), w]);
    }
    return byId;
  }

  test("three replicas split the ring: a labelled Lease each, and the API server filters for them", async () => {
    await ringSettled();
    const leases = await stack.kube.listLeases(CONTROLLER_NAMESPACE, RING);
    expect(leases.map((l) => l.spec?.holderIdentity).sort()).toEqual(["replica-a", "replica-b", "replica-c"]);
    for (const r of running()) {
      const said = (await r.logs()).map((l) => l.msg);
      expect(said).toContain(
        "the API server filters the Shapes' list and watch by our part of the ring (ShardedListAndWatch)",
      );
    }
  });

  test("120 Shapes: every one is reconciled by exactly one replica, and the owned counts add up", async () => {
    const names = Array.from({ length: SHAPES }, (_, i) => `shape-${String(i).padStart(3, "0")}`);
    await apply(names, 10);
    await allConverged();

    let owned = 0;
    for (const r of running()) {
      const count = (await r.metrics()).sum(METRIC.ringOwnedObjects, { cache: "resources" });
      expect(count, r.options.name).toBeGreaterThan(0);
      owned += count;
    }
    expect(owned).toBe(SHAPES);
    const writes = await replicaWrites();
    const creates = writes.filter((w) => w.method === "POST" && w.path === "/v1/shapes");
    expect(creates).toHaveLength(SHAPES);
    expect(new Set(creates.map((c) => c.status))).toEqual(new Set([201]));
    // Each replica wrote only its own: no cloud shape has two writers.
    for (const [id, ws] of writersById(writes)) {
      expect(new Set(ws.map((w) => w.clientId)).size, `writers of ${id}`).toBe(1);
    }
    // And each replica created about a third: the ring spreads them (±60%, it is 120 random uids).
    for (const name of replicas.keys()) {
      const made = creates.filter((c) => c.clientId === name).length;
      expect(made, name).toBeGreaterThan(SHAPES / 3 / 2.5);
    }
  });

  test("a killed replica's Shapes are taken over by the others once its Lease expired", async () => {
    // A change to every Shape first: each cloud shape's update names its owner (creates carry no id).
    await apply([...sizes.keys()], 11);
    await allConverged();
    const before = writersById(await replicaWrites());
    const victim = replicas.get("replica-c") as ControllerProcess;
    await victim.kill();
    const killedAt = Date.now();
    // Change every Shape again: the victim's can only converge once the others took its part over.
    await apply([...sizes.keys()], 12);
    await allConverged();
    const after = (await replicaWrites()).filter((w) => w.startedAtMs > killedAt);
    expect(after.some((w) => w.clientId === "replica-c")).toBe(false);
    const victims = [...before].filter(([, ws]) => ws[0]?.clientId === "replica-c").map(([id]) => id);
    expect(victims.length).toBeGreaterThan(0);
    const firstTakeover = Math.min(
      ...after
        .filter((w) => victims.some((id) => w.path.startsWith(`/v1/shapes/${id}`)))
        .map((w) => w.startedAtMs),
    );
    // Reported, not asserted (timing on 2 shared cores): the Lease is 4 s; the unit tests bound the handover.
    console.log(
      `sharding: the killed replica's first Shape was written again ${firstTakeover - killedAt} ms after the kill`,
    );
    await ringSettled();
  });

  test("3 → 2 → 4 replicas: no duplicate create, no DELETE, never two writers of one cloud shape at once", async () => {
    // Back to three (the killed one returns under its name), then one leaves gracefully, then two join.
    await startReplica("replica-c");
    await ringSettled();
    await (replicas.get("replica-b") as ControllerProcess).stop();
    await apply([...sizes.keys()], 13);
    await ringSettled();
    await allConverged();
    const joining = Promise.all(["replica-d", "replica-e"].map(startReplica));
    // Shapes applied while the ring hands parts to the newcomers, and a change to every other one.
    const late = Array.from({ length: 20 }, (_, i) => `late-${i}`);
    await apply(late, 14);
    await apply(
      [...sizes.keys()].filter((n) => !n.startsWith("late-")),
      14,
    );
    await joining;
    await ringSettled();
    await allConverged();

    const writes = await replicaWrites();
    const creates = writes.filter((w) => w.method === "POST" && w.path === "/v1/shapes");
    expect(creates).toHaveLength(SHAPES + late.length);
    expect(new Set(creates.map((c) => c.status))).toEqual(new Set([201]));
    expect(writes.filter((w) => w.method === "DELETE")).toEqual([]);
    // A cloud shape may change hands at a handover; the next writer's first write starts only after the
    // last one's last write ended.
    let handovers = 0;
    for (const [id, ws] of writersById(writes)) {
      const ordered = [...ws].sort((a, b) => a.startedAtMs - b.startedAtMs);
      for (let i = 1; i < ordered.length; i++) {
        const [prev, next] = [ordered[i - 1] as RequestLogEntry, ordered[i] as RequestLogEntry];
        if (prev.clientId === next.clientId) continue;
        handovers++;
        const lastOfPrev = Math.max(
          ...ordered
            .filter((w) => w.clientId === prev.clientId && w.startedAtMs <= next.startedAtMs)
            .map((w) => w.finishedAtMs),
        );
        expect(next.startedAtMs, `${id}: ${prev.clientId} → ${next.clientId}`).toBeGreaterThan(lastOfPrev);
      }
    }
    expect(handovers).toBeGreaterThan(0);
    let owned = 0;
    for (const r of running())
      owned += (await r.metrics()).sum(METRIC.ringOwnedObjects, { cache: "resources" });
    expect(owned).toBe(sizes.size);
  });
});

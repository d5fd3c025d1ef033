/**
 * Scenario: no churn. With many Shapes converged, the controller keeps looking — a full resync of every
 * Shape, ShapeRef and owned cloud shape, and a relist of the cloud, every period — but it must write
 * NOTHING: not one Kubernetes write (no status rewritten with a fresh timestamp, no ShapeRef touched, no
 * Event), not one cloud write. A controller that rewrites status on every resync burns API-server and cloud
 * quota in proportion to its fleet, for nothing.
 *
 * The controller runs with a 5 s resync period. Proof that resyncs happened comes from its own metrics
 * (reconciles per controller, cloud lists); proof that nothing was written comes from its metrics, the
 * cloud's request log, and the resourceVersions of every Shape and ShapeRef.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  CLOUD_WRITE_VERBS,
  type ControllerProcess,
  METRIC,
  type MetricsSnapshot,
  type Stack,
  waitConverged,
  waitFor,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

const SHAPES = 20;
const CONTROLLERS = ["shape", "shaperef", "shapes-sweep"] as const;
const TYPES = ["square", "circle", "triangle", "hexagon"] as const;
const COLORS = ["red", "green", "blue", "pink", "black"] as const;

describe("no churn", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("no-churn");
    controller = await stack.startController({ resyncPeriod: "5s" });
    ns = await stack.kube.createNamespace("churn");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** Waits until, since `from`, every controller resynced all its keys and the cloud was listed again. */
  async function waitFullResync(from: MetricsSnapshot): Promise<MetricsSnapshot> {
    return waitFor(
      "a full resync: every controller reconciled every key again, and the cloud was relisted",
      async () => {
        const now = await controller.metrics();
        for (const c of CONTROLLERS) {
          const reconciled =
            now.sum(METRIC.reconciles, { controller: c }) - from.sum(METRIC.reconciles, { controller: c });
          expect(reconciled, `${c} reconciles`).toBeGreaterThanOrEqual(SHAPES);
        }
        const lists = (m: MetricsSnapshot) => m.sum(METRIC.externalRequests, { verb: "list" });
        expect(lists(now) - lists(from), "cloud lists").toBeGreaterThanOrEqual(1);
        return now;
      },
      { timeoutMs: 90_000 },
    );
  }

  /** resourceVersion of every Shape and ShapeRef: any write to one, status included, changes it. */
  async function versions(): Promise<Record<string, string | undefined>> {
    const shapes = await stack.kube.listShapes(ns);
    const refs = await stack.kube.listShapeRefs();
    const entries: [string, string | undefined][] = [
      ...shapes.map((s): [string, string | undefined] => [
        `Shape ${s.metadata.name}`,
        s.metadata.resourceVersion,
      ]),
      ...refs.map((r): [string, string | undefined] => [
        `ShapeRef ${r.metadata.name}`,
        r.metadata.resourceVersion,
      ]),
    ];
    return Object.fromEntries(entries);
  }

  test(`${SHAPES} converged Shapes: a full resync period costs zero Kubernetes and zero cloud writes`, async () => {
    await Promise.all(
      Array.from({ length: SHAPES }, (_, i) =>
        stack.kube.applyShape(ns, `s${i}`, {
          type: TYPES[i % TYPES.length] ?? "square",
          color: COLORS[i % COLORS.length] ?? "red",
          ...(i % 3 === 0 ? { size: i + 1 } : {}),
        }),
      ),
    );
    for (let i = 0; i < SHAPES; i++) await waitConverged(stack, ns, `s${i}`);

    // Let one full resync pass first, so everything the convergence set in motion has landed.
    const settled = await waitFullResync(await controller.metrics());
    const startedAt = Date.now();
    const versionsBefore = await versions();
    expect(Object.keys(versionsBefore)).toHaveLength(2 * SHAPES);

    // The window: at least one more full resync.
    const after = await waitFullResync(settled);

    expect(after.sum(METRIC.kubeWrites) - settled.sum(METRIC.kubeWrites), "Kubernetes writes").toBe(0);
    const cloudWrites = (m: MetricsSnapshot) =>
      m.sum(METRIC.externalRequests, { verb: [...CLOUD_WRITE_VERBS] });
    expect(cloudWrites(after) - cloudWrites(settled), "cloud writes (metrics)").toBe(0);
    const logged = (await stack.cloud.requests()).filter((r) => r.startedAtMs >= startedAt);
    expect(logged, "cloud writes (the cloud's request log)").toEqual([]);
    expect(await versions(), "resourceVersions of every Shape and ShapeRef").toEqual(versionsBefore);
    // And they are all still converged.
    for (let i = 0; i < SHAPES; i++) await waitConverged(stack, ns, `s${i}`, { timeoutMs: 0 });
  });

  test("the controller logged nothing unexpected", async () => {
    expect(await controller.problems()).toEqual([]);
  });
});

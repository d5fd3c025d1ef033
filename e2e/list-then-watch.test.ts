/**
 * Scenario: the controller started with `--no-watch-list` (the bench's `list-then-watch` configuration) lists
 * then watches. Its lean informers never ask the API server for a watch-list (library/src/source/kube-list-watch.ts,
 * `watchList: false`): their first lists are plain paged LISTs of Shapes and ShapeRefs, as the API server's own
 * `apiserver_request_total` counts them, and the Shapes present when it starts converge, as one created after.
 * The control: the same controller with its defaults, on the same API server (its WatchList gate on, 1.36's
 * default), sends no LIST of either at its start — its first lists are watch-lists, counted as WATCH.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Stack, waitConverged } from "@shapes/stack";
import { ApiServerMetrics, diffCounts, type RequestCounts } from "../bench/requests.ts";
import { skipOnExistingCluster, startStack } from "./support/stack.ts";

const existing = skipOnExistingCluster(
  "reads kube-apiserver's /metrics with the local control plane's admin certificate",
);

/** The Shapes present before either controller starts. */
const PRESENT = ["a", "b", "c"];

describe.skipIf(existing)("a controller started with --no-watch-list", () => {
  let stack: Stack;
  let metrics: ApiServerMetrics;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("list-then-watch");
    metrics = new ApiServerMetrics(stack.kubeConfig);
    ns = await stack.kube.createNamespace("ltw");
    for (const name of PRESENT) await stack.kube.applyShape(ns, name, { type: "square", color: "red" });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /**
   * Starts a controller and returns it with the API server's request counts for Shapes and ShapeRefs from
   * just before its spawn to its /readyz 200 (nothing else asks for either meanwhile).
   */
  async function startCounting(name: string, extraArgs: string[]) {
    const before = await metrics.requests();
    const controller = await stack.startController({ name, identity: name, extraArgs });
    const moved = diffCounts(before, await metrics.requests());
    const counts: RequestCounts = Object.fromEntries(
      Object.entries(moved).filter(([key]) => / (shapes|shaperefs)$/.test(key)),
    );
    console.log(`${[name, ...extraArgs].join(" ")}, spawn → ready: ${JSON.stringify(counts)}`);
    return { controller, counts };
  }

  test("its informers' first lists are plain LISTs; the Shapes present and one created after converge", async () => {
    const { controller, counts } = await startCounting("list-then-watch", ["--no-watch-list"]);
    expect(counts["LIST shapes"]).toBeGreaterThanOrEqual(1);
    expect(counts["LIST shaperefs"]).toBeGreaterThanOrEqual(1);
    for (const name of PRESENT) {
      const c = await waitConverged(stack, ns, name);
      expect(c.cloud).toMatchObject({ name: `${ns}.${name}`, color: "red" });
    }
    // Its watch follows the list: a Shape created now arrives as an event.
    await stack.kube.applyShape(ns, "late", { type: "circle", color: "blue" });
    const late = await waitConverged(stack, ns, "late");
    expect(late.cloud).toMatchObject({ name: `${ns}.late`, color: "blue" });
    await controller.stop();
  });

  test("the control: with its defaults it sends no LIST of either (its first lists are watch-lists)", async () => {
    const { controller, counts } = await startCounting("watch-list", []);
    expect(counts["LIST shapes"]).toBeUndefined();
    expect(counts["LIST shaperefs"]).toBeUndefined();
    await controller.stop();
  });
});

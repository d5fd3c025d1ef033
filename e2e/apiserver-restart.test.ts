/**
 * Scenario: the API server restarts under a running controller (etcd and its data are kept). Every watch
 * drops; for a moment new watches are refused (429) while the watch cache warms up, then old
 * resourceVersions are 410 Expired. client-node's informer stops for good on most of these errors: ours
 * are supervised, so they restart and relist. The proof is from the outside: the informer-restart metric
 * grows, the same process keeps running, and Shapes created, changed and deleted AFTER the restart are
 * handled through the watches (the resync period is 5 min, far longer than the test).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ControllerProcess, METRIC, type Stack, waitConverged, waitFor, writesTo } from "@shapes/stack";
import { skipOnExistingCluster, startStack } from "./support/stack.ts";

const existing = skipOnExistingCluster("restarts the API server, which only a local control plane allows");

describe.skipIf(existing)("API server restart", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("apiserver-restart");
    controller = await stack.startController();
    ns = await stack.kube.createNamespace("restart");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  test("the watches recover: the informers restart, and later changes are still seen and handled", async () => {
    await stack.kube.applyShape(ns, "before", { type: "square", color: "red" });
    const before = await waitConverged(stack, ns, "before");
    const pid = controller.pid;
    const restartsBefore = await controller.metrics();

    const controlPlane = stack.controlPlane;
    if (!controlPlane) throw new Error("cannot restart the API server of an existing cluster");
    await controlPlane.restartApiServer();

    await waitFor("both Kubernetes informers to restart", async () => {
      const m = await controller.metrics();
      for (const informer of ["shapes", "shaperefs"]) {
        expect(m.sum(METRIC.informerRestarts, { informer }), informer).toBeGreaterThan(
          restartsBefore.sum(METRIC.informerRestarts, { informer }),
        );
      }
    });

    // Created after the restart: only a recovered Shape watch can bring it.
    await stack.kube.applyShape(ns, "after", { type: "circle", color: "green", size: 8 });
    await waitConverged(stack, ns, "after");
    // Changed after the restart: the update arrives too.
    await stack.kube.patchShape(ns, "before", { spec: { color: "blue" } });
    const changed = await waitConverged(stack, ns, "before");
    expect(changed.cloud).toMatchObject({ id: before.cloud.id, color: "blue" });
    // Deleted after the restart: the finalizer runs, and the ShapeRef watch sees its ShapeRef go.
    await stack.kube.deleteShape(ns, "before");
    await waitFor("the deleted Shape, its ShapeRef and its cloud shape to be gone", async () => {
      expect(await stack.kube.getShape(ns, "before"), "Shape").toBeUndefined();
      expect(await stack.kube.getShapeRef(`${ns}.before`), "ShapeRef").toBeUndefined();
      expect(await stack.cloud.get(before.cloud.id), "cloud shape").toBeUndefined();
    });
    // One update, one delete. A second look at the deletion (the cloud's change feed can be faster than
    // the Shape watch) may try the delete again and find it done (404): harmless, and all it may do.
    const writes = writesTo(await stack.cloud.requests(), before.cloud.id).map(
      (r) => `${r.method} ${r.status}`,
    );
    expect(writes.filter((w) => w !== "DELETE 404")).toEqual(["PATCH 200", "DELETE 204"]);

    // The same process did all of it: no crash, no restart of the controller.
    expect(controller.running).toBe(true);
    expect(controller.pid).toBe(pid);
    expect(await controller.isReady()).toBe(true);
  });

  test("the controller logged nothing unexpected (only its informers restarting)", async () => {
    // While the new API server warms up it refuses watches (429) and, until its RBAC caches are filled,
    // even permitted requests (403): both show up only as informer restarts.
    const restarting = /"msg":"informer (stopped; restarting after backoff|restart failed; trying again)"/;
    expect(await controller.problems({ allow: [restarting] })).toEqual([]);
  });
});

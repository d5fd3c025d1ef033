/**
 * Scenario 3, on a bad day: our cloud shape is deleted while the cloud refuses creates (an outage: 503 for
 * every POST /v1/shapes). The controller cannot create it again, and its Shape must not go on saying
 * `Ready=True` over nothing: `Ready=False` (reason `Absent`) until a matching cloud shape exists again,
 * `Synced=False` naming the create that failed, both for the Shape's generation. When the outage ends, the
 * shape is created again and the Shape is `Ready=True` again. (The definitions: docs/glossary.md, "Conditions:
 * Ready and Synced"; library/src/reconcile/status.ts.)
 *
 * Every status the Shape is given after the deletion is read from a watch on it, so a `Ready=True` written in
 * between — however briefly — is seen, not missed between two polls.
 */
import { type KubernetesObject, Watch } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { GROUP, SHAPES, VERSION } from "@shapes/controller";
import {
  conditionOf,
  type ControllerProcess,
  type RequestLogEntry,
  type Shape,
  type Stack,
  waitConverged,
  waitFor,
} from "@shapes/stack";
import { startStack } from "./support/stack.ts";

/** Every version of one Shape a watch delivered, in order, until {@link stop}. */
interface ShapeRecorder {
  readonly seen: Shape[];
  stop(): void;
}

/** Watches the Shape `namespace/name` from `resourceVersion` on, recording each version the API server sends. */
async function recordShape(
  stack: Stack,
  namespace: string,
  name: string,
  resourceVersion: string,
): Promise<ShapeRecorder> {
  const seen: Shape[] = [];
  const aborter = await new Watch(stack.kubeConfig).watch(
    `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${SHAPES}`,
    { resourceVersion, fieldSelector: `metadata.name=${name}` },
    (type: string, object: KubernetesObject) => {
      if (type === "ADDED" || type === "MODIFIED") seen.push(object as Shape);
    },
    () => undefined,
  );
  return { seen, stop: () => aborter.abort() };
}

/** `Ready=True (Available)`: a Shape's condition as a person reads it. */
function show(shape: Shape, type: "Ready" | "Synced"): string {
  const c = conditionOf(shape, type);
  return c ? `${type}=${c.status} (${c.reason})` : `no ${type}`;
}

describe("status never lies", () => {
  let stack: Stack;
  let controller: ControllerProcess;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("status-never-lies");
    controller = await stack.startController();
    ns = await stack.kube.createNamespace("never-lies");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const controllerCreates = async (): Promise<RequestLogEntry[]> =>
    (await stack.cloud.requests()).filter(
      (r) => r.clientId === "controller" && r.method === "POST" && r.path === "/v1/shapes",
    );

  test("a cloud shape deleted during an outage: Ready=False until a matching one exists again", async () => {
    await stack.kube.applyShape(ns, "lost", { type: "hexagon", color: "purple", size: 5 });
    const before = await waitConverged(stack, ns, "lost");
    const generation = before.shape.metadata.generation;
    const recorder = await recordShape(stack, ns, "lost", before.shape.metadata.resourceVersion ?? "0");
    try {
      // The cloud refuses every create; a person deletes our shape in the console.
      await stack.cloud.clearRequests();
      await stack.cloud.setFaults([{ method: "POST", path: "/v1/shapes", outage: true }]);
      await stack.cloud.delete(before.cloud.id);

      // The controller sees the deletion (the change feed), tries to create it again, and says so.
      const down = await waitFor("the Shape to say its cloud shape is gone, and why", async () => {
        const shape = await stack.kube.shape(ns, "lost");
        expect(conditionOf(shape, "Ready")).toMatchObject({
          status: "False",
          reason: "Absent",
          observedGeneration: generation,
        });
        expect(conditionOf(shape, "Synced")).toMatchObject({
          status: "False",
          reason: "CannotCreateCloudShape",
          observedGeneration: generation,
          message: expect.stringContaining("HTTP 503") as string,
        });
        return shape;
      });
      expect(conditionOf(down, "Ready")?.message).toContain(`${ns}.lost`);

      // It keeps trying (backoff), and each failed try still says Ready=False: it never slides back to True.
      await waitFor("three more refused creates", async () => {
        const refused = (await controllerCreates()).filter((r) => r.status === 503);
        expect(refused.length).toBeGreaterThanOrEqual(4);
      });
      const meanwhile = await stack.kube.shape(ns, "lost");
      expect(show(meanwhile, "Ready")).toBe("Ready=False (Absent)");
      expect((await stack.cloud.list()).filter((s) => s.name === `${ns}.lost`)).toEqual([]);

      // The outage ends: the shape is created again, and only now is the Shape Ready again.
      await stack.cloud.clearFaults();
      const after = await waitConverged(stack, ns, "lost");
      expect(after.cloud.id).not.toBe(before.cloud.id);
      expect(after.cloud).toMatchObject({ type: "hexagon", color: "purple", size: 5 });
      expect(show(after.shape, "Ready")).toBe("Ready=True (Available)");

      // Every status written since the deletion, in order: Ready went False once the controller knew, and
      // True again only with the new cloud shape in the status (never over nothing).
      const readies = recorder.seen.map((s) => show(s, "Ready"));
      const changes = readies.filter((r, i) => r !== readies[i - 1]);
      expect(changes, readies.join(" → ")).toEqual(["Ready=False (Absent)", "Ready=True (Available)"]);
      for (const shape of recorder.seen) {
        if (conditionOf(shape, "Ready")?.status === "True")
          expect(shape.status?.cloudId).toBe(after.cloud.id);
      }
      const created = (await controllerCreates()).filter((r) => r.status === 201);
      expect(created, "one create got through, after the outage").toHaveLength(1);
    } finally {
      recorder.stop();
    }
  });

  test("the controller logged nothing unexpected (only the refused creates, retried)", async () => {
    expect(
      await controller.problems({ allow: [/^(?=.*"reconcile failed, retrying")(?=.*HTTP 503)/] }),
    ).toEqual([]);
  });
});

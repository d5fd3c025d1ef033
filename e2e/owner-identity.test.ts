/**
 * Scenario: who "we" are. A controller's owner id (the `owner` tag on every cloud shape it creates) is, by
 * default, its CLUSTER's identity: `k8s-` and the uid of the kube-system namespace — the same for every
 * replica and restart, different for every other cluster sharing the cloud (scenario 9). It is read at
 * startup with exactly one grant (get namespaces/kube-system), logged, exported as a metric and recorded in
 * every ShapeRef. A controller that cannot read it writes NOTHING — a guessed id is how clusters collide — and
 * says why, until it can.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { CoreV1Api, RbacAuthorizationV1Api, type V1ClusterRole } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseAllDocuments } from "yaml";
import {
  CLOUD_TOKEN,
  CONTROLLER_NAMESPACE,
  ControllerProcess,
  METRIC,
  REPO_ROOT,
  type Stack,
  waitConverged,
  waitFor,
} from "@shapes/stack";
import { skipOnExistingCluster, startStack } from "./support/stack.ts";

describe("the owner id: one per cluster, read from the cluster, never guessed", () => {
  let stack: Stack;
  let ns: string;

  beforeAll(async () => {
    stack = await startStack("owner-identity");
    ns = await stack.kube.createNamespace("owner");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  test("by default it is k8s-<kube-system uid>: logged, exported, on the cloud shape and in the ShapeRef", async () => {
    const uid = (await stack.kubeConfig.makeApiClient(CoreV1Api).readNamespace({ name: "kube-system" }))
      .metadata?.uid;
    expect(stack.ownerId).toBe(`k8s-${uid}`);

    const controller = await stack.startController({ name: "default-owner" });
    await stack.kube.applyShape(ns, "red-square", { type: "square", color: "red" });
    const converged = await waitConverged(stack, ns, "red-square");
    expect(converged.cloud.tags.owner).toBe(stack.ownerId);
    expect(converged.ref.spec.owner, "ShapeRef spec.owner (kubectl get shaperefs: OWNER)").toBe(
      stack.ownerId,
    );

    const said = (await controller.logs()).find((l) => l.msg.startsWith("our owner id"));
    expect(said, "the startup log line").toMatchObject({ owner: stack.ownerId });
    const metrics = await controller.metrics();
    expect(metrics.sum(METRIC.ownerInfo, { owner_id: stack.ownerId })).toBe(1);
    await controller.stop();
  });

  test("without the grant to read it, the controller says why, is not ready and writes nothing; granted, it starts", async ({
    skip,
  }) => {
    skip(
      skipOnExistingCluster("creates a ServiceAccount, ClusterRole and ClusterRoleBinding of fixed names"),
    );
    // A service account with every grant of deploy/rbac.yaml's ClusterRole but the one on kube-system.
    const rbac = stack.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    const role = parseAllDocuments(await readFile(join(REPO_ROOT, "deploy", "rbac.yaml"), "utf8"))
      .map((d) => d.toJS() as V1ClusterRole)
      .find((o) => o.kind === "ClusterRole");
    const rules = (role?.rules ?? []).filter((r) => !r.resources?.includes("namespaces"));
    expect(rules.length, "only the namespaces rule is left out").toBe((role?.rules ?? []).length - 1);
    const sa = "no-identity";
    const subjects = [{ kind: "ServiceAccount", name: sa, namespace: CONTROLLER_NAMESPACE }];
    await stack.kubeConfig
      .makeApiClient(CoreV1Api)
      .createNamespacedServiceAccount({ namespace: CONTROLLER_NAMESPACE, body: { metadata: { name: sa } } });
    await rbac.createClusterRole({ body: { metadata: { name: sa }, rules } });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: sa },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: sa },
        subjects,
      },
    });
    const identity = await stack.serviceAccountIdentity(CONTROLLER_NAMESPACE, sa);

    const controller = new ControllerProcess({
      name: sa,
      artifactsDir: stack.artifactsDir,
      kubeconfigPath: identity.kubeconfigPath,
      cloudUrl: stack.cloud.url,
      cloudToken: CLOUD_TOKEN,
    });
    await stack.kube.applyShape(ns, "waiting", { type: "circle", color: "blue" });
    try {
      await controller.start({ waitReady: false });
      // It says why, with what to do, and tries again (twice seen: it is retrying, not dead).
      const refusals = await waitFor("two 'cannot know our owner id' lines", async () => {
        const lines = (await controller.logs()).filter((l) => l.msg.startsWith("cannot know our owner id"));
        expect(lines.length).toBeGreaterThanOrEqual(2);
        return lines;
      });
      expect(JSON.stringify(refusals[0])).toMatch(/403.*namespaces\/kube-system.*--owner-id/);
      expect(controller.running, "still running, retrying").toBe(true);
      expect(await controller.isReady(), "/readyz").toBe(false);
      // Nothing written anywhere: no cloud request at all, no finalizer, no ShapeRef.
      expect((await stack.cloud.requests()).filter((r) => r.clientId === sa)).toEqual([]);
      expect((await stack.kube.shape(ns, "waiting")).metadata.finalizers ?? []).toEqual([]);
      expect(await stack.kube.getShapeRef(`${ns}.waiting`)).toBeUndefined();

      // Granted (the project's own ClusterRole, which has the one rule), it reads the id and gets to work.
      await rbac.createClusterRoleBinding({
        body: {
          metadata: { name: `${sa}-full` },
          roleRef: {
            apiGroup: "rbac.authorization.k8s.io",
            kind: "ClusterRole",
            name: role?.metadata?.name ?? "",
          },
          subjects,
        },
      });
      await controller.waitReady(120_000);
      const converged = await waitConverged(stack, ns, "waiting", { timeoutMs: 120_000 });
      expect(converged.cloud.tags.owner).toBe(stack.ownerId);
    } finally {
      await controller.stop();
    }
  });
});

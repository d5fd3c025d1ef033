/**
 * Scenario: uninstalling deletes nothing outside. `kubectl delete crd shapes.shapes.example.com` (an
 * uninstall, or a mistake) deletes every Shape at once: the API server marks the CRD as being deleted, then
 * deletes its Shapes, and each one's finalizer runs. With `deletionPolicy: Delete` each would take its cloud
 * shape with it. Instead the controller reads the CRD (one live GET per deletion), sees it being deleted, and
 * RELEASES each cloud shape (our owner tags stripped, as for Orphan): everything stays in the cloud, foreign
 * from then on, and the controller sends no DELETE (library/src/reconcile/uninstall.ts).
 *
 * The read takes one grant, `get` on `customresourcedefinitions` for this one CRD (deploy/rbac.yaml). Without
 * it the controller cannot tell an uninstall from a deletion, so it deletes nothing and says why.
 *
 * With `--delete-on-uninstall` the controller deletes as before: the last test installs the CRDs again and
 * shows it. The file deletes the Shape CRD of its own control plane, so it skips on an existing cluster (it
 * would uninstall the project there).
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  ApiextensionsV1Api,
  CoreV1Api,
  RbacAuthorizationV1Api,
  type V1ClusterRole,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseAllDocuments } from "yaml";
import { orUndefined } from "reconcile-kit/parts";
import { installCRDs } from "@shapes/envtest";
import {
  CLOUD_TOKEN,
  conditionOf,
  CONTROLLER_NAMESPACE,
  ControllerProcess,
  REPO_ROOT,
  type Stack,
  waitConverged,
  waitFor,
} from "@shapes/stack";
import { skipOnExistingCluster, startStack } from "./support/stack.ts";

const CRD = "shapes.shapes.example.com";
/** Our three owner tags (controller/src/shapes/api.ts): what a release strips, and nothing else. */
const OWNER_TAGS = ["owner", "k8s-uid", "k8s-name"];

describe.skipIf(skipOnExistingCluster("deletes the Shape CRD (an uninstall) and binds RBAC of fixed names"))(
  "uninstalling deletes nothing",
  () => {
    let stack: Stack;
    let ns: string;

    beforeAll(async () => {
      stack = await startStack("uninstall-deletes-nothing");
      ns = await stack.kube.createNamespace("uninstall");
    });
    afterAll(async () => {
      await stack?.stop();
    });

    test("without get on its CRD the controller deletes nothing and says why; granted, the deletion goes through", async () => {
      // A service account with every grant of deploy/rbac.yaml's ClusterRole but the one on the CRD.
      const rbac = stack.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
      const role = parseAllDocuments(await readFile(join(REPO_ROOT, "deploy", "rbac.yaml"), "utf8"))
        .map((d) => d.toJS() as V1ClusterRole)
        .find((o) => o.kind === "ClusterRole");
      const crdRule = (role?.rules ?? []).filter((r) => r.resources?.includes("customresourcedefinitions"));
      expect(crdRule, "deploy/rbac.yaml: exactly get on this one CRD").toEqual([
        {
          apiGroups: ["apiextensions.k8s.io"],
          resources: ["customresourcedefinitions"],
          resourceNames: [CRD],
          verbs: ["get"],
        },
      ]);
      const rules = (role?.rules ?? []).filter((r) => !r.resources?.includes("customresourcedefinitions"));
      const sa = "no-crd-read";
      const subjects = [{ kind: "ServiceAccount", name: sa, namespace: CONTROLLER_NAMESPACE }];
      await stack.kubeConfig.makeApiClient(CoreV1Api).createNamespacedServiceAccount({
        namespace: CONTROLLER_NAMESPACE,
        body: { metadata: { name: sa } },
      });
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
      try {
        await controller.start();
        await stack.kube.applyShape(ns, "held", { type: "square", color: "red" });
        const { cloud } = await waitConverged(stack, ns, "held");

        await stack.kube.deleteShape(ns, "held");
        // It says why: it cannot tell an uninstall from a deletion, so nothing is deleted; and the grant.
        const refused = await waitFor(
          "the Shape to report that it cannot check for an uninstall",
          async () => {
            const shape = await stack.kube.shape(ns, "held");
            expect(conditionOf(shape, "Synced")).toMatchObject({
              status: "False",
              reason: "CannotCheckUninstall",
            });
            return shape;
          },
        );
        expect(conditionOf(refused, "Synced")?.message).toMatch(
          new RegExp(
            `^cannot tell whether the CRD ${CRD} is being deleted \\(an uninstall\\), so nothing is deleted \\(the controller needs get on customresourcedefinitions, resourceNames \\[${CRD}\\], in its ClusterRole\\): .*403`,
          ),
        );
        expect(conditionOf(refused, "Ready")).toMatchObject({ status: "False", reason: "Deleting" });
        // It tries again (backoff), and still deletes nothing: the shape is there, ours, untouched.
        await waitFor("a second refusal in the controller's log", async () => {
          const refusals = (await controller.logs()).filter((l) =>
            JSON.stringify(l).includes("cannot tell whether the CRD"),
          );
          expect(refusals.length).toBeGreaterThanOrEqual(2);
        });
        expect(await stack.cloud.get(cloud.id), "the cloud shape, untouched").toEqual(cloud);
        const writes = (await stack.cloud.requests()).filter((r) => r.clientId === sa);
        expect(
          writes.filter((r) => r.method === "DELETE"),
          "no DELETE from the controller",
        ).toEqual([]);
        expect((await stack.kube.shape(ns, "held")).metadata.deletionTimestamp).toBeDefined();

        // Granted (the project's own ClusterRole, which has the rule), the deletion goes through.
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
        await waitFor(
          "the Shape and its cloud shape to be gone",
          async () => {
            expect(await stack.kube.getShape(ns, "held"), "Shape").toBeUndefined();
            expect(await stack.cloud.get(cloud.id), "cloud shape").toBeUndefined();
          },
          { timeoutMs: 120_000 },
        );
        const reasons = (await stack.kube.eventsFor(ns, "held")).map((e) => e.reason);
        expect(reasons).toContain("DeletedCloudShape");
        expect(reasons).not.toContain("ReleasedOnUninstall");
      } finally {
        await controller.stop();
      }
    });

    test("kubectl delete crd: every Shape goes, every cloud shape stays, released; no DELETE", async () => {
      const controller = await stack.startController();
      await stack.kube.applyShape(ns, "red-square", { type: "square", color: "red" });
      await stack.kube.applyShape(ns, "blue-circle", {
        type: "circle",
        color: "blue",
        deletionPolicy: "Delete",
      });
      const ours = [
        (await waitConverged(stack, ns, "red-square")).cloud,
        (await waitConverged(stack, ns, "blue-circle")).cloud,
      ];
      // Someone else's shape in the same cloud: an uninstall of ours is none of its business.
      const foreign = await stack.cloud.create({
        name: `${ns}.someone-elses`,
        type: "triangle",
        color: "green",
        tags: { owner: "someone-else", team: "blue" },
      });
      const seqBefore = Math.max(0, ...(await stack.cloud.requests()).map((r) => r.seq));

      // `kubectl delete crd shapes.shapes.example.com`, as the cluster admin.
      const crds = stack.kubeConfig.makeApiClient(ApiextensionsV1Api);
      await crds.deleteCustomResourceDefinition({ name: CRD });
      await waitFor(
        "the Shapes, their ShapeRefs and the Shape CRD to be gone",
        async () => {
          expect(
            await orUndefined(crds.readCustomResourceDefinition({ name: CRD })),
            "the CRD",
          ).toBeUndefined();
          for (const shape of ours) {
            expect(await stack.kube.getShapeRef(shape.name), `ShapeRef ${shape.name}`).toBeUndefined();
          }
        },
        { timeoutMs: 120_000 },
      );

      // Every cloud shape is still there, as it was, without our owner tags (released); the foreign one untouched.
      for (const before of ours) {
        const after = await stack.cloud.get(before.id);
        expect(after, `cloud shape ${before.name}`).toBeDefined();
        const { tags: tagsBefore, revision: _r, updatedAt: _u, ...fieldsBefore } = before;
        expect(after).toMatchObject(fieldsBefore);
        expect(after?.tags, `${before.name}: released, our owner tags gone`).toEqual(
          Object.fromEntries(Object.entries(tagsBefore).filter(([k]) => !OWNER_TAGS.includes(k))),
        );
      }
      expect(await stack.cloud.get(foreign.id), "the foreign shape, untouched").toEqual(foreign);

      // Since the uninstall began: no DELETE at all, and the controller's only writes were the releases.
      const log = (await stack.cloud.requests()).filter((r) => r.seq > seqBefore);
      expect(
        log.filter((r) => r.method === "DELETE"),
        "no DELETE",
      ).toEqual([]);
      const writes = log.filter((r) => r.clientId === "controller");
      expect(writes.map((r) => `${r.method} ${r.path} ${r.status}`).toSorted()).toEqual(
        ours.map((s) => `PATCH /v1/shapes/${s.id} 200`).toSorted(),
      );

      // Each Shape's Events say what happened, and why.
      for (const name of ["red-square", "blue-circle"]) {
        const released = (await stack.kube.eventsFor(ns, name)).filter(
          (e) => e.reason === "ReleasedOnUninstall",
        );
        expect(released, `${name}: the ReleasedOnUninstall Event`).toHaveLength(1);
        expect(released[0]?.message).toBe(
          `Cloud shape ${ns}.${name} (${ours.find((s) => s.name === `${ns}.${name}`)?.id}) released, not deleted: the CRD ${CRD} is being deleted (uninstall); it stays, without our owner tags`,
        );
      }
      // It had the grant: no 403 anywhere in its log.
      expect((await controller.problems()).filter((p) => /\b403\b|forbidden/i.test(p))).toEqual([]);
      await controller.stop();
    });

    test("installed again, a controller started with --delete-on-uninstall deletes on an uninstall, as asked", async () => {
      await installCRDs(stack.kubeConfig);
      const controller = await stack.startController({
        name: "deleting",
        extraArgs: ["--delete-on-uninstall"],
      });
      await stack.kube.applyShape(ns, "doomed", { type: "hexagon", color: "pink" });
      const { cloud } = await waitConverged(stack, ns, "doomed");

      const crds = stack.kubeConfig.makeApiClient(ApiextensionsV1Api);
      await crds.deleteCustomResourceDefinition({ name: CRD });
      await waitFor(
        "the Shape CRD and the cloud shape to be gone",
        async () => {
          expect(
            await orUndefined(crds.readCustomResourceDefinition({ name: CRD })),
            "the CRD",
          ).toBeUndefined();
          expect(await stack.cloud.get(cloud.id), "the cloud shape").toBeUndefined();
        },
        { timeoutMs: 120_000 },
      );
      const deletes = (await stack.cloud.requests()).filter(
        (r) => r.method === "DELETE" && r.clientId === "deleting",
      );
      expect(deletes.map((r) => `${r.path} ${r.status}`)).toEqual([`/v1/shapes/${cloud.id} 204`]);
      const reasons = (await stack.kube.eventsFor(ns, "doomed")).map((e) => e.reason);
      expect(reasons).toContain("DeletedCloudShape");
      expect(reasons).not.toContain("ReleasedOnUninstall");
      await controller.stop();
    });
  },
);

/**
 * The lean kubeconfig loader (library/src/kube/kubeconfig.ts) and the keep-alive client on it (KubeHttp),
 * against the real kube-apiserver, without client-node on the request path: the admin's kubeconfig (client
 * certificate) lists namespaces and creates a ConfigMap; a pod's view of the cluster (KUBERNETES_SERVICE_HOST
 * and PORT, the service account's ca.crt, token and namespace in a folder) does the same with a real service
 * account token, and when the token file is rewritten the next read after its time-to-live sends the new
 * token — a revoked one is refused, the fresh one accepted.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, type KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { connectKubeconfig, KubeApiError, KubeHttp, loadKubeconfig } from "reconcile-kit/parts";
import type { ControlPlane } from "@shapes/envtest";
import { startControlPlane } from "./support/envtest.ts";
import { createNamespace, eventually, uniqueName } from "./support/kube.ts";

interface List {
  items: { metadata: { name: string } }[];
}

let cp: ControlPlane;
let kc: KubeConfig;
let ns: string;
let dir: string;
const roleName = uniqueName("lean-kubeconfig");

beforeAll(async () => {
  cp = await startControlPlane();
  kc = cp.kubeConfig();
  ns = await createNamespace(kc, "lean-kubeconfig");
  dir = await mkdtemp(join(tmpdir(), "lean-kubeconfig-"));
});

afterAll(async () => {
  const rbac = kc?.makeApiClient(RbacAuthorizationV1Api);
  await rbac?.deleteClusterRoleBinding({ name: roleName }).catch(() => {});
  await rbac?.deleteClusterRole({ name: roleName }).catch(() => {});
  await kc
    ?.makeApiClient(CoreV1Api)
    .deleteNamespace({ name: ns })
    .catch(() => {});
  if (dir) await rm(dir, { recursive: true, force: true });
  await cp?.stop();
});

/** The names of the ConfigMaps of `ns`, read through client-node (not the client under test). */
async function configMapNames(): Promise<string[]> {
  const list = await kc.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: ns });
  return list.items.map((cm) => cm.metadata?.name ?? "");
}

describe("the lean loader's connection, over KubeHttp, against the real API server", () => {
  test("the admin's kubeconfig (client certificate): lists namespaces, creates a ConfigMap", async () => {
    // A local control plane's admin kubeconfig is a client certificate; an existing cluster's may need client-node.
    if (cp.kind === "local") expect(loadKubeconfig({ path: cp.kubeconfigPath }).kind).toBe("lean");
    const connection = await connectKubeconfig({ path: cp.kubeconfigPath });
    const client = new KubeHttp(connection);
    try {
      const namespaces = await client.request<List>("GET", "/api/v1/namespaces");
      expect(namespaces.items.map((n) => n.metadata.name)).toContain(ns);
      await client.request("POST", `/api/v1/namespaces/${ns}/configmaps`, {
        metadata: { name: "from-admin" },
        data: { via: "lean" },
      });
    } finally {
      await client.close();
    }
    expect(await configMapNames()).toContain("from-admin");
  });

  test("in-cluster (service host and port, the service account's files): lists, creates, and follows the token file when it rotates", async () => {
    // The service account, allowed to list namespaces and create ConfigMaps, and its token (TokenRequest).
    const core = kc.makeApiClient(CoreV1Api);
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "controller" } } });
    await rbac.createClusterRole({
      body: {
        metadata: { name: roleName },
        rules: [
          { apiGroups: [""], resources: ["namespaces"], verbs: ["list"] },
          { apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
        ],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: roleName },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: roleName },
        subjects: [{ kind: "ServiceAccount", name: "controller", namespace: ns }],
      },
    });
    const newToken = async () => {
      const answer = await core.createNamespacedServiceAccountToken({
        namespace: ns,
        name: "controller",
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      const token = answer.status?.token;
      if (!token) throw new Error("the TokenRequest answered without a token");
      return token;
    };

    // The folder a pod has at /var/run/secrets/kubernetes.io/serviceaccount, and the variables it has.
    const admin = await connectKubeconfig({ path: cp.kubeconfigPath });
    const ca = (await admin.credentials()).ca;
    if (!ca) throw new Error("the admin kubeconfig has no CA");
    const sa = join(dir, "serviceaccount");
    await mkdir(sa);
    await writeFile(join(sa, "ca.crt"), ca);
    await writeFile(join(sa, "token"), await newToken());
    await writeFile(join(sa, "namespace"), ns);
    const server = new URL(cp.server);
    let now = Date.now();
    const verdict = loadKubeconfig({
      env: {
        KUBERNETES_SERVICE_HOST: server.hostname.replace(/^\[|\]$/g, ""),
        KUBERNETES_SERVICE_PORT: server.port || "443",
      },
      serviceAccountDir: sa,
      now: () => now,
    });
    if (verdict.kind !== "lean") throw new Error(`expected the in-cluster connection, got ${verdict.kind}`);
    expect(verdict.connection).toMatchObject({ source: "in-cluster", namespace: ns });
    const client = new KubeHttp(verdict.connection, { authTtlMs: 0 });
    const namespace = verdict.connection.namespace ?? "";
    const create = (name: string) =>
      client.request("POST", `/api/v1/namespaces/${namespace}/configmaps`, { metadata: { name } });
    try {
      // RBAC's cache takes a moment to see the new binding.
      await eventually("the service account may list namespaces", async () => {
        try {
          return await client.request<List>("GET", "/api/v1/namespaces");
        } catch (err) {
          if (err instanceof KubeApiError && err.code === 403) return undefined;
          throw err;
        }
      });
      await create("from-pod");

      // The kubelet rewrites the token file: with a token the API server does not know, refused (401) once
      // the time-to-live passed; with a fresh one, accepted.
      await writeFile(join(sa, "token"), "not-a-token");
      now += 60_000;
      await expect(create("refused")).rejects.toMatchObject({ code: 401 });
      await writeFile(join(sa, "token"), await newToken());
      now += 60_000;
      await create("after-rotation");
    } finally {
      await client.close();
    }
    expect(await configMapNames()).toEqual(expect.arrayContaining(["from-pod", "after-rotation"]));
    expect(await configMapNames()).not.toContain("refused");
  });
});

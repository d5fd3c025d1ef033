/**
 * The Kubernetes side of a harness, as a person with kubectl would do it: apply a plugin's manifests, give
 * its controller a service account's identity, name things uniquely. All calls go to the API server of the
 * KubeConfig given (an admin's).
 */
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  type KubernetesObject,
} from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import {
  apiMessage,
  type Identity,
  loadKubeConfig,
  serviceAccountUser,
  writePrivateFile,
} from "@shapes/envtest";
import { KubeHttp } from "../kube/kube-http.ts";
import { kubeConnectionOf } from "../kube/kubeconfig.ts";

/** The field manager of what the harness applies when the caller names none. */
export const HARNESS_FIELD_MANAGER = "reconcile-kit-harness";

/**
 * Runs `use` with the library's Kubernetes client on `kubeConfig`'s current context, and closes the client.
 *
 * # Guarantees
 * - The client is closed when `use` settles, whether it resolved or rejected.
 */
export async function withKubeHttp<T>(
  kubeConfig: KubeConfig,
  use: (http: KubeHttp) => Promise<T>,
): Promise<T> {
  const http = new KubeHttp(kubeConnectionOf(kubeConfig));
  try {
    return await use(http);
  } finally {
    await http.close();
  }
}

/** How long a token of {@link serviceAccountTokenIdentity} is asked to last (the API server may cap it). */
export const SERVICE_ACCOUNT_TOKEN_SECONDS = 24 * 60 * 60;

/**
 * The identity of the service account `namespace/name` as a real pod would have it: a token the API server
 * issues for it (TokenRequest, `POST .../serviceaccounts/<name>/token`), in a kubeconfig written to `dir`
 * (0600) with the current cluster of `kubeConfig` (an admin's, allowed to create tokens).
 *
 * # Guarantees
 * - Works on any cluster: nothing is impersonated and no CA key is needed.
 *
 * # Assumptions
 * - The service account exists. The token expires after {@link SERVICE_ACCOUNT_TOKEN_SECONDS} (or the API
 *   server's maximum, if lower); it is not renewed.
 *
 * # Errors
 * Rejects, naming the service account and the API server's message, when no token is issued.
 */
export async function serviceAccountTokenIdentity(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  dir: string,
): Promise<Identity> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster)
    throw new Error("cannot write a service-account kubeconfig: the admin's has no current cluster");
  let token: string;
  try {
    const answer = await kubeConfig.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
      namespace,
      name,
      // No audiences: the API server's own (what a client of it needs).
      body: { spec: { audiences: [], expirationSeconds: SERVICE_ACCOUNT_TOKEN_SECONDS } },
    });
    token = answer.status?.token ?? "";
  } catch (error) {
    throw new Error(`cannot get a token for the service account ${namespace}/${name}: ${apiMessage(error)}`, {
      cause: error,
    });
  }
  if (!token)
    throw new Error(`cannot get a token for the service account ${namespace}/${name}: none returned`);
  const { user, groups } = serviceAccountUser(namespace, name);
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: user, token }],
    contexts: [{ name: "service-account", cluster: cluster.name, user }],
    currentContext: "service-account",
  });
  const path = join(dir, `${namespace}.${name}.${randomBytes(3).toString("hex")}.kubeconfig`);
  await writePrivateFile(path, kc.exportConfig());
  return { user, groups, kubeconfigPath: path, kubeConfig: () => loadKubeConfig(path) };
}

/**
 * Server-side applies every object of a YAML file (several documents allowed), in order, as `fieldManager`
 * (default {@link HARNESS_FIELD_MANAGER}), forcing conflicts: idempotent, like `kubectl apply
 * --server-side --force-conflicts`.
 *
 * # Errors
 * Rejects on a document that does not parse, or with the kind and name of the first object the API server
 * refuses (the objects before it stay applied).
 */
export async function applyManifestFile(
  kc: KubeConfig,
  path: string,
  fieldManager: string = HARNESS_FIELD_MANAGER,
): Promise<KubernetesObject[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const applied: KubernetesObject[] = [];
  for (const doc of parseAllDocuments(await readFile(path, "utf8"))) {
    if (doc.errors.length > 0) throw new Error(`cannot parse ${path}: ${doc.errors[0]?.message}`);
    const object = doc.toJS() as KubernetesObject | null;
    if (!object) continue;
    try {
      applied.push(
        await api.patch(object, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply),
      );
    } catch (error) {
      throw new Error(
        `cannot apply ${object.kind ?? "?"} ${object.metadata?.name ?? "?"} from ${path}: ${apiMessage(error)}`,
        { cause: error },
      );
    }
  }
  return applied;
}

/** A fresh name `<prefix>-<6 hex>`, so tests on one cluster never see each other's objects. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString("hex")}`;
}

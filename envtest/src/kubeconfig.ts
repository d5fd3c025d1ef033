/**
 * Kubeconfig files: the admin's and each test identity's, for a local control plane (certificates
 * embedded), and impersonating copies of an existing cluster's kubeconfig. Files are written 0600: they
 * hold private keys.
 */
import { chmod, rename, writeFile } from "node:fs/promises";
import { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";

/** What a client-certificate kubeconfig holds. */
export interface KubeconfigInput {
  /** The API server URL, e.g. https://127.0.0.1:6443. */
  server: string;
  caPem: string;
  /** The client certificate and its key (PEM). */
  certPem: string;
  keyPem: string;
  /** The user entry's name (informational). */
  userName: string;
  /** The cluster and context name. Default `envtest`. */
  contextName?: string;
}

/** Renders a kubeconfig (YAML) with the CA and client certificate embedded. */
export function renderKubeconfig(input: KubeconfigInput): string {
  const context = input.contextName ?? "envtest";
  const b64 = (pem: string) => Buffer.from(pem).toString("base64");
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      { name: context, cluster: { server: input.server, "certificate-authority-data": b64(input.caPem) } },
    ],
    users: [
      {
        name: input.userName,
        user: { "client-certificate-data": b64(input.certPem), "client-key-data": b64(input.keyPem) },
      },
    ],
    contexts: [{ name: context, context: { cluster: context, user: input.userName } }],
    "current-context": context,
    preferences: {},
  });
}

/**
 * A kubeconfig for the current context of `source` that impersonates `user` (the `as:` field, sent as the
 * Impersonate-User header). Used for identities on an existing cluster, where we hold no CA key to mint
 * certificates. Throws when `source` has no current cluster or user.
 */
export function renderImpersonatingKubeconfig(source: KubeConfig, user: string): string {
  const cluster = source.getCurrentCluster();
  const current = source.getCurrentUser();
  if (!cluster || !current) {
    throw new Error("cannot impersonate: the kubeconfig has no current context with a cluster and a user");
  }
  const copy = new KubeConfig();
  copy.loadFromOptions({
    clusters: [cluster],
    users: [{ ...current, impersonateUser: user }],
    contexts: [{ name: "impersonate", cluster: cluster.name, user: current.name }],
    currentContext: "impersonate",
  });
  return stringify(JSON.parse(copy.exportConfig()));
}

/** Writes a file readable only by its owner (0600), atomically (temp file + rename). */
export async function writePrivateFile(path: string, content: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, content, { mode: 0o600 });
  await chmod(tmp, 0o600); // the umask may have cleared bits; never added any, but be explicit
  await rename(tmp, path);
}

/** Loads a kubeconfig file into a client-node KubeConfig. */
export function loadKubeConfig(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

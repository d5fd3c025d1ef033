/**
 * A write tap in front of the Kubernetes API server (tap.ts), for a controller that must reach it through
 * the tap: the tap serves TLS with a CA of its own (client-node talks https only), and a kubeconfig for the
 * controller points to it. Upstream the tap authenticates as the identity whose kubeconfig it was opened
 * with (its client certificate, or its token and impersonation headers), so the API server sees that
 * identity and its RBAC, never the tap. The tap asks the controller for no credentials: the client
 * certificate in the controller's kubeconfig is only there because a kubeconfig names a user.
 */
import type { OutgoingHttpHeaders } from "node:http";
import type { RequestOptions } from "node:https";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import {
  createCertificateAuthority,
  issueClientCertificate,
  issueServingCertificate,
  renderKubeconfig,
  writePrivateFile,
} from "@shapes/envtest";
import { WriteTapProxy, type UpstreamOptions } from "./tap.ts";

/** The user the controller's kubeconfig names (the tap ignores it; the API server never sees it). */
export const KUBE_TAP_USER = "write-tap";

/**
 * Opens a tap (side "kube") in front of the API server of the kubeconfig at `identityKubeconfigPath`
 * (its current context), and writes into `dir` a kubeconfig (0600) that reaches the API server through it.
 * Start the controller with that kubeconfig; close the tap when done.
 *
 * # Guarantees
 * - The API server sees the identity of `identityKubeconfigPath` (its client certificate, or its token and
 *   impersonation headers) and its RBAC, never the tap; the tap's CA is its own, made for this tap only.
 *
 * # Errors
 * Rejects when the kubeconfig has no current cluster, or the kubeconfig for the tap cannot be written (the
 * tap is then closed).
 */
export async function openKubeTap(
  identityKubeconfigPath: string,
  dir: string,
): Promise<{ tap: WriteTapProxy; kubeconfigPath: string }> {
  const identity = new KubeConfig();
  identity.loadFromFile(identityKubeconfigPath);
  const cluster = identity.getCurrentCluster();
  if (!cluster) throw new Error(`cannot open a kube tap: ${identityKubeconfigPath} has no current cluster`);
  const upstream = await upstreamOf(identity);
  const ca = await createCertificateAuthority("write-tap-ca");
  const [serving, client] = await Promise.all([
    issueServingCertificate(ca, {
      commonName: "write-tap",
      dnsNames: ["localhost"],
      ipAddresses: ["127.0.0.1"],
    }),
    issueClientCertificate(ca, { user: KUBE_TAP_USER }),
  ]);
  const tap = await WriteTapProxy.start({
    side: "kube",
    target: cluster.server,
    upstream,
    serveTls: serving,
  });
  try {
    const kubeconfigPath = join(dir, "kube-tap.kubeconfig");
    await writePrivateFile(
      kubeconfigPath,
      renderKubeconfig({
        server: tap.url,
        caPem: ca.certPem,
        certPem: client.certPem,
        keyPem: client.keyPem,
        userName: KUBE_TAP_USER,
        contextName: "write-tap",
      }),
    );
    return { tap, kubeconfigPath };
  } catch (error) {
    await tap.close();
    throw error;
  }
}

/** The identity's TLS material and auth headers, as client-node applies them to a request. */
async function upstreamOf(identity: KubeConfig): Promise<UpstreamOptions> {
  const options: RequestOptions = {};
  await identity.applyToHTTPSOptions(options);
  const headers: OutgoingHttpHeaders = isHeaderObject(options.headers) ? { ...options.headers } : {};
  if (options.auth) headers.authorization = `Basic ${Buffer.from(options.auth).toString("base64")}`;
  return {
    ...(options.ca ? { ca: options.ca } : {}),
    ...(options.cert ? { cert: options.cert } : {}),
    ...(options.key ? { key: options.key } : {}),
    ...(options.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: options.rejectUnauthorized }),
    ...(options.servername ? { servername: options.servername } : {}),
    headers,
  };
}

/** Headers as an object (client-node's form), not Node's flat list of names and values. */
function isHeaderObject(headers: RequestOptions["headers"]): headers is OutgoingHttpHeaders {
  return headers !== undefined && !Array.isArray(headers);
}

/**
 * A stand-in for an API server's transport, for client tests: a real HTTPS server on 127.0.0.1 with its own
 * CA and a client certificate for `user`, and the kubeconfig that reaches it. What it answers is the test's
 * `handler`; it counts TLS connections (how a test sees that a client pools them).
 */
import type { RequestListener } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { renderKubeconfig } from "./kubeconfig.ts";
import { createCertificateAuthority, issueClientCertificate, issueServingCertificate } from "./pki.ts";

/** A running stub: its kubeconfig, its connection count, and how to stop it. */
export interface TlsApiStub {
  server: Server;
  /** A kubeconfig (YAML) for the server, as `user` with its client certificate. */
  kubeconfigYaml: string;
  /** TLS connections accepted so far; a test may set it back to 0. */
  stats: { connections: number };
  /** A fresh KubeConfig loaded from {@link kubeconfigYaml}. */
  kubeConfig(): KubeConfig;
  close(): Promise<void>;
}

/** Options of {@link startTlsApiStub}. */
export interface TlsApiStubOptions {
  /** The client certificate's user. Default `admin`. */
  user?: string;
  /** Require and verify the client's certificate (mutual TLS, as an API server does). Default true. */
  requestCert?: boolean;
}

/** Starts a {@link TlsApiStub} answering with `handler`. */
export async function startTlsApiStub(
  handler: RequestListener,
  { user = "admin", requestCert = true }: TlsApiStubOptions = {},
): Promise<TlsApiStub> {
  const ca = await createCertificateAuthority();
  const serving = await issueServingCertificate(ca);
  const client = await issueClientCertificate(ca, { user });
  const server = createServer(
    {
      cert: serving.certPem,
      key: serving.keyPem,
      ca: ca.certPem,
      ...(requestCert ? { requestCert: true, rejectUnauthorized: true } : {}),
    },
    handler,
  );
  const stats = { connections: 0 };
  server.on("secureConnection", () => stats.connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const kubeconfigYaml = renderKubeconfig({
    server: `https://127.0.0.1:${port}`,
    caPem: ca.certPem,
    certPem: client.certPem,
    keyPem: client.keyPem,
    userName: user,
  });
  return {
    server,
    kubeconfigYaml,
    stats,
    kubeConfig() {
      const kc = new KubeConfig();
      kc.loadFromString(kubeconfigYaml);
      return kc;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

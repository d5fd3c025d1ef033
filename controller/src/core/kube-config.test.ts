import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderKubeconfig } from "../../../envtest/src/kubeconfig.ts";
import {
  createCertificateAuthority,
  issueClientCertificate,
  issueServingCertificate,
} from "../../../envtest/src/pki.ts";
import { PooledKubeConfig } from "./kube-config.ts";

/** A TLS server that answers every request with an empty NamespaceList and counts TLS connections. */
let server: Server;
let connections = 0;
let kubeconfigYaml = "";

beforeAll(async () => {
  const ca = await createCertificateAuthority();
  const serving = await issueServingCertificate(ca);
  const client = await issueClientCertificate(ca, { user: "test" });
  server = createServer({ cert: serving.certPem, key: serving.keyPem, ca: ca.certPem }, (_req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ kind: "NamespaceList", apiVersion: "v1", metadata: {}, items: [] }));
  });
  server.on("secureConnection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  kubeconfigYaml = renderKubeconfig({
    server: `https://127.0.0.1:${port}`,
    caPem: ca.certPem,
    certPem: client.certPem,
    keyPem: client.keyPem,
    userName: "test",
  });
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** Sends `n` requests one after another through an API client of `kubeConfig`; returns the TLS connections opened. */
async function connectionsFor(kubeConfig: KubeConfig, n: number): Promise<number> {
  kubeConfig.loadFromString(kubeconfigYaml);
  const api = kubeConfig.makeApiClient(CoreV1Api);
  const before = connections;
  for (let i = 0; i < n; i++) await api.listNamespace();
  return connections - before;
}

describe("PooledKubeConfig", () => {
  it("reuses its connections: 20 sequential requests open at most 2", async () => {
    // undici may open a second connection while the first is still being released; never one per request.
    const kubeConfig = new PooledKubeConfig();
    expect(await connectionsFor(kubeConfig, 20)).toBeLessThanOrEqual(2);
    await kubeConfig.closePools();
  });

  it("is needed: client-node's own KubeConfig opens a connection per request", async () => {
    // The reason PooledKubeConfig exists. When this starts failing, client-node pools by itself: delete it.
    expect(await connectionsFor(new KubeConfig(), 5)).toBe(5);
  });

  it("shares the pool between the API clients of one config", async () => {
    const kubeConfig = new PooledKubeConfig();
    kubeConfig.loadFromString(kubeconfigYaml);
    const a = kubeConfig.makeApiClient(CoreV1Api);
    const b = kubeConfig.makeApiClient(CoreV1Api);
    const before = connections;
    for (let i = 0; i < 10; i++) await Promise.all([a.listNamespace(), b.listNamespace()]);
    expect(connections - before).toBeLessThanOrEqual(4);
    await kubeConfig.closePools();
  });
});

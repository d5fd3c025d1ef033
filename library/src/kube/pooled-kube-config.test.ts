import { CoreV1Api, CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { beforeRequest, PooledKubeConfig } from "./pooled-kube-config.ts";
import { startTlsApiStub, type TlsApiStub } from "@shapes/envtest";

/** A TLS server that answers every request with an empty NamespaceList and counts TLS connections. */
let stub: TlsApiStub;
/** The path and query of every request the stub answered, in order. */
const urls: string[] = [];

beforeAll(async () => {
  stub = await startTlsApiStub(
    (req, res) => {
      urls.push(req.url ?? "");
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ kind: "NamespaceList", apiVersion: "v1", metadata: {}, items: [] }));
    },
    { user: "test", requestCert: false },
  );
});

afterAll(() => stub.close());

/** Sends `n` requests one after another through an API client of `kubeConfig`; returns the TLS connections opened. */
async function connectionsFor(kubeConfig: KubeConfig, n: number): Promise<number> {
  kubeConfig.loadFromString(stub.kubeconfigYaml);
  const api = kubeConfig.makeApiClient(CoreV1Api);
  const before = stub.stats.connections;
  for (let i = 0; i < n; i++) await api.listNamespace();
  return stub.stats.connections - before;
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
    kubeConfig.loadFromString(stub.kubeconfigYaml);
    const a = kubeConfig.makeApiClient(CoreV1Api);
    const b = kubeConfig.makeApiClient(CoreV1Api);
    const before = stub.stats.connections;
    for (let i = 0; i < 10; i++) await Promise.all([a.listNamespace(), b.listNamespace()]);
    expect(stub.stats.connections - before).toBeLessThanOrEqual(4);
    await kubeConfig.closePools();
  });
});

describe("beforeRequest", () => {
  it.each([
    {
      reason: "with it: the parameter the generated call has no argument for is sent",
      selector: "shardRange(x)",
    },
    { reason: "without it: the call's own URL", selector: undefined },
  ])("$reason", async ({ selector }) => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(stub.kubeconfigYaml);
    const api = kubeConfig.makeApiClient(CustomObjectsApi);
    await api.listCustomObjectForAllNamespaces(
      { group: "shapes.example.com", version: "v1alpha1", resourcePlural: "shapes" },
      selector === undefined
        ? undefined
        : beforeRequest((request) => request.setQueryParam("shardSelector", selector)),
    );
    const url = new URL(urls.at(-1) ?? "", "https://x");
    expect(url.pathname).toBe("/apis/shapes.example.com/v1alpha1/shapes");
    expect(url.searchParams.get("shardSelector")).toBe(selector ?? null);
  });

  it("sets the request's abort signal: an aborted signal cancels the call", async () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(stub.kubeconfigYaml);
    const api = kubeConfig.makeApiClient(CoreV1Api);
    const aborted = AbortSignal.abort(new Error("stopping"));
    await expect(
      api.listNamespace(
        {},
        beforeRequest((request) => request.setSignal(aborted)),
      ),
    ).rejects.toThrow();
  });
});

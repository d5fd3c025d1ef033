import { afterEach, describe, expect, it } from "vitest";
import { HealthServer, parseListenAddress } from "./health.ts";
import { DecisionHistory } from "./history.ts";
import { silentLogger } from "./logger.ts";
import { CoreMetrics } from "./metrics.ts";

const servers: HealthServer[] = [];

/** Starts a health server on a free loopback port; stopped after each test. */
async function startServer(
  init: ConstructorParameters<typeof HealthServer>[0]["readinessChecks"] = {},
  history?: DecisionHistory,
) {
  const metrics = new CoreMetrics();
  const server = new HealthServer({
    registry: metrics.registry,
    readinessChecks: init,
    logger: silentLogger(),
    ...(history ? { history } : {}),
  });
  servers.push(server);
  const url = await server.start("127.0.0.1:0");
  return { server, url, metrics };
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

describe("parseListenAddress", () => {
  it.each([
    { reason: "host and port", address: "127.0.0.1:8080", want: { host: "127.0.0.1", port: 8080 } },
    { reason: "no host means every interface", address: ":9090", want: { host: undefined, port: 9090 } },
    { reason: "port 0 picks a free port", address: "localhost:0", want: { host: "localhost", port: 0 } },
    { reason: "IPv6 goes in brackets", address: "[::1]:8443", want: { host: "::1", port: 8443 } },
  ])("parses $reason", ({ address, want }) => {
    expect(parseListenAddress(address)).toEqual(want);
  });

  it.each([
    { reason: "a port alone is ambiguous", address: "8080" },
    { reason: "ports stop at 65535", address: ":70000" },
    { reason: "bare IPv6 needs brackets", address: "::1:8080" },
    { reason: "the port must be a number", address: "localhost:http" },
  ])("rejects an address: $reason", ({ address }) => {
    expect(() => parseListenAddress(address)).toThrow(/^cannot parse listen address/);
  });
});

describe("HealthServer", () => {
  it("answers /healthz while alive and returns its bound URL for port 0", async () => {
    const { url } = await startServer();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(url).not.toMatch(/:0$/);
    const res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok\n");
  });

  it("serves /readyz as 503 naming the failing checks, then 200 once they pass", async () => {
    let informersSynced = false;
    let initialSyncDone = false;
    const { url, server } = await startServer({
      "informers-synced": () => informersSynced,
      "initial-sync": () => Promise.resolve(initialSyncDone),
    });
    server.setReadinessCheck("broken", () => {
      throw new Error("cannot check");
    });

    let res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.text()).toBe(
      "[-]informers-synced failed\n[-]initial-sync failed\n[-]broken failed\n" +
        "not ready: informers-synced, initial-sync, broken\n",
    );

    informersSynced = true;
    server.setReadinessCheck("broken", () => true);
    res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.text()).toContain("not ready: initial-sync\n");

    initialSyncDone = true;
    res = await fetch(`${url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("[+]informers-synced ok\n[+]initial-sync ok\n[+]broken ok\nok\n");
  });

  it("serves the registry on /metrics in Prometheus text format", async () => {
    const { url, metrics } = await startServer();
    metrics.kubeWrites.inc({ verb: "create", resource: "shaperefs" });
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await res.text()).toContain('controller_kube_writes_total{verb="create",resource="shaperefs"} 1');
  });

  it.each([
    { reason: "unknown paths are 404", method: "GET", path: "/nope", want: 404 },
    { reason: "writes are not allowed", method: "POST", path: "/healthz", want: 405 },
    { reason: "HEAD works for probes", method: "HEAD", path: "/healthz", want: 200 },
    { reason: "a query string does not change the path", method: "GET", path: "/readyz?verbose", want: 200 },
  ])("$reason", async ({ method, path, want }) => {
    const { url } = await startServer();
    const res = await fetch(`${url}${path}`, { method });
    expect(res.status).toBe(want);
  });

  it("stops listening on stop(), and refuses a second start", async () => {
    const { url, server } = await startServer();
    await expect(server.start("127.0.0.1:0")).rejects.toThrow(/^cannot start the health server/);
    await server.stop();
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    await server.stop(); // idempotent
  });

  it("rejects an address already in use", async () => {
    const { url } = await startServer();
    const other = new HealthServer({ registry: new CoreMetrics().registry, logger: silentLogger() });
    await expect(other.start(`127.0.0.1:${new URL(url).port}`)).rejects.toThrow(
      /^cannot listen on .*EADDRINUSE/,
    );
  });

  describe("/why: the decision history, read-only", () => {
    const record = {
      at: "2026-01-01T00:00:00.000Z",
      reconcileId: "r-1",
      controller: "shape",
      key: "default/red square",
      subject: "default/red square",
      observed: ["Shape generation 1"],
      decided: [{ branch: "in-sync", why: "nothing to write" }],
      calls: [],
      events: [],
      result: "done",
      ms: 2,
    };

    it.each([
      { reason: "an object's story, by its escaped name", path: "/why/default/red%20square", want: 200 },
      { reason: "an object nothing is kept for: 404 saying so", path: "/why/default/blue", want: 404 },
      { reason: "the history's size", path: "/why", want: 200 },
    ])("$reason", async ({ path, want }) => {
      const history = new DecisionHistory();
      history.add(record);
      const { url } = await startServer({}, history);
      const res = await fetch(`${url}${path}`);
      expect(res.status).toBe(want);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      const body = (await res.json()) as Record<string, unknown>;
      if (path === "/why") expect(body).toMatchObject({ subjects: 1, entries: 1 });
      else if (want === 404) expect(body).toEqual({ error: "no decisions recorded for default/blue" });
      else expect(body).toMatchObject({ subject: "default/red square", entries: [{ reconcileId: "r-1" }] });
    });

    it("is not served without a history, and refuses writes", async () => {
      const { url } = await startServer();
      expect((await fetch(`${url}/why`)).status).toBe(404);
      const withHistory = await startServer({}, new DecisionHistory());
      expect((await fetch(`${withHistory.url}/why`, { method: "DELETE" })).status).toBe(405);
    });
  });
});

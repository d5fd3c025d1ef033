import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import type {
  AccessAttributes,
  AccessControl,
  AccessDecision,
  AccessReviewer,
  ReviewedUser,
  TokenReviewOutcome,
} from "./access.ts";
import { HealthServer, parseAllowedHosts, parseListenAddress } from "./health.ts";
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

/**
 * GET `path` of the server at `url` (connecting to its address) with `host` as the Host header, as a page
 * whose name was re-pointed at that address (DNS rebinding) would send it.
 */
function getAs(
  url: string,
  path: string,
  host: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, headers: { ...headers, host } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on("error", reject);
    req.end();
  });
}

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

describe("parseAllowedHosts", () => {
  it.each([
    { reason: "nothing", text: "", want: [] },
    {
      reason: "comma-separated, blanks dropped",
      text: " controller, a.svc ,,",
      want: ["controller", "a.svc"],
    },
    {
      reason: "an address is a name too (though every address is answered)",
      text: "10.0.0.1",
      want: ["10.0.0.1"],
    },
  ])("parses $reason", ({ text, want }) => {
    expect(parseAllowedHosts(text)).toEqual(want);
  });

  it.each([
    { reason: "a port: every port is answered", text: "controller:8081" },
    { reason: "a URL", text: "http://controller" },
    { reason: "a wildcard: each name is said", text: "*.svc" },
  ])("refuses $reason, as the HealthServer does", ({ text }) => {
    expect(() => parseAllowedHosts(text)).toThrow(/^cannot allow host .*expected a host name/);
    const options = { registry: new CoreMetrics().registry, logger: silentLogger(), allowedHosts: [text] };
    expect(() => new HealthServer(options)).toThrow(/^cannot allow host/);
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

    it("answers 400, not a 500, for a name with a malformed %-escape", async () => {
      const { url } = await startServer({}, new DecisionHistory());
      const res = await fetch(`${url}/why/default/%E0%A4%A`);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: "cannot read the object's name: a malformed %-escape" });
    });

    it("is not served without a history, and refuses writes", async () => {
      const { url } = await startServer();
      expect((await fetch(`${url}/why`)).status).toBe(404);
      const withHistory = await startServer({}, new DecisionHistory());
      expect((await fetch(`${withHistory.url}/why`, { method: "DELETE" })).status).toBe(405);
    });
  });
});

describe("HealthServer without access control: only requests for its own host names (DNS rebinding)", () => {
  const SERVICE = "shapes-controller.shapes-system.svc";
  async function startOpen() {
    const history = new DecisionHistory();
    history.add({
      at: "2026-01-01T00:00:00.000Z",
      reconcileId: "r-1",
      controller: "shape",
      key: "team-a/www",
      subject: "team-a/www",
      observed: [],
      decided: [{ branch: "in-sync", why: "nothing to write" }],
      calls: [],
      events: [],
      result: "done",
      ms: 1,
    });
    const server = new HealthServer({
      registry: new CoreMetrics().registry,
      logger: silentLogger(),
      history,
      allowedHosts: [SERVICE],
    });
    servers.push(server);
    return server.start("127.0.0.1:0");
  }

  it.each([
    { reason: "localhost, with the port", host: "localhost:{port}", path: "/why/team-a/www", want: 200 },
    { reason: "the loopback address", host: "127.0.0.1:{port}", path: "/metrics", want: 200 },
    { reason: "the IPv6 loopback address", host: "[::1]:{port}", path: "/why", want: 200 },
    {
      reason: "any port: a port-forward or a published port changes it",
      host: "localhost:18081",
      path: "/why",
      want: 200,
    },
    { reason: "no port", host: "localhost", path: "/metrics", want: 200 },
    {
      reason: "names are case-insensitive, a root dot is no other name",
      host: "LocalHost.:{port}",
      path: "/why",
      want: 200,
    },
    {
      reason: "the kubelet's liveness probe, by the pod's IP",
      host: "10.244.1.7:8081",
      path: "/healthz",
      want: 200,
    },
    {
      reason: "the kubelet's readiness probe, by the pod's IP",
      host: "10.244.1.7:8081",
      path: "/readyz",
      want: 200,
    },
    { reason: "a scraper by the pod's IPv6 address", host: "[fd00::17]:8081", path: "/metrics", want: 200 },
    { reason: "a name it was given (a Service's)", host: `${SERVICE}:8081`, path: "/metrics", want: 200 },
    {
      reason: "a page's name re-pointed at 127.0.0.1 reads no story",
      host: "evil.example:{port}",
      path: "/why/team-a/www",
      want: 421,
    },
    { reason: "nor the counts of /why", host: "evil.example:{port}", path: "/why", want: 421 },
    { reason: "nor the metrics", host: "evil.example", path: "/metrics", want: 421 },
    { reason: "nor the probes: every path alike", host: "evil.example:{port}", path: "/healthz", want: 421 },
    {
      reason: "a name that only starts like localhost",
      host: "localhost.evil.example:{port}",
      path: "/why",
      want: 421,
    },
    {
      reason: "a name that resolves to an address is still a name (nip.io)",
      host: "127.0.0.1.nip.io:{port}",
      path: "/why",
      want: 421,
    },
    {
      reason: "a sub-name of a given name is another name",
      host: `x.${SERVICE}`,
      path: "/metrics",
      want: 421,
    },
    { reason: "a malformed Host", host: "a:b:c", path: "/why", want: 421 },
    { reason: "brackets around no IPv6 address", host: "[evil.example]:{port}", path: "/why", want: 421 },
  ])("$reason: Host $host, GET $path → $want", async ({ host, path, want }) => {
    const url = await startOpen();
    const res = await getAs(url, path, host.replace("{port}", new URL(url).port));
    expect(res.status).toBe(want);
    if (want === 421) {
      expect(res.body).toMatch(/^misdirected request: this server does not answer for host "/);
      expect(res.body).toContain(
        `without a token it answers only for IP addresses and localhost, ${SERVICE}`,
      );
    }
  });

  it("answers a name given as its listen address's host", async () => {
    const server = new HealthServer({ registry: new CoreMetrics().registry, logger: silentLogger() });
    servers.push(server);
    const url = await server.start("localhost:0");
    expect((await getAs(url, "/metrics", "localhost")).status).toBe(200);
    expect((await getAs(url, "/metrics", "evil.example")).status).toBe(421);
  });
});

describe("HealthServer with access control: who may read /metrics and /why", () => {
  const SHAPES = { group: "shapes.example.com", resource: "shapes" };
  /** Who each token is (absent: not authenticated), and what each user may get. */
  const USERS: Record<string, ReviewedUser> = {
    "reader-token": {
      username: "system:serviceaccount:monitoring:prometheus",
      groups: ["system:serviceaccounts"],
    },
    "viewer-token": { username: "system:serviceaccount:team-a:viewer", uid: "u-1" },
    "admin-token": { username: "admin", groups: ["system:masters"] },
    "broken-sar-token": { username: "broken" },
  };
  function allows(user: ReviewedUser, attributes: AccessAttributes): boolean {
    if (user.username === "admin") return true;
    if ("nonResourceAttributes" in attributes) {
      return user.username.endsWith(":prometheus") && attributes.nonResourceAttributes.path === "/metrics";
    }
    const { verb, group, resource, namespace } = attributes.resourceAttributes;
    return (
      user.username.endsWith(":viewer") &&
      verb === "get" &&
      group === SHAPES.group &&
      resource === SHAPES.resource &&
      namespace === "team-a"
    );
  }

  /** A reviewer that knows USERS and `allows`, counts its calls, and fails for the tokens and users told to. */
  class FakeReviewer implements AccessReviewer {
    readonly tokenReviews: string[] = [];
    readonly accessReviews: { user: string; attributes: AccessAttributes }[] = [];
    failTokens = false;
    reviewToken(token: string): Promise<TokenReviewOutcome> {
      this.tokenReviews.push(token);
      if (this.failTokens)
        return Promise.reject(new Error("POST /apis/authentication.k8s.io/v1/tokenreviews: 503"));
      const user = USERS[token];
      return Promise.resolve(
        user ? { authenticated: true, user } : { authenticated: false, error: "invalid bearer token" },
      );
    }
    async reviewAccess(user: ReviewedUser, attributes: AccessAttributes): Promise<AccessDecision> {
      this.accessReviews.push({ user: user.username, attributes });
      if (user.username === "broken") throw new Error("POST subjectaccessreviews: 403 Forbidden");
      return Promise.resolve({ allowed: allows(user, attributes) });
    }
  }

  async function startGuarded(control: Partial<AccessControl> = {}) {
    const reviewer = new FakeReviewer();
    const history = new DecisionHistory();
    for (const subject of ["team-a/www", "team-b/www"]) {
      history.add({
        at: "2026-01-01T00:00:00.000Z",
        reconcileId: `r-${subject}`,
        controller: "shape",
        key: subject,
        subject,
        observed: [],
        decided: [{ branch: "in-sync", why: "nothing to write" }],
        calls: [],
        events: [],
        result: "done",
        ms: 1,
      });
    }
    const server = new HealthServer({
      registry: new CoreMetrics().registry,
      logger: silentLogger(),
      history,
      access: { reviewer, resource: SHAPES, ...control },
    });
    servers.push(server);
    const url = await server.start("127.0.0.1:0");
    return { url, reviewer };
  }

  const get = (url: string, path: string, token?: string, method = "GET") =>
    fetch(`${url}${path}`, {
      method,
      headers: token === undefined ? {} : { authorization: token.includes(" ") ? token : `Bearer ${token}` },
    });

  it.each([
    { reason: "the liveness probe carries no token and stays open", path: "/healthz", want: 200 },
    { reason: "the readiness probe carries no token and stays open", path: "/readyz", want: 200 },
    { reason: "an unknown path is still 404, token or not", path: "/nope", want: 404 },
    { reason: "a write is still 405, before any review", path: "/metrics", method: "POST", want: 405 },
    {
      reason: "/metrics without a token: 401",
      path: "/metrics",
      want: 401,
      body: "unauthorized: no bearer token",
    },
    {
      reason: "a scheme other than Bearer is no token",
      path: "/metrics",
      token: "Basic dXNlcjpwYXNz",
      want: 401,
      body: "no bearer token",
    },
    {
      reason: "a token the API server does not accept: 401, saying what it said",
      path: "/metrics",
      token: "stolen-token",
      want: 401,
      body: "did not accept the token: invalid bearer token",
    },
    { reason: "the metrics reader scrapes /metrics", path: "/metrics", token: "reader-token", want: 200 },
    { reason: "HEAD is a get too", path: "/metrics", token: "reader-token", method: "HEAD", want: 200 },
    {
      reason: "a namespace's viewer may not scrape: 403 naming the user and the URL",
      path: "/metrics",
      token: "viewer-token",
      want: 403,
      body: 'forbidden: user "system:serviceaccount:team-a:viewer" may not get the non-resource URL /metrics',
    },
    {
      reason: "/why (counts only) needs what /metrics needs",
      path: "/why",
      token: "reader-token",
      want: 200,
    },
    {
      reason: "/why (counts only) is not a namespace's viewer's",
      path: "/why",
      token: "viewer-token",
      want: 403,
      body: "may not get the non-resource URL /metrics",
    },
    {
      reason: "/why/<ns>/<name> without a token: 401, as JSON",
      path: "/why/team-a/www",
      want: 401,
      body: "unauthorized: no bearer token",
    },
    {
      reason: "a viewer reads the story of a Shape in its namespace",
      path: "/why/team-a/www",
      token: "viewer-token",
      want: 200,
    },
    {
      reason: "a viewer may not read another namespace's story: 403 naming what is missing",
      path: "/why/team-b/www",
      token: "viewer-token",
      want: 403,
      body: 'forbidden: user "system:serviceaccount:team-a:viewer" may not get shapes.shapes.example.com "www" in the namespace "team-b"',
    },
    {
      reason: "nothing kept for an object the viewer may get: 404",
      path: "/why/team-a/gone",
      token: "viewer-token",
      want: 404,
    },
    {
      reason: "an object the viewer may not get: 403 whether or not anything is kept (no probing)",
      path: "/why/team-b/gone",
      token: "viewer-token",
      want: 403,
    },
    {
      reason: "a subject that is no <namespace>/<name> needs a get in every namespace",
      path: "/why/team-a.www",
      token: "viewer-token",
      want: 403,
      body: "may not get shapes.shapes.example.com in every namespace",
    },
    {
      reason: "a cluster-wide reader may ask for it",
      path: "/why/team-a.www",
      token: "admin-token",
      want: 404,
    },
    {
      reason: "the metrics reader may not read a story: it holds names, cloud ids, errors",
      path: "/why/team-a/www",
      token: "reader-token",
      want: 403,
    },
    {
      reason: "the access review fails: 503, a short message, no stack",
      path: "/why/team-a/www",
      token: "broken-sar-token",
      want: 503,
      body: 'cannot check what user "broken" may read: the Kubernetes API server did not review it',
    },
  ])("$reason", async ({ path, token, method, want, body }) => {
    const { url } = await startGuarded();
    const res = await get(url, path, token, method);
    expect(res.status).toBe(want);
    const text = await res.text();
    if (want === 401) expect(res.headers.get("www-authenticate")).toBe("Bearer");
    if (body !== undefined) {
      // /why answers JSON ({"error": ...}), as its 404 does; /metrics plain text.
      const said = path.startsWith("/why") ? (JSON.parse(text) as { error: string }).error : text;
      expect(said).toContain(body);
      expect(said).not.toMatch(/\n\s+at /); // no stack
    }
  });

  it("a failing token review is 503 with a short message, and is not kept: the next request reviews again", async () => {
    const { url, reviewer } = await startGuarded();
    reviewer.failTokens = true;
    const res = await get(url, "/metrics", "reader-token");
    expect(res.status).toBe(503);
    expect(await res.text()).toBe(
      "cannot check the token: the Kubernetes API server did not review it (the controller's log says why)\n",
    );
    reviewer.failTokens = false;
    expect((await get(url, "/metrics", "reader-token")).status).toBe(200);
    expect(reviewer.tokenReviews).toEqual(["reader-token", "reader-token"]);
  });

  it.each([
    {
      reason: "/metrics asks for the non-resource URL, as controller-runtime does",
      path: "/metrics",
      want: { nonResourceAttributes: { path: "/metrics", verb: "get" } },
    },
    {
      reason: "/why/<ns>/<name> asks for get on that object, its name unescaped",
      path: "/why/team-a/w%77w",
      want: {
        resourceAttributes: { verb: "get", ...SHAPES, namespace: "team-a", name: "www" },
      },
    },
    {
      reason: "/why/<no namespace> asks for get in every namespace",
      path: "/why/a/b/c",
      want: { resourceAttributes: { verb: "get", ...SHAPES } },
    },
  ])("reviews the access it needs: $reason", async ({ path, want }) => {
    const { url, reviewer } = await startGuarded();
    await get(url, path, "admin-token");
    expect(reviewer.accessReviews).toEqual([{ user: "admin", attributes: want }]);
  });

  it.each([
    {
      reason: "an allowed scrape is reused within allowTtlMs, reviewed again after",
      token: "reader-token",
      path: "/metrics",
      steps: [0, 29_000, 31_000],
      wantTokenReviews: 2,
      wantAccessReviews: 2,
    },
    {
      reason: "a denial is reused within denyTtlMs (shorter), reviewed again after; its token's answer stays",
      token: "viewer-token",
      path: "/metrics",
      steps: [0, 9_000, 11_000],
      wantTokenReviews: 1,
      wantAccessReviews: 2,
    },
    {
      reason: "an unknown token is reused within denyTtlMs too",
      token: "nobody-token",
      path: "/metrics",
      steps: [0, 5_000, 11_000],
      wantTokenReviews: 2,
      wantAccessReviews: 0,
    },
  ])("caches reviews: $reason", async ({ token, path, steps, wantTokenReviews, wantAccessReviews }) => {
    let now = 1_000_000;
    const { url, reviewer } = await startGuarded({ allowTtlMs: 30_000, denyTtlMs: 10_000, now: () => now });
    const start = now;
    for (const at of steps) {
      now = start + at;
      await (await get(url, path, token)).text();
    }
    expect(reviewer.tokenReviews).toHaveLength(wantTokenReviews);
    expect(reviewer.accessReviews).toHaveLength(wantAccessReviews);
  });

  it.each([
    { reason: "the probes answer any Host (the kubelet's, by any name)", path: "/healthz", want: 200 },
    {
      reason: "the token is the guard: a reader's scrape by any name",
      path: "/metrics",
      token: "reader-token",
      want: 200,
    },
    { reason: "no token is still 401, whatever the Host", path: "/metrics", want: 401 },
  ])("checks no Host: $reason", async ({ path, token, want }) => {
    const { url } = await startGuarded();
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    expect((await getAs(url, path, "metrics.monitoring.example:8081", headers)).status).toBe(want);
  });

  it("bounds the TokenReviews of tokens not in the cache: over the bound 429 with Retry-After, no review made", async () => {
    let now = 1_000_000;
    const { url, reviewer } = await startGuarded({ tokenReviewsPerSecond: 2, now: () => now });
    const start = now;
    const steps: {
      reason: string;
      at: number;
      token: string;
      path?: string;
      want: number;
      retryAfter?: string;
    }[] = [
      { reason: "the scraper's token: reviewed (one of 2)", at: 0, token: "reader-token", want: 200 },
      { reason: "a made-up token: reviewed (two of 2)", at: 0, token: "made-up-1", want: 401 },
      {
        reason: "another, in the same second: not reviewed",
        at: 0,
        token: "made-up-2",
        want: 429,
        retryAfter: "1",
      },
      {
        reason: "the same for /why, in JSON",
        at: 0,
        token: "made-up-3",
        path: "/why",
        want: 429,
        retryAfter: "1",
      },
      {
        reason: "the scraper's token is in the cache: costs nothing, never 429",
        at: 100,
        token: "reader-token",
        want: 200,
      },
      {
        reason: "a refused token in the cache: 401 again, no review",
        at: 100,
        token: "made-up-1",
        want: 401,
      },
      { reason: "half a second later one review fits again", at: 500, token: "made-up-2", want: 401 },
      { reason: "and no second one", at: 500, token: "made-up-4", want: 429, retryAfter: "1" },
      { reason: "a quiet second later, a burst of 2 again", at: 2_000, token: "made-up-4", want: 401 },
      {
        reason: "the second of the burst",
        at: 2_000,
        token: "viewer-token",
        path: "/why/team-a/www",
        want: 200,
      },
      { reason: "then over the bound again", at: 2_000, token: "made-up-5", want: 429, retryAfter: "1" },
    ];
    const got: { reason: string; status: number; retryAfter: string | null }[] = [];
    for (const step of steps) {
      now = start + step.at;
      const res = await get(url, step.path ?? "/metrics", step.token);
      const text = await res.text();
      if (res.status === 429) {
        const said = step.path?.startsWith("/why") ? (JSON.parse(text) as { error: string }).error : text;
        expect(said).toMatch(
          /^too many requests: too many tokens to review at once, this one was not reviewed/,
        );
      }
      got.push({ reason: step.reason, status: res.status, retryAfter: res.headers.get("retry-after") });
    }
    expect(got).toEqual(
      steps.map((s) => ({ reason: s.reason, status: s.want, retryAfter: s.retryAfter ?? null })),
    );
    expect(reviewer.tokenReviews).toEqual([
      "reader-token",
      "made-up-1",
      "made-up-2",
      "made-up-4",
      "viewer-token",
    ]);
  });

  it("shares one review among concurrent requests with the same token", async () => {
    const { url, reviewer } = await startGuarded();
    const answers = await Promise.all(Array.from({ length: 5 }, () => get(url, "/metrics", "reader-token")));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(reviewer.tokenReviews).toHaveLength(1);
    expect(reviewer.accessReviews).toHaveLength(1);
  });

  it("keeps at most maxCached answers of each kind, dropping the oldest", async () => {
    const { url, reviewer } = await startGuarded({ maxCached: 2 });
    for (const token of ["reader-token", "viewer-token", "admin-token", "reader-token"])
      await (await get(url, "/metrics", token)).text();
    // reader's answer was the oldest when admin's came: dropped, so reviewed again.
    expect(reviewer.tokenReviews).toEqual(["reader-token", "viewer-token", "admin-token", "reader-token"]);
  });
});

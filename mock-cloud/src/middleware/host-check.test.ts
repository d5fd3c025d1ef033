/**
 * The routes that answer without a token answer only for this cloud's own names (http/host-check.ts: DNS
 * rebinding), over real HTTP: each row sends one request to the cloud's address with a `Host` header, as a
 * browser whose page re-pointed its name at that address would, or as a client of the cloud does.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startTestCloud, TOKEN, type TestCloud } from "../test-support.ts";

/** One request to the cloud at `url` with `host` as its Host header. */
function send(
  url: string,
  path: string,
  host: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, headers: { ...headers, host } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, type: res.headers["content-type"] ?? "", body }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

let cloud: TestCloud;
beforeAll(async () => {
  cloud = await startTestCloud({ allowedHosts: ["cloud"] });
});
afterAll(async () => {
  await cloud.close();
});

const api = { authorization: `Bearer ${TOKEN}` };
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

describe("the Host a request to the cloud may carry", () => {
  it.each([
    { reason: "the database's health, on loopback", path: "/healthz", host: "127.0.0.1:{port}", want: 200 },
    {
      reason: "localhost, by any port (compose publishes another)",
      path: "/healthz",
      host: "localhost:18080",
      want: 200,
    },
    { reason: "the IPv6 loopback", path: "/metrics", host: "[::1]:{port}", want: 200 },
    {
      reason: "its compose service name, allowed (--allowed-hosts cloud)",
      path: "/openapi.json",
      host: "cloud:8080",
      want: 200,
    },
    {
      reason: "a container's address on the compose network",
      path: "/healthz",
      host: "172.18.0.3:8080",
      want: 200,
    },
    { reason: "the console's page, on loopback", path: "/", host: "localhost:{port}", want: 200 },
    {
      reason: "a page's name re-pointed at the cloud reads no health (revision, count)",
      path: "/healthz",
      host: "evil.example:{port}",
      want: 421,
    },
    { reason: "nor the metrics", path: "/metrics", host: "evil.example:{port}", want: 421 },
    { reason: "nor the API's description", path: "/openapi.json", host: "evil.example", want: 421 },
    { reason: "nor the console's page", path: "/", host: "evil.example:{port}", want: 421 },
    {
      reason: "nor the console's config",
      path: "/console/config.json",
      host: "evil.example:{port}",
      want: 421,
    },
    {
      reason: "nor a 404: nothing answers another name without a token",
      path: "/no/such/path",
      host: "evil.example",
      want: 421,
    },
    {
      reason: "a name that resolves to loopback is still a name (nip.io)",
      path: "/healthz",
      host: "127.0.0.1.nip.io:{port}",
      want: 421,
    },
    {
      reason: "a sub-name of an allowed name is another name",
      path: "/healthz",
      host: "x.cloud:8080",
      want: 421,
    },
    { reason: "a malformed Host", path: "/healthz", host: "a:b:c", want: 421 },
    {
      reason: "the API: the token is the guard, any Host",
      path: "/v1/shapes",
      host: "evil.example",
      headers: api,
      want: 200,
    },
    {
      reason: "the API without the token: 401, as for any Host",
      path: "/v1/shapes",
      host: "evil.example",
      want: 401,
    },
    {
      reason: "the admin API: its token is the guard",
      path: "/admin/faults",
      host: "evil.example",
      headers: admin,
      want: 200,
    },
  ])("$reason: GET $path, Host $host → $want", async ({ path, host, headers, want }) => {
    const res = await send(cloud.url, path, host.replace("{port}", new URL(cloud.url).port), headers);
    expect(res.status).toBe(want);
    if (want === 421) {
      expect(res.type).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(res.body)).toMatchObject({
        type: "https://shapes.example.com/problems/misdirected-request",
        status: 421,
        detail: expect.stringMatching(
          /^cannot answer for host ".*": without a token this cloud answers only for IP addresses and localhost, cloud \(a web page must not read it through DNS rebinding; add a name with --allowed-hosts\)$/,
        ),
      });
    }
  });

  it("answers for its --host when that is a name", async () => {
    const named = await startTestCloud({ host: "shapes-cloud.internal" });
    try {
      expect((await send(named.url, "/healthz", "shapes-cloud.internal:8080")).status).toBe(200);
      expect((await send(named.url, "/healthz", "cloud:8080")).status).toBe(421);
    } finally {
      await named.close();
    }
  });
});

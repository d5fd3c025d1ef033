/**
 * KeepAliveHttp against a real node:http server on a free port: one pooled connection for calls one after
 * another, every status resolved with its text and headers, and the three ways a request ends without an
 * answer (network error, timeout, the caller's abort), for requests and for streams alike.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { KeepAliveHttp, keepAliveAgent } from "./keep-alive-http.ts";

let server: http.Server;
let base: string;
let connections = 0;
const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname.endsWith("/slow")) return; // never answers
      if (url.pathname.endsWith("/throttled")) {
        res.writeHead(429, { "retry-after": "2", "content-type": "application/json" });
        return res.end('{"detail":"slow down"}');
      }
      if (url.pathname.endsWith("/stream")) {
        res.writeHead(200, { "content-type": "text/plain" });
        res.write(req.method === "GET" ? "one\n" : `${req.method} ${body}\n`);
        if (url.searchParams.get("then") === "silence") return; // stays open, says nothing more
        setTimeout(() => res.end("two\n"), 20);
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ echo: body }));
    });
  });
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
);

describe("KeepAliveHttp.request", () => {
  test("calls one after another share one connection; base headers, the call's headers and the body arrive", async () => {
    const client = new KeepAliveHttp({ baseUrl: `${base}/prefix`, headers: { authorization: "Bearer t" } });
    const before = connections;
    seen.length = 0;
    for (let i = 0; i < 5; i++) {
      const answer = await client.request("POST", "/things?x=1", {
        headers: { "content-type": "application/json" },
        body: `{"n":${i}}`,
      });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text)).toEqual({ echo: `{"n":${i}}` });
    }
    expect(connections - before).toBe(1);
    expect(seen.map((s) => s.url)).toEqual(Array(5).fill("/prefix/things?x=1"));
    expect(seen[0]?.headers).toMatchObject({
      authorization: "Bearer t",
      "content-type": "application/json",
      "content-length": "7",
    });
    client.close();
  });

  test("an error status resolves, with its text and headers: the caller classifies it", async () => {
    const client = new KeepAliveHttp({ baseUrl: base });
    const answer = await client.request("GET", "/throttled");
    expect(answer).toMatchObject({ status: 429, text: '{"detail":"slow down"}' });
    expect(answer.headers["retry-after"]).toBe("2");
    client.close();
  });

  test.each([
    {
      reason: "no answer within the timeout: one line naming the request",
      baseUrl: () => base,
      signal: () => undefined,
      want: /^GET \/slow: no answer in 150 ms$/,
    },
    {
      reason: "the caller's abort: rejected with the signal's reason",
      baseUrl: () => base,
      signal: () => AbortSignal.abort(new Error("leadership lost")),
      want: /^leadership lost$/,
    },
    {
      reason: "aborted while waiting for the answer: the signal's reason too",
      baseUrl: () => base,
      signal: () => {
        const stop = new AbortController();
        setTimeout(() => stop.abort(new Error("shutting down")), 30);
        return stop.signal;
      },
      want: /^shutting down$/,
    },
    {
      reason: "nobody listens: the network error",
      baseUrl: () => "http://127.0.0.1:1",
      signal: () => undefined,
      want: /ECONNREFUSED/,
    },
  ])("$reason", async ({ baseUrl, signal, want }) => {
    const client = new KeepAliveHttp({ baseUrl: baseUrl(), timeoutMs: 150 });
    await expect(client.request("GET", "/slow", { signal: signal() })).rejects.toThrow(want);
    client.close();
  });

  test("a base URL that is not http or https is refused in one line", () => {
    expect(() => new KeepAliveHttp({ baseUrl: "ftp://example.test" })).toThrow(
      "ftp://example.test is not an http or https URL",
    );
  });
});

describe("KeepAliveHttp.stream", () => {
  const read = async (body: AsyncIterable<string>) => {
    let text = "";
    for await (const chunk of body) text += chunk;
    return text;
  };

  test.each([
    {
      reason: "hands over the body as text chunks, in order, until the server ends it",
      path: "/stream",
      status: 200,
      body: "one\ntwo\n",
    },
    {
      reason: "an error status resolves too, its body readable",
      path: "/throttled",
      status: 429,
      body: '{"detail":"slow down"}',
    },
  ])("$reason", async ({ path, status, body }) => {
    const client = new KeepAliveHttp({ baseUrl: base });
    const stream = await client.stream(path, { idleTimeoutMs: 5_000 });
    expect(stream.status).toBe(status);
    expect(await read(stream.body)).toBe(body);
    client.close();
  });

  test("any method, with a body (a watch that is a POST): the server reads both, the answer streams back", async () => {
    const client = new KeepAliveHttp({ baseUrl: base, headers: { authorization: "Bearer t" } });
    seen.length = 0;
    const body = JSON.stringify({ create_request: { key: "YQ==" } });
    const stream = await client.stream("/v3/watch/stream", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      idleTimeoutMs: 5_000,
    });
    expect(await read(stream.body)).toBe(`POST ${body}\ntwo\n`);
    expect(seen).toMatchObject([
      {
        method: "POST",
        url: "/v3/watch/stream",
        body,
        headers: { authorization: "Bearer t", "content-type": "application/json" },
      },
    ]);
    client.close();
  });

  test("a silent POST stream fails naming its method", async () => {
    const client = new KeepAliveHttp({ baseUrl: base });
    const stream = await client.stream("/stream?then=silence", {
      method: "POST",
      body: "{}",
      idleTimeoutMs: 200,
    });
    await expect(read(stream.body)).rejects.toThrow(/^POST \/stream\?then=silence: nothing for 200 ms$/);
    client.close();
  });

  test.each([
    {
      reason: "silence for idleTimeoutMs: reading fails, saying so",
      abortAfterMs: undefined,
      want: /^GET \/stream\?then=silence: nothing for 200 ms$/,
    },
    {
      reason: "the caller's abort mid-stream: reading fails with the signal's reason",
      abortAfterMs: 50,
      want: /^stop watching$/,
    },
  ])("$reason", async ({ abortAfterMs, want }) => {
    const client = new KeepAliveHttp({ baseUrl: base });
    const stop = new AbortController();
    const stream = await client.stream("/stream?then=silence", {
      idleTimeoutMs: 200,
      signal: stop.signal,
    });
    if (abortAfterMs !== undefined) setTimeout(() => stop.abort(new Error("stop watching")), abortAfterMs);
    await expect(read(stream.body)).rejects.toThrow(want);
    client.close();
  });
});

describe("keepAliveAgent", () => {
  test.each([
    {
      reason: "https: one pool name, whatever the TLS material (no PEM decoded per request)",
      url: "https://h:6443",
    },
    { reason: "http: node's own name (host and port: cheap already)", url: "http://h:8080" },
  ])("$reason", ({ url }) => {
    const pem = Buffer.from("-----BEGIN CERTIFICATE-----\n" + "A".repeat(2_000));
    const agent = keepAliveAgent(new URL(url), { ca: pem, cert: pem, key: pem });
    const name = agent.getName({ host: "h", port: 6443, ca: pem, cert: pem, key: pem } as never);
    expect(name.length).toBeLessThan(100);
    expect((agent as unknown as { keepAlive: boolean }).keepAlive).toBe(true);
    agent.destroy();
  });
});

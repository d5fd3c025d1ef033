/**
 * The Node containers' healthcheck, against a real HTTP server, and as the command compose runs.
 */
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { checkUrl } from "./http-check.ts";

describe("http-check", () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/slow") return; // never answers
      res
        .writeHead(req.url === "/readyz" ? 200 : 503)
        .end(req.url === "/readyz" ? "ok" : "[-]controllers failed");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const cases: { reason: string; path: string; problem: RegExp | undefined }[] = [
    { reason: "2xx is healthy", path: "/readyz", problem: undefined },
    {
      reason: "a 503 says what the server said",
      path: "/not-ready",
      problem: /^cannot get 2xx from .* answered 503: \[-\]controllers failed$/,
    },
    {
      reason: "a server that never answers is unhealthy after the timeout",
      path: "/slow",
      problem: /^cannot reach .*\/slow/,
    },
  ];
  test.each(cases)("$reason", async ({ path, problem }) => {
    const result = await checkUrl(`${base}${path}`, 500);
    if (problem === undefined) expect(result).toBeUndefined();
    else expect(result).toMatch(problem);
  });

  test("nothing listening: unhealthy, with the reason", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await checkUrl(`http://127.0.0.1:${port}/healthz`)).toMatch(/^cannot reach .*: ECONNREFUSED$/);
  });

  test("as compose runs it: exit 0 when healthy, 1 when not, 2 without a URL", async () => {
    const run = (...args: string[]) =>
      new Promise<number>((resolve) =>
        execFile(process.execPath, [join(import.meta.dirname, "http-check.ts"), ...args], (error) =>
          resolve(error ? Number((error as { code?: number }).code) : 0),
        ),
      );
    expect(await run(`${base}/readyz`)).toBe(0);
    expect(await run(`${base}/not-ready`)).toBe(1);
    expect(await run()).toBe(2);
  });
});

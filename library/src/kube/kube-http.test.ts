/**
 * The lean Kubernetes client against a real TLS server (mutual TLS, as an API server with client
 * certificates): what goes on the wire, what comes back, how failures read, and that connections are kept.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parse, stringify } from "yaml";
import { asError, statusCodeOf } from "../support/errors.ts";
import { KubeApiError, KubeHttp, MERGE_PATCH } from "./kube-http.ts";
import { kubeConnectionOf, loadKubeconfig } from "./kubeconfig.ts";
import { startTlsApiStub, type TlsApiStub } from "@shapes/envtest";

interface Seen {
  method: string;
  url: string;
  contentType: string | undefined;
  body: string;
  authorized: boolean;
}

let api: TlsApiStub;
const seen: Seen[] = [];
/** The Authorization header of every request, in order. */
const bearers: (string | undefined)[] = [];
/**
 * The next answer: status and body (JSON text), "none" (never answer), a stream (200, its chunks written one
 * by one, then an end, nothing more, or a reset), or the default echo.
 */
let answer:
  | { status: number; body: string }
  | { chunks: string[]; then: "end" | "hang" | "reset" }
  | "none"
  | undefined;

beforeAll(async () => {
  api = await startTlsApiStub((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      bearers.push(req.headers.authorization);
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        contentType: req.headers["content-type"],
        body,
        authorized: (req.socket as { authorized?: boolean }).authorized === true,
      });
      const reply = answer ?? { status: 200, body: body || '{"kind":"Thing"}' };
      answer = undefined;
      if (reply === "none") return;
      if ("chunks" in reply) {
        res.writeHead(200, { "content-type": "application/json" });
        res.flushHeaders();
        for (const chunk of reply.chunks) res.write(chunk);
        if (reply.then === "end") res.end();
        if (reply.then === "reset") setTimeout(() => req.socket.destroy(), 50);
        return;
      }
      res.writeHead(reply.status, { "content-type": "application/json" }).end(reply.body);
    });
  });
});

afterAll(() => api.close());

function http(options: ConstructorParameters<typeof KubeHttp>[1] = {}, prefix = ""): KubeHttp {
  const kc = api.kubeConfig();
  if (prefix) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error("no cluster");
    kc.clusters = [{ ...cluster, server: `${cluster.server}${prefix}` }];
  }
  return new KubeHttp(kubeConnectionOf(kc), options);
}

describe("KubeHttp", () => {
  test("sends JSON with the content type asked for, over mutual TLS, and parses the answer", async () => {
    seen.length = 0;
    const client = http();
    const got = await client.request("PATCH", "/apis/g/v1/things/a", { spec: { x: 1 } }, MERGE_PATCH);
    await client.close();
    expect(got).toEqual({ spec: { x: 1 } });
    expect(seen).toEqual([
      {
        method: "PATCH",
        url: "/apis/g/v1/things/a",
        contentType: MERGE_PATCH,
        body: '{"spec":{"x":1}}',
        authorized: true,
      },
    ]);
  });

  test("keeps one connection for requests one after another (keep-alive)", async () => {
    api.stats.connections = 0;
    const client = http();
    for (let i = 0; i < 5; i++) await client.request("GET", "/api/v1/namespaces/default");
    await client.close();
    expect(api.stats.connections).toBe(1);
  });

  test("a path prefix in the server's URL is kept", async () => {
    seen.length = 0;
    const client = http({}, "/k8s/clusters/c1");
    await client.request("GET", "/api/v1/namespaces/default");
    await client.close();
    expect(seen.map((s) => s.url)).toEqual(["/k8s/clusters/c1/api/v1/namespaces/default"]);
  });

  test.each([
    {
      reason: "a Status body: its code, reason and message, as statusCodeOf reads them",
      status: 409,
      body: JSON.stringify({
        kind: "Status",
        reason: "Conflict",
        message: 'the object "a" has been modified',
      }),
      message: 'PATCH /apis/g/v1/things/a: 409 Conflict: the object "a" has been modified',
      reason_: "Conflict",
    },
    {
      reason: "a body that is not JSON: its text",
      status: 503,
      body: "upstream connect error",
      message: "PATCH /apis/g/v1/things/a: 503 Service Unavailable: upstream connect error",
      reason_: undefined,
    },
    {
      reason: "no body at all: the status text",
      status: 404,
      body: "",
      message: "PATCH /apis/g/v1/things/a: 404 Not Found: Not Found",
      reason_: undefined,
    },
  ])("a failure reads as one line: $reason", async ({ status, body, message, reason_ }) => {
    answer = { status, body };
    const client = http();
    const failure = await client
      .request("PATCH", "/apis/g/v1/things/a", {}, MERGE_PATCH)
      .catch((e: unknown) => e);
    await client.close();
    expect(failure).toBeInstanceOf(KubeApiError);
    expect(statusCodeOf(failure)).toBe(status);
    expect((failure as KubeApiError).message).toBe(message);
    expect((failure as KubeApiError).reason).toBe(reason_);
  });

  test("a 2xx answer that is not JSON says so in one line", async () => {
    answer = { status: 200, body: "<html>proxy login</html>" };
    const client = http();
    await expect(client.request("GET", "/api")).rejects.toThrow(
      "GET /api: 200 with a body that is not JSON: <html>proxy login</html>",
    );
    await client.close();
  });

  test("an empty 2xx answer resolves undefined", async () => {
    answer = { status: 200, body: "" };
    const client = http();
    await expect(client.request("DELETE", "/apis/g/v1/things/a")).resolves.toBeUndefined();
    await client.close();
  });

  test("no answer within the timeout: one line naming the request, no 'cannot' for the caller to repeat", async () => {
    answer = "none";
    const client = http({ timeoutMs: 200 });
    const failed = client.request("GET", "/apis/g/v1/things/slow");
    await expect(failed).rejects.toThrow(/^GET \/apis\/g\/v1\/things\/slow: no answer in 200 ms$/);
    // So the step's words come first (errors.ts asError keeps a message that starts with "cannot").
    expect(asError(await failed.catch((e: unknown) => e), "cannot add the finalizer").message).toBe(
      "cannot add the finalizer: GET /apis/g/v1/things/slow: no answer in 200 ms",
    );
    await client.close();
  });

  test("after close, a request says so instead of opening a connection", async () => {
    const client = http();
    await client.close();
    await expect(client.request("GET", "/api")).rejects.toThrow("GET /api: the Kubernetes client is closed");
  });

  test("on a lean connection (kubeconfig.ts): mutual TLS from its kubeconfig, the token read again from its file when it rotates, the connection kept", async () => {
    const dir = await mkdtemp(join(tmpdir(), "kube-http-lean-"));
    try {
      const doc = parse(api.kubeconfigYaml) as { users: { user: Record<string, string> }[] };
      const user = doc.users[0];
      if (!user) throw new Error("the stub's kubeconfig has no user");
      user.user.tokenFile = "token"; // relative to the kubeconfig's folder
      await writeFile(join(dir, "config"), stringify(doc));
      await writeFile(join(dir, "token"), "first\n");
      let now = 0;
      const verdict = loadKubeconfig({ path: join(dir, "config"), now: () => now });
      if (verdict.kind !== "lean") throw new Error(`expected a lean connection, got ${verdict.kind}`);
      const client = new KubeHttp(verdict.connection, { authTtlMs: 0 });
      seen.length = 0;
      bearers.length = 0;
      api.stats.connections = 0;
      await client.request("GET", "/api/v1/namespaces");
      await writeFile(join(dir, "token"), "second\n");
      await client.request("GET", "/api/v1/namespaces");
      now += 60_000; // the token file's time-to-live (one minute) passed
      await client.request("GET", "/api/v1/namespaces");
      await client.close();
      expect(bearers).toEqual(["Bearer first", "Bearer first", "Bearer second"]);
      expect(seen.map((s) => s.authorized)).toEqual([true, true, true]);
      expect(api.stats.connections).toBe(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("KubeHttp.stream (a watch: JSON lines over one request)", () => {
  const ADDED = '{"type":"ADDED","object":{"metadata":{"name":"a"}}}';
  const BOOKMARK = '{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}';

  test.each([
    {
      reason: "lines split across chunks and two lines in one chunk: each line once, in order",
      chunks: [ADDED.slice(0, 10), `${ADDED.slice(10)}\n${BOOKMARK}\n`],
      lines: [JSON.parse(ADDED), JSON.parse(BOOKMARK)],
    },
    {
      reason: "a last line without its newline still counts; blank lines do not",
      chunks: [`\n${ADDED}\n\n`, BOOKMARK],
      lines: [JSON.parse(ADDED), JSON.parse(BOOKMARK)],
    },
  ])("$reason", async ({ chunks, lines }) => {
    answer = { chunks, then: "end" };
    const client = http();
    const got: unknown[] = [];
    await expect(client.stream("/apis/g/v1/things?watch=true", (l) => got.push(l))).resolves.toBe("ended");
    await client.close();
    expect(got).toEqual(lines);
  });

  test("a garbled line fails the stream in one line naming it; the lines before it were delivered", async () => {
    answer = { chunks: [`${ADDED}\n{"type":"ADD`, `ED" oops\n${BOOKMARK}\n`], then: "hang" };
    const client = http();
    const got: unknown[] = [];
    await expect(client.stream("/w", (l) => got.push(l))).rejects.toThrow(
      'GET /w: a line of the stream is not JSON: {"type":"ADDED" oops',
    );
    await client.close();
    expect(got).toEqual([JSON.parse(ADDED)]);
  });

  test("a non-2xx answer rejects with the API server's Status in one line", async () => {
    answer = {
      status: 422,
      body: JSON.stringify({ kind: "Status", reason: "Invalid", message: "sendInitialEvents is forbidden" }),
    };
    const client = http();
    const failure = await client.stream("/w", () => undefined).catch((e: unknown) => e);
    await client.close();
    expect(failure).toBeInstanceOf(KubeApiError);
    expect((failure as Error).message).toBe("GET /w: 422 Invalid: sendInitialEvents is forbidden");
  });

  test("nothing for idleTimeoutMs: resolves 'idle' (the caller resumes), after the lines that came", async () => {
    answer = { chunks: [`${ADDED}\n`], then: "hang" };
    const client = http();
    const got: unknown[] = [];
    await expect(client.stream("/w", (l) => got.push(l), { idleTimeoutMs: 200 })).resolves.toBe("idle");
    await client.close();
    expect(got).toHaveLength(1);
  });

  test("a connection reset mid-stream rejects (it is not a clean end)", async () => {
    answer = { chunks: [`${ADDED}\n`], then: "reset" };
    const client = http();
    await expect(client.stream("/w", () => undefined)).rejects.toThrow();
    await client.close();
  });

  test("the signal aborts an open stream with its reason", async () => {
    answer = { chunks: [`${ADDED}\n`], then: "hang" };
    const client = http();
    const controller = new AbortController();
    const open = client.stream("/w", () => controller.abort(new Error("stopped by the test")), {
      signal: controller.signal,
    });
    await expect(open).rejects.toThrow("stopped by the test");
    await client.close();
  });
});

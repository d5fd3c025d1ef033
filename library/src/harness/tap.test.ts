import { stat, mkdtemp, rm, writeFile } from "node:fs/promises";
import {
  Agent as HttpAgent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { loadKubeConfig, startTlsApiStub } from "@shapes/envtest";
import type { TapArm, TapFault, TappedWrite } from "../crash-points/subject.ts";
import { afterEach, describe, expect, it } from "vitest";
import { KUBE_TAP_USER, openKubeTap } from "./kube-tap.ts";
import { INJECTED_FAILURE_BODY, WriteTapProxy } from "./tap.ts";
import { waitFor } from "../testing/wait.ts";

/** A request the upstream server received. */
interface Seen {
  method: string;
  url: string;
  body: string;
  headers: IncomingHttpHeaders;
  /** Set when the request's connection closed (the tap gave up on it). */
  closed: boolean;
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * The server behind the tap: answers a write 201 with `{"echo": <body>}`, GET /hello 200 "hi", GET
 * /stream with a first chunk, then a second once the test releases it, and GET /quiet with headers only
 * (like a watch with no event yet) until the test releases it.
 */
async function startUpstream() {
  const seen: Seen[] = [];
  let releaseStream = deferred();
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const entry: Seen = {
      method: req.method ?? "",
      url: req.url ?? "",
      body: "",
      headers: req.headers,
      closed: false,
    };
    seen.push(entry);
    res.on("close", () => (entry.closed = true));
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      entry.body = Buffer.concat(chunks).toString("utf8");
      if (req.url === "/quiet") {
        // A watch with nothing to say yet: headers sent, no byte of body until released.
        res.writeHead(200, { "content-type": "application/json" });
        res.flushHeaders();
        void releaseStream.promise.then(() => res.end("{}"));
      } else if (req.url === "/stream") {
        res.writeHead(200, { "content-type": "text/plain" });
        res.write("one\n");
        void releaseStream.promise.then(() => res.end("two\n"));
      } else if (req.method === "GET") {
        res.writeHead(200, { "content-type": "text/plain" }).end("hi");
      } else {
        const answer = JSON.stringify({ echo: entry.body });
        res.writeHead(201, { "content-type": "application/json" }).end(answer);
      }
    });
  };
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    handler,
    writes: () => seen.filter((s) => s.method !== "GET"),
    releaseStream: () => releaseStream.resolve(),
    resetStream: () => (releaseStream = deferred()),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A request through the tap, on a connection of its own; `answered` turns true at the answer's headers. */
function send(url: string, method: string, body?: string, options: RequestOptions = {}) {
  const state = { answered: false, settled: false, chunks: "" };
  const result = new Promise<{ status: number; body: string; headers: IncomingHttpHeaders }>(
    (resolve, reject) => {
      const request = url.startsWith("https:") ? httpsRequest : httpRequest;
      const req = request(url, { agent: false, ...options, method }, (res) => {
        state.answered = true;
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (state.chunks += chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body: state.chunks, headers: res.headers }),
        );
        res.on("error", reject);
      });
      req.on("error", reject);
      if (body !== undefined) req.setHeader("content-type", "application/json");
      req.end(body);
    },
  );
  const settled = result.then(
    () => (state.settled = true),
    () => (state.settled = true),
  );
  return { result, state, settled };
}

const SOCKET_ERROR = { code: "ECONNRESET" };

let cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.map((c) => c()));
  cleanups = [];
});

async function setUp() {
  const upstream = await startUpstream();
  const tap = await WriteTapProxy.start({ side: "external", target: upstream.url });
  cleanups.push(
    () => tap.close(),
    () => upstream.close(),
  );
  return { upstream, tap };
}

/** A crash that records what had happened when it was called, and resolves when the test says so. */
function controlledCrash(upstream: { writes(): Seen[] }, call: () => ReturnType<typeof send> | undefined) {
  const gate = deferred();
  const calls: { upstreamSawWrites: number; clientAnswered: boolean }[] = [];
  return {
    calls,
    release: () => gate.resolve(),
    crash: async () => {
      calls.push({
        upstreamSawWrites: upstream.writes().length,
        clientAnswered: call()?.state.answered ?? false,
      });
      await gate.promise;
    },
  };
}

describe("WriteTapProxy: pass-through", () => {
  it("forwards a GET and streams an answer: a chunk arrives before the server ends it", async () => {
    const { upstream, tap } = await setUp();
    await expect(send(`${tap.url}/hello`, "GET").result).resolves.toMatchObject({ status: 200, body: "hi" });

    const stream = send(`${tap.url}/stream`, "GET");
    await waitFor("the first chunk through the tap", () => expect(stream.state.chunks).toBe("one\n"), {
      intervalMs: 10,
      timeoutMs: 10_000,
    });
    expect(stream.state.settled).toBe(false);
    upstream.releaseStream();
    await expect(stream.result).resolves.toMatchObject({ status: 200, body: "one\ntwo\n" });
    expect(tap.take()).toEqual([]); // reads are not recorded
  });

  it("passes a quiet answer's headers on at once, before any body (a watch with no event yet)", async () => {
    const { upstream, tap } = await setUp();
    const quiet = send(`${tap.url}/quiet`, "GET");
    await waitFor("the headers through the tap", () => expect(quiet.state.answered).toBe(true), {
      intervalMs: 10,
      timeoutMs: 10_000,
    });
    expect(quiet.state.chunks).toBe("");
    upstream.releaseStream();
    await expect(quiet.result).resolves.toMatchObject({ status: 200, body: "{}" });
  });

  it("ends a stream upstream when its client goes away (a killed controller's watches end)", async () => {
    const { upstream, tap } = await setUp();
    const req = httpRequest(`${tap.url}/stream`, { agent: false });
    req.on("error", () => {});
    const answered = new Promise<IncomingMessage>((resolve) => req.on("response", resolve));
    req.end();
    const answer = await answered;
    answer.on("error", () => {});
    await new Promise((resolve) => answer.once("data", resolve));
    req.destroy();
    await waitFor("the upstream request closed", () => expect(upstream.seen[0]?.closed).toBe(true), {
      intervalMs: 10,
      timeoutMs: 10_000,
    });
  });

  it("records the writes in the order they reach it, with bodies and statuses; take() clears", async () => {
    const { upstream, tap } = await setUp();
    await send(`${tap.url}/apis/a?fieldManager=x`, "PUT", '{"a":1}').result;
    await send(`${tap.url}/hello`, "GET").result;
    await send(`${tap.url}/apis/b`, "PATCH", '{"b":2}').result;
    await send(`${tap.url}/apis/c`, "DELETE").result;
    await send(`${tap.url}/apis/d`, "POST", '{"d":4}').result;

    const writes = tap.take();
    expect(writes.map((w) => [w.method, w.path, w.requestBody, w.status, w.responseBody, w.fault])).toEqual([
      ["PUT", "/apis/a", '{"a":1}', 201, '{"echo":"{\\"a\\":1}"}', undefined],
      ["PATCH", "/apis/b", '{"b":2}', 201, '{"echo":"{\\"b\\":2}"}', undefined],
      ["DELETE", "/apis/c", "", 201, '{"echo":""}', undefined],
      ["POST", "/apis/d", '{"d":4}', 201, '{"echo":"{\\"d\\":4}"}', undefined],
    ]);
    expect(writes.every((w) => w.side === "external")).toBe(true);
    const seqs = writes.map((w) => w.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(4);
    expect(upstream.writes().map((s) => [s.method, s.url, s.body])).toEqual([
      ["PUT", "/apis/a?fieldManager=x", '{"a":1}'],
      ["PATCH", "/apis/b", '{"b":2}'],
      ["DELETE", "/apis/c", ""],
      ["POST", "/apis/d", '{"d":4}'],
    ]);
    expect(tap.take()).toEqual([]);
  });

  it("sends a DELETE's body with its length: the server reads it, and the next request on the connection is whole", async () => {
    const { upstream, tap } = await setUp();
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
    try {
      const body = JSON.stringify({ preconditions: { uid: "u-1" } });
      // The client frames it by length, as the controller's does; the tap must keep doing so upstream.
      const headers = { "content-length": String(Buffer.byteLength(body)) };
      await expect(
        send(`${tap.url}/things/a`, "DELETE", body, { agent, headers }).result,
      ).resolves.toMatchObject({
        status: 201,
      });
      await expect(send(`${tap.url}/things/b`, "PATCH", "{}", { agent }).result).resolves.toMatchObject({
        status: 201,
      });
      expect(upstream.writes().map((w) => [w.method, w.body])).toEqual([
        ["DELETE", body],
        ["PATCH", "{}"],
      ]);
    } finally {
      agent.destroy();
    }
  });

  it("numbers the writes of two taps in one order (seq)", async () => {
    const { tap } = await setUp();
    const other = await WriteTapProxy.start({ side: "kube", target: (await startUpstreamFor()).url });
    cleanups.push(() => other.close());
    await send(`${tap.url}/x`, "POST", "1").result;
    await send(`${other.url}/y`, "POST", "2").result;
    await send(`${tap.url}/z`, "POST", "3").result;
    const merged = [...tap.take(), ...other.take()].sort((a, b) => a.seq - b.seq);
    expect(merged.map((w) => [w.side, w.path])).toEqual([
      ["external", "/x"],
      ["kube", "/y"],
      ["external", "/z"],
    ]);
  });

  it("answers 502 when the server cannot be reached, and records the write without a status", async () => {
    const upstream = await startUpstream();
    const target = upstream.url;
    await upstream.close();
    const tap = await WriteTapProxy.start({ side: "external", target });
    cleanups.push(() => tap.close());
    await expect(send(`${tap.url}/hello`, "GET").result).resolves.toMatchObject({ status: 502 });
    await expect(send(`${tap.url}/x`, "POST", "{}").result).resolves.toMatchObject({ status: 502 });
    expect(tap.take()).toMatchObject([{ method: "POST", path: "/x", status: undefined }]);
  });

  it("sends its own credentials upstream in place of the client's", async () => {
    const upstream = await startUpstream();
    const tap = await WriteTapProxy.start({
      side: "kube",
      target: upstream.url,
      upstream: { headers: { Authorization: "Bearer the-identity", "Impersonate-User": "someone" } },
    });
    cleanups.push(
      () => tap.close(),
      () => upstream.close(),
    );
    await send(`${tap.url}/hello`, "GET", undefined, { headers: { authorization: "Bearer the-client" } })
      .result;
    expect(upstream.seen[0]?.headers).toMatchObject({
      authorization: "Bearer the-identity",
      "impersonate-user": "someone",
    });
  });
});

/** Another upstream, closed after the test. */
async function startUpstreamFor() {
  const upstream = await startUpstream();
  cleanups.push(() => upstream.close());
  return upstream;
}

describe("WriteTapProxy: faults", () => {
  const cases: {
    fault: TapFault;
    /** Whether the server receives the write. */
    forwarded: boolean;
    /** Whether the tap calls the arm's crash (before the client hears anything). */
    kills: boolean;
    /** What the client gets. */
    client: "socket error" | 503;
    /** The status recorded on the write. */
    status: number | undefined;
    reason: string;
  }[] = [
    {
      fault: "crash-before",
      forwarded: false,
      kills: true,
      client: "socket error",
      status: undefined,
      reason: "the request left the controller but never reaches the server: nothing committed",
    },
    {
      fault: "crash-after",
      forwarded: true,
      kills: true,
      client: "socket error",
      status: 201,
      reason: "the server commits and answers, the controller dies before a byte of the answer",
    },
    {
      fault: "fail",
      forwarded: false,
      kills: false,
      client: 503,
      status: 503,
      reason: "the tap answers 503 itself: a failed write, nothing committed",
    },
    {
      fault: "answer-lost",
      forwarded: true,
      kills: false,
      client: "socket error",
      status: 201,
      reason: "the server commits, the client's connection is reset instead of the answer",
    },
  ];

  it.each(cases)("$fault: $reason", async ({ fault, forwarded, kills, client, status }) => {
    const { upstream, tap } = await setUp();
    const sent: ReturnType<typeof send>[] = [];
    const crash = controlledCrash(upstream, () => sent[0]);
    tap.arm({ fault, select: (w) => w.path === "/apis/target", crash: crash.crash });

    const call = send(`${tap.url}/apis/target`, "POST", '{"n":1}');
    sent.push(call);
    if (kills) {
      await waitFor("the tap called crash", () => expect(crash.calls).toHaveLength(1), {
        intervalMs: 10,
        timeoutMs: 10_000,
      });
      // At the kill: the server has (crash-after) or has not (crash-before) seen the write; the client has
      // heard nothing, and hears nothing until the kill is over.
      expect(crash.calls[0]).toEqual({ upstreamSawWrites: forwarded ? 1 : 0, clientAnswered: false });
      expect(call.state.settled).toBe(false);
      crash.release();
    }
    if (client === "socket error") {
      await expect(call.result).rejects.toMatchObject(SOCKET_ERROR);
      expect(call.state.answered).toBe(false);
    } else {
      const answer = await call.result;
      expect(answer).toMatchObject({ status: 503, body: INJECTED_FAILURE_BODY });
      expect(answer.headers["content-type"]).toBe("application/json");
      expect(JSON.parse(answer.body)).toMatchObject({
        kind: "Status",
        code: 503,
        reason: "ServiceUnavailable",
      });
    }
    if (!kills) expect(crash.calls).toEqual([]);

    // A read after it reaches the server: had the tap forwarded the write, the server would have it by now.
    await send(`${tap.url}/hello`, "GET").result;
    expect(upstream.writes().map((s) => s.body)).toEqual(forwarded ? ['{"n":1}'] : []);
    expect(tap.take()).toMatchObject([
      {
        method: "POST",
        path: "/apis/target",
        requestBody: '{"n":1}',
        status,
        responseBody: forwarded ? '{"echo":"{\\"n\\":1}"}' : client === 503 ? INJECTED_FAILURE_BODY : "",
        fault,
      },
    ]);
  });

  it("is one-shot: the next write that matches passes", async () => {
    const { upstream, tap } = await setUp();
    tap.arm({ fault: "fail", select: (w) => w.method === "POST", crash: () => Promise.resolve() });
    await expect(send(`${tap.url}/x`, "POST", "1").result).resolves.toMatchObject({ status: 503 });
    await expect(send(`${tap.url}/x`, "POST", "2").result).resolves.toMatchObject({ status: 201 });
    expect(tap.take().map((w) => [w.requestBody, w.status, w.fault])).toEqual([
      ["1", 503, "fail"],
      ["2", 201, undefined],
    ]);
    expect(upstream.writes().map((s) => s.body)).toEqual(["2"]);
  });

  it("shows select each write before forwarding it, with its body and no status, until one is selected", async () => {
    const { upstream, tap } = await setUp();
    const shown: { write: TappedWrite; upstreamHadIt: boolean }[] = [];
    tap.arm({
      fault: "fail",
      select: (w) => {
        shown.push({
          write: { ...w },
          upstreamHadIt: upstream.writes().some((s) => s.body === w.requestBody),
        });
        return w.path === "/b";
      },
      crash: () => Promise.resolve(),
    });
    await send(`${tap.url}/hello`, "GET").result;
    await send(`${tap.url}/a`, "PUT", "first").result;
    await send(`${tap.url}/b`, "PUT", "second").result;
    await send(`${tap.url}/c`, "PUT", "third").result;
    expect(shown.map((s) => [s.write.path, s.write.requestBody, s.write.status, s.upstreamHadIt])).toEqual([
      ["/a", "first", undefined, false],
      ["/b", "second", undefined, false],
    ]);
  });

  it("arm replaces an armed fault; disarm drops it", async () => {
    const { tap } = await setUp();
    const never = () => Promise.resolve();
    tap.arm({ fault: "answer-lost", select: () => true, crash: never });
    tap.arm({ fault: "fail", select: () => true, crash: never });
    await expect(send(`${tap.url}/x`, "POST", "1").result).resolves.toMatchObject({ status: 503 });
    tap.arm({ fault: "fail", select: () => true, crash: never });
    tap.disarm();
    await expect(send(`${tap.url}/x`, "POST", "2").result).resolves.toMatchObject({ status: 201 });
    expect(tap.take().map((w) => w.fault)).toEqual(["fail", undefined]);
  });

  it("stays up when the crash fails: the client's side is dropped all the same", async () => {
    const { upstream, tap } = await setUp();
    const arm: TapArm = {
      fault: "crash-before",
      select: () => true,
      crash: () => Promise.reject(new Error("cannot kill")),
    };
    tap.arm(arm);
    await expect(send(`${tap.url}/x`, "POST", "1").result).rejects.toMatchObject(SOCKET_ERROR);
    await expect(send(`${tap.url}/x`, "POST", "2").result).resolves.toMatchObject({ status: 201 });
    expect(upstream.writes().map((s) => s.body)).toEqual(["2"]);
  });

  it("close() is idempotent and drops open streams", async () => {
    const { tap } = await setUp();
    const stream = send(`${tap.url}/stream`, "GET");
    await waitFor("the stream is open", () => expect(stream.state.chunks).toBe("one\n"), {
      intervalMs: 10,
      timeoutMs: 10_000,
    });
    await Promise.all([tap.close(), tap.close()]);
    await tap.close();
    await stream.settled;
    await expect(stream.result).rejects.toThrow();
  });
});

describe("openKubeTap", () => {
  it("serves TLS, writes a 0600 kubeconfig to it, and authenticates upstream as the identity, not the tap", async () => {
    const identityUser = "system:serviceaccount:shapes-system:shapes-controller";
    const peers: string[] = [];
    const upstream = await startUpstream();
    const stub = await startTlsApiStub(
      (req, res) => {
        peers.push(String((req.socket as TLSSocket).getPeerCertificate().subject.CN));
        upstream.handler(req, res);
      },
      { user: identityUser },
    );
    const dir = await mkdtemp(join(tmpdir(), "tap-test-"));
    cleanups.push(
      () => stub.close(),
      () => upstream.close(),
      () => rm(dir, { recursive: true, force: true }),
    );
    const identityPath = join(dir, "identity.kubeconfig");
    await writeFile(identityPath, stub.kubeconfigYaml, { mode: 0o600 });

    const { tap, kubeconfigPath } = await openKubeTap(identityPath, dir);
    cleanups.push(() => tap.close());
    expect(tap.side).toBe("kube");
    expect(tap.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect((await stat(kubeconfigPath)).mode & 0o777).toBe(0o600);

    // The controller's view: the tap's kubeconfig, as client-node applies it to a request.
    const kc = loadKubeConfig(kubeconfigPath);
    expect(kc.getCurrentCluster()?.server).toBe(tap.url);
    expect(kc.getCurrentUser()?.name).toBe(KUBE_TAP_USER);
    const options: RequestOptions = {};
    await kc.applyToHTTPSOptions(options);

    await expect(
      send(`${tap.url}/api/v1/namespaces`, "GET", undefined, options).result,
    ).resolves.toMatchObject({
      status: 200,
      body: "hi",
    });
    const path = "/api/v1/namespaces/default/configmaps";
    await expect(
      send(`${tap.url}${path}`, "POST", '{"kind":"ConfigMap"}', options).result,
    ).resolves.toMatchObject({
      status: 201,
    });
    expect(peers).toEqual([identityUser, identityUser]);
    expect(tap.take()).toMatchObject([
      { side: "kube", method: "POST", path, requestBody: '{"kind":"ConfigMap"}', status: 201 },
    ]);
  });
});

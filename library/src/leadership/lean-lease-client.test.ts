/**
 * The Lease client of leader election (lean-lease-client.ts over KubeHttp) against one fake Lease over HTTP
 * with the API server's rules: a table of behaviours, and a LeaderElector running on it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  LeaderElector,
  LeaseConflictError,
  toMicroTime,
  type LeaseClient,
  type LeaseRecord,
} from "./leader-election.ts";
import { LeanLeaseClient } from "./lean-lease-client.ts";
import { KubeHttp } from "../kube/kube-http.ts";
import type { KubeConnection } from "../kube/kubeconfig.ts";
import { silentLogger } from "../observability/logger.ts";

const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const PATH = "/apis/coordination.k8s.io/v1/namespaces/ops/leases";

/**
 * One Lease over HTTP with kube-apiserver's rules for what this client uses: 404 when absent, 409 on create
 * when present or on replace with a stale resourceVersion, 400 for a time that is not a MicroTime.
 * The real API server is exercised by the e2e suite.
 */
class LeaseServer {
  lease: { metadata: Record<string, unknown>; spec: Record<string, unknown> } | undefined;
  /** Every request body received (JSON text), to inspect the wire format. */
  readonly bodies: string[] = [];
  /** Never answer requests while true. */
  hang = false;
  readonly #server: Server;
  #rv = 0;

  constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<LeaseServer> {
    const server = createServer();
    const fake = new LeaseServer(server);
    server.on("request", (req, res) => void fake.#handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  /** The server as a {@link KubeConnection}, without credentials. */
  connection(): KubeConnection {
    const { port } = this.#server.address() as AddressInfo;
    return {
      server: `http://127.0.0.1:${port}`,
      namespace: undefined,
      contextName: "c",
      clusterName: "c",
      userName: "u",
      source: "(test)",
      credentials: () => Promise.resolve({ headers: {} }),
    };
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = "";
    for await (const chunk of req) text += String(chunk);
    if (this.hang) return;
    if (text) this.bodies.push(text);
    const body = text
      ? (JSON.parse(text) as { metadata: Record<string, unknown>; spec: Record<string, unknown> })
      : undefined;
    const url = req.url ?? "";
    if (req.method === "GET" && url.startsWith(`${PATH}/lease`)) {
      return this.lease ? send(res, 200, this.#stored()) : status(res, 404, "NotFound");
    }
    const bad = [body?.spec.acquireTime, body?.spec.renewTime].find(
      (t) => t !== undefined && !(typeof t === "string" && MICRO_TIME.test(t)),
    );
    if (bad !== undefined) return status(res, 400, "BadRequest");
    if (req.method === "POST" && url.startsWith(PATH)) {
      if (this.lease) return status(res, 409, "AlreadyExists");
      return this.#store(res, body!);
    }
    if (req.method === "PUT" && url.startsWith(`${PATH}/lease`)) {
      if (!this.lease) return status(res, 404, "NotFound");
      if (!body || body.metadata.resourceVersion !== this.lease.metadata.resourceVersion)
        return status(res, 409, "Conflict");
      return this.#store(res, body);
    }
    status(res, 405, "MethodNotAllowed");
  }

  #store(
    res: ServerResponse,
    body: { metadata: Record<string, unknown>; spec: Record<string, unknown> },
  ): void {
    this.lease = { metadata: { ...body.metadata, resourceVersion: String(++this.#rv) }, spec: body.spec };
    send(res, 200, this.#stored());
  }

  #stored() {
    return { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...this.lease };
  }
}

function send(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

function status(res: ServerResponse, code: number, reason: string): void {
  send(res, code, { kind: "Status", apiVersion: "v1", status: "Failure", reason, code, message: reason });
}

let server: LeaseServer | undefined;
const https: KubeHttp[] = [];
afterEach(async () => {
  await Promise.all(https.splice(0).map((http) => http.close()));
  await server?.close();
  server = undefined;
});

const signal = () => AbortSignal.timeout(10_000);

function record(overrides: Partial<LeaseRecord> = {}): LeaseRecord {
  const now = toMicroTime(Date.UTC(2026, 0, 1, 0, 0, 0, 5));
  return {
    holderIdentity: "a",
    leaseDurationSeconds: 15,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: 0,
    ...overrides,
  };
}

/** The LeaseClients over HTTP, each held to the same rules. */
const CLIENTS: { reason: string; make: (server: LeaseServer) => LeaseClient }[] = [
  {
    reason: "LeanLeaseClient (the lean client, KubeHttp)",
    make: (s) => {
      const http = new KubeHttp(s.connection());
      https.push(http);
      return new LeanLeaseClient(http, "ops", "lease");
    },
  },
];

describe.each(CLIENTS)("$reason", ({ make }) => {
  it("reads an absent Lease as undefined, creates it, and refuses to create it twice", async () => {
    server = await LeaseServer.start();
    const client = make(server);
    expect(await client.get(signal())).toBeUndefined();
    const created = await client.create(record(), signal());
    expect(created).toEqual({ resourceVersion: "1", record: record() });
    expect(await client.get(signal())).toEqual(created);
    await expect(client.create(record({ holderIdentity: "b" }), signal())).rejects.toBeInstanceOf(
      LeaseConflictError,
    );
  });

  it("replaces with a resourceVersion precondition: a stale one is a LeaseConflictError", async () => {
    server = await LeaseServer.start();
    const client = make(server);
    const created = await client.create(record(), signal());
    const renewed = await client.update(record({ leaseTransitions: 3 }), created.resourceVersion, signal());
    expect(renewed.record.leaseTransitions).toBe(3);
    await expect(client.update(record(), created.resourceVersion, signal())).rejects.toBeInstanceOf(
      LeaseConflictError,
    );
  });

  it("sends MicroTime with six decimals and keeps microseconds written by another client", async () => {
    server = await LeaseServer.start();
    const client = make(server);
    const precise = "2026-01-01T00:00:00.123456Z";
    const created = await client.create(record({ acquireTime: precise }), signal());
    expect(created.record.acquireTime).toBe(precise);
    const sent = JSON.parse(server.bodies[0]!) as { spec: { acquireTime: string; renewTime: string } };
    expect(sent.spec.acquireTime).toBe(precise);
    expect(sent.spec.renewTime).toBe("2026-01-01T00:00:00.005000Z");
  });

  it("aborts a request when its signal aborts", async () => {
    server = await LeaseServer.start();
    const client = make(server);
    server.hang = true;
    const abort = new AbortController();
    const pending = client.get(abort.signal);
    abort.abort();
    await expect(pending).rejects.toThrow();
  });

  it("lets a LeaderElector acquire, renew and release over HTTP", async () => {
    server = await LeaseServer.start();
    const stop = new AbortController();
    let leading: AbortSignal | undefined;
    const elector = new LeaderElector({
      client: make(server),
      identity: "replica-1",
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 100,
      onStartedLeading: (s) => {
        leading = s;
      },
      logger: silentLogger(),
    });
    const done = elector.run(stop.signal);
    await vi.waitFor(() => expect(elector.isLeader()).toBe(true), { timeout: 10_000 });
    await vi.waitFor(() => expect(Number(server?.lease?.metadata.resourceVersion)).toBeGreaterThan(2), {
      timeout: 10_000,
    }); // renewed
    expect(server.lease?.spec).toMatchObject({ holderIdentity: "replica-1", leaseDurationSeconds: 3 });
    stop.abort();
    await done;
    expect(leading?.aborted).toBe(true);
    expect(server.lease?.spec.holderIdentity).toBeUndefined(); // released
    expect(server.lease?.spec.leaseDurationSeconds).toBe(1);
  });
});

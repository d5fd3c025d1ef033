/**
 * A fake Kubernetes API for informer tests: one custom-resource collection served by a real node:http server,
 * speaking the real wire format (a list is a JSON `*List`; a watch is a chunked stream of JSON lines
 * `{"type":"ADDED","object":{...}}`), with a resourceVersion history so a watch resumes like the real one,
 * and faults on demand: HTTP errors, connection resets, silent watches, clean closes, 410 Gone. Lists page
 * (`limit`/`continue`), and watch-lists (`sendInitialEvents=true`) are served like kube-apiserver 1.36 with
 * its WatchList gate on (`watchLists = "serve"`, the default), or refused like it with the gate off
 * (`"refuse"`: 422 Invalid).
 *
 * It is deliberately NOT used to test controller semantics (finalizers, conflicts, RBAC): those belong to the
 * e2e suite against a real kube-apiserver. It only has to fail the ways a network and an API server fail.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig, type V1ObjectMeta } from "@kubernetes/client-node";
import type { KubeConnection } from "../kube/kubeconfig.ts";

/** An object of the fake collection. */
export interface FakeObject {
  /** `test.example.com/v1`. */
  apiVersion: string;
  /** `Widget`. */
  kind: string;
  /** Its namespace and name, the uid the server gave it, and its current resourceVersion. */
  metadata: V1ObjectMeta & { name: string; namespace: string; uid: string; resourceVersion: string };
  /** Whatever the test put. */
  spec: Record<string, unknown>;
}

/** How a list request fails: an HTTP status code, or the connection reset before any response. */
export type ListFault = number | "reset";

/**
 * How a watch request fails: an HTTP status code (410 included); `reset`: the connection dies after the backlog
 * was sent; `silent`: headers, then nothing, forever; `close`: the backlog, then a clean end of stream;
 * `gone-event`: a 200 stream carrying an ERROR event with code 410, then the end (what kube-apiserver does
 * when the resourceVersion is too old); `garbled`: the backlog, then a line that is not JSON; `slow`: a normal watch whose headers come `slowWatchDelayMs` late.
 */
export type WatchFault = number | "reset" | "silent" | "close" | "gone-event" | "slow" | "garbled";

/** Request counters: what the informer did, as the server saw it. */
export interface FakeApiStats {
  /** Lists, watch-lists included. */
  lists: number;
  /** Watch-lists served (counted in `lists` and `watches` too). */
  watchLists: number;
  /** Watch-lists refused (`watchLists = "refuse"`: 422). */
  watchListsRefused: number;
  /** The query of every request, in order. */
  queries: URLSearchParams[];
  /** Watches, watch-lists included. */
  watches: number;
  /** Watches open now. */
  openWatches: number;
  /** The most watches open at once. */
  maxOpenWatches: number;
  /** Lists in flight now. */
  openLists: number;
  /** The most lists in flight at once. */
  maxOpenLists: number;
  /** Requests answered with a fault. */
  faults: number;
  /** `slow` watches whose headers were sent. */
  slowWatchesAnswered: number;
  /** `slow` watches still open. */
  slowWatchesOpen: number;
}

interface HistoryEvent {
  rv: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: FakeObject;
}

/**
 * A fake Kubernetes API for informer tests: one custom-resource collection (`widgets.test.example.com`)
 * served over real HTTP in the real wire format, with a resourceVersion history so a watch resumes like the
 * real one, and faults on demand (see {@link ListFault}, {@link WatchFault}). Not for controller semantics:
 * those are the e2e suite's, against a real kube-apiserver. Start with `FakeKubeApi.start()`, end with
 * `close()`.
 */
export class FakeKubeApi {
  /** The collection's API group. */
  readonly group = "test.example.com";
  /** The collection's API version. */
  readonly version = "v1";
  /** The collection's resource (plural). */
  readonly plural = "widgets";
  /** The kind of its objects. */
  readonly kind = "Widget";
  /** The collection path, across namespaces. */
  readonly path = `/apis/${this.group}/${this.version}/${this.plural}`;
  /** What the server has seen so far (live: read it after the requests). */
  readonly stats: FakeApiStats = {
    lists: 0,
    watchLists: 0,
    watchListsRefused: 0,
    queries: [],
    watches: 0,
    openWatches: 0,
    maxOpenWatches: 0,
    openLists: 0,
    maxOpenLists: 0,
    faults: 0,
    slowWatchesAnswered: 0,
    slowWatchesOpen: 0,
  };
  /** Whether watch-lists are served or refused (as kube-apiserver with its WatchList gate off: 422). */
  watchLists: "serve" | "refuse" = "serve";
  /** How late a `slow` watch sends its headers. */
  slowWatchDelayMs = 1_500;

  readonly #server: Server;
  readonly #objects = new Map<string, FakeObject>();
  readonly #history: HistoryEvent[] = [];
  readonly #watchers = new Set<ServerResponse>();
  #rv = 100;
  /** Watches from a resourceVersion below this get 410 (history compacted). */
  #oldestRv = 100;
  #uid = 0;
  #listFaults: { fault: ListFault; times: number } | undefined;
  #watchFaults: { fault: WatchFault; times: number } | undefined;

  private constructor(server: Server) {
    this.#server = server;
  }

  /** Starts the server on a free loopback port. */
  static async start(): Promise<FakeKubeApi> {
    const server = createServer();
    const api = new FakeKubeApi(server);
    server.on("request", (req, res) => api.#handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return api;
  }

  /** `http://127.0.0.1:<port>` */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** A connection to this server, without credentials: what `KubeHttp` and the controllers are given. */
  connection(): KubeConnection {
    return {
      server: this.url,
      namespace: undefined,
      contextName: "fake",
      clusterName: "fake",
      userName: "fake",
      source: "(FakeKubeApi)",
      credentials: () => Promise.resolve({ headers: {} }),
    };
  }

  /** A KubeConfig pointing at this server, without credentials (for client-node's clients). */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "fake", server: this.url, skipTLSVerify: true }],
      users: [{ name: "fake" }],
      contexts: [{ name: "fake", cluster: "fake", user: "fake" }],
      currentContext: "fake",
    });
    return kc;
  }

  /** Creates or updates an object (new resourceVersion, managedFields included) and notifies open watches. */
  put(namespace: string, name: string, spec: Record<string, unknown>): FakeObject {
    const key = `${namespace}/${name}`;
    const existing = this.#objects.get(key);
    const object: FakeObject = {
      apiVersion: `${this.group}/${this.version}`,
      kind: this.kind,
      metadata: {
        name,
        namespace,
        uid: existing?.metadata.uid ?? `uid-${++this.#uid}`,
        resourceVersion: String(++this.#rv),
        managedFields: [{ manager: "kubectl", operation: "Update", fieldsV1: { "f:spec": {} } }],
      },
      spec,
    };
    this.#objects.set(key, object);
    this.#record(existing ? "MODIFIED" : "ADDED", object);
    return object;
  }

  /** Deletes an object, if present, and notifies open watches. */
  remove(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const existing = this.#objects.get(key);
    if (!existing) return;
    this.#objects.delete(key);
    const object = { ...existing, metadata: { ...existing.metadata, resourceVersion: String(++this.#rv) } };
    this.#record("DELETED", object);
  }

  /** Every object, as a list would return it. */
  objects(): FakeObject[] {
    return [...this.#objects.values()].map((o) => structuredClone(o));
  }

  /** Compacts the history: a watch from any resourceVersion seen so far now gets 410. */
  expireHistory(): void {
    this.#oldestRv = this.#rv + 1;
  }

  /** The next `times` list requests fail with `fault`. */
  failLists(fault: ListFault, times = Number.POSITIVE_INFINITY): void {
    this.#listFaults = { fault, times };
  }

  /** The next `times` watch requests fail with `fault`. */
  failWatches(fault: WatchFault, times = Number.POSITIVE_INFINITY): void {
    this.#watchFaults = { fault, times };
  }

  /** Stops injecting faults. */
  heal(): void {
    this.#listFaults = undefined;
    this.#watchFaults = undefined;
  }

  /** Ends every open watch: cleanly (`close`) or by destroying the connection (`reset`). */
  dropWatches(how: "close" | "reset"): void {
    for (const res of [...this.#watchers]) {
      if (how === "close") res.end();
      else res.socket?.destroy();
    }
  }

  /** Stops the server, cutting open connections. */
  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #record(type: HistoryEvent["type"], object: FakeObject): void {
    const event: HistoryEvent = { rv: this.#rv, type, object: structuredClone(object) };
    this.#history.push(event);
    for (const res of this.#watchers) writeEvent(res, event.type, event.object);
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", this.url);
    if (url.pathname !== this.path || req.method !== "GET") return sendStatus(res, 404, "NotFound");
    this.stats.queries.push(url.searchParams);
    if (url.searchParams.get("watch") === "true") this.#serveWatch(url, req, res);
    else this.#serveList(url, req, res);
  }

  #serveList(url: URL, req: IncomingMessage, res: ServerResponse): void {
    this.stats.lists++;
    this.stats.openLists++;
    this.stats.maxOpenLists = Math.max(this.stats.maxOpenLists, this.stats.openLists);
    res.on("close", () => this.stats.openLists--);
    const fault = take(this.#listFaults);
    if (fault !== undefined) {
      this.stats.faults++;
      if (fault === "reset") return void req.socket.destroy();
      return sendStatus(res, fault, reasonOf(fault));
    }
    // A page: `continue` is the offset (and the resourceVersion of the first page, as the real one keeps it).
    const [offset = 0, pinned = this.#rv] = (url.searchParams.get("continue") ?? "").split(":").map(Number);
    const limit = Number(url.searchParams.get("limit") ?? "0");
    const all = this.objects();
    const items = limit > 0 ? all.slice(offset, offset + limit) : all;
    const more = limit > 0 && offset + limit < all.length;
    const body = {
      apiVersion: `${this.group}/${this.version}`,
      kind: `${this.kind}List`,
      metadata: {
        resourceVersion: String(pinned || this.#rv),
        ...(more ? { continue: `${offset + limit}:${pinned || this.#rv}` } : {}),
      },
      items,
    };
    // A list's resourceVersion can always be watched from (compaction removes only what came before it).
    this.#oldestRv = Math.min(this.#oldestRv, this.#rv);
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(body));
  }

  #serveWatch(url: URL, req: IncomingMessage, res: ServerResponse): void {
    const watchList = url.searchParams.get("sendInitialEvents") === "true";
    if (watchList && this.watchLists === "refuse") {
      this.stats.watchListsRefused++;
      res.writeHead(422, { "Content-Type": "application/json" });
      const message =
        "Invalid value: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled";
      return void res.end(JSON.stringify(statusBody(422, "Invalid", message)));
    }
    if (watchList) {
      this.stats.lists++;
      this.stats.watchLists++;
    }
    this.stats.watches++;
    this.stats.openWatches++;
    this.stats.maxOpenWatches = Math.max(this.stats.maxOpenWatches, this.stats.openWatches);
    res.on("close", () => {
      this.stats.openWatches--;
      this.#watchers.delete(res);
    });
    const since = Number(url.searchParams.get("resourceVersion") ?? "0");
    const fault = take(this.#watchFaults);
    if (typeof fault === "number") {
      this.stats.faults++;
      return sendStatus(res, fault, reasonOf(fault));
    }
    if (fault === "slow") {
      this.stats.faults++;
      const timer = setTimeout(() => {
        if (res.destroyed) return;
        this.stats.slowWatchesAnswered++;
        this.stats.slowWatchesOpen++;
        res.on("close", () => this.stats.slowWatchesOpen--);
        this.#serveWatchStream(since, undefined, req, res, watchList);
      }, this.slowWatchDelayMs);
      res.on("close", () => clearTimeout(timer));
      return;
    }
    this.#serveWatchStream(since, fault, req, res, watchList);
  }

  #serveWatchStream(
    since: number,
    fault: Exclude<WatchFault, number | "slow"> | undefined,
    req: IncomingMessage,
    res: ServerResponse,
    watchList = false,
  ): void {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.flushHeaders();
    if (fault === "silent") {
      this.stats.faults++;
      return; // headers sent; nothing else, ever
    }
    if (fault === "gone-event" || (!watchList && since < this.#oldestRv)) {
      if (fault !== undefined) this.stats.faults++;
      writeEvent(res, "ERROR", statusBody(410, "Expired", "too old resource version"));
      return void res.end();
    }
    if (watchList) {
      // The current objects as ADDED, then the bookmark that ends the initial events.
      for (const object of this.objects()) writeEvent(res, "ADDED", object);
      writeEvent(res, "BOOKMARK", {
        apiVersion: `${this.group}/${this.version}`,
        kind: this.kind,
        metadata: { resourceVersion: String(this.#rv), annotations: { "k8s.io/initial-events-end": "true" } },
      });
    } else {
      for (const event of this.#history) {
        if (event.rv > since) writeEvent(res, event.type, event.object);
      }
    }
    if (fault === "close") {
      this.stats.faults++;
      return void res.end();
    }
    if (fault === "garbled") {
      this.stats.faults++;
      res.write('{"type":"ADDED","object":{"metadata"\n');
    }
    if (fault === "reset") {
      this.stats.faults++;
      return void setImmediate(() => req.socket.destroy());
    }
    this.#watchers.add(res);
  }
}

function take<F>(faults: { fault: F; times: number } | undefined): F | undefined {
  if (faults === undefined || faults.times <= 0) return undefined;
  faults.times--;
  return faults.fault;
}

function writeEvent(res: ServerResponse, type: string, object: unknown): void {
  res.write(`${JSON.stringify({ type, object })}\n`);
}

function statusBody(code: number, reason: string, message: string) {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code };
}

function sendStatus(res: ServerResponse, code: number, reason: string): void {
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  if (code === 429) headers["Retry-After"] = "1";
  res.writeHead(code, headers);
  res.end(JSON.stringify(statusBody(code, reason, `injected ${code}`)));
}

function reasonOf(code: number): string {
  const reasons: Record<number, string> = {
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    410: "Expired",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
  };
  return reasons[code] ?? "Unknown";
}

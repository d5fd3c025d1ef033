import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { AccessGate, type AccessControl } from "./access.ts";
import type { DecisionHistory } from "./history.ts";
import { allowedHostNames, isAllowedHost } from "./host-check.ts";
import type { Logger } from "./logger.ts";

/**
 * One readiness condition, e.g. "informers synced" or "initial sync done". Returns true when ready.
 * A check that throws or rejects counts as not ready.
 */
export type ReadinessCheck = () => boolean | Promise<boolean>;

/** Options of a {@link HealthServer}. */
export interface HealthServerOptions {
  /** Served on `/metrics`. */
  registry: Registry;
  /** Named checks for `/readyz`; more can be added with `setReadinessCheck`. */
  readinessChecks?: Record<string, ReadinessCheck>;
  /** Logs start, stop and handler failures. */
  logger: Logger;
  /** Served read-only on `/why` and `/why/<namespace>/<name>` when given. */
  history?: DecisionHistory;
  /**
   * When given, `/metrics` and `/why` answer only to a bearer token the reviewer authenticates, of a user it
   * allows to read them (observability/access.ts says what each path needs); `/healthz` and `/readyz` stay
   * open for the probes. Without it, whoever reaches the port reads everything, and so the server answers
   * only requests whose `Host` names it (`allowedHosts`).
   */
  access?: AccessControl;
  /**
   * Without `access`: the host names (any port) the server answers for besides `localhost`, IP addresses and
   * its listen address's host, e.g. a Service's name a scraper uses. A request for any other `Host` is
   * answered 421 Misdirected Request, every path alike, so that a web page cannot read the port through DNS
   * rebinding (observability/host-check.ts). With `access`, the token guards `/metrics` and `/why` and
   * every `Host` is answered.
   */
  allowedHosts?: readonly string[];
}

/** A parsed `host:port` listen address; `host` undefined means every interface. */
export interface ListenAddress {
  readonly host: string | undefined;
  readonly port: number;
}

/**
 * Parses a listen address as flags give it: `127.0.0.1:8080`, `:8080` (every interface), `[::1]:0`, `localhost:0`.
 * Port 0 picks a free port. Throws "cannot parse listen address ..." on anything else.
 */
export function parseListenAddress(address: string): ListenAddress {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(address);
  const port = Number(match?.[3]);
  if (match === null || port > 65_535) {
    throw new Error(
      `cannot parse listen address ${JSON.stringify(address)}: expected host:port, :port or [ipv6]:port`,
    );
  }
  const host = match[1] ?? match[2];
  return { host: host === "" ? undefined : host, port };
}

/**
 * Parses a list of host names as flags give it (`--metrics-allowed-hosts`): comma-separated, blanks dropped,
 * e.g. `controller, shapes-controller.shapes-system.svc`. A name is letters, digits, `.`, `-` and `_`, without
 * a port (every port is answered). Throws "cannot allow host ..." on anything else.
 */
export function parseAllowedHosts(text: string): string[] {
  const names = text
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  for (const name of names) {
    if (!/^[A-Za-z0-9_][A-Za-z0-9._-]{0,252}$/.test(name)) {
      throw new Error(
        `cannot allow host ${JSON.stringify(name)}: expected a host name (letters, digits, '.', '-', '_'), without a port`,
      );
    }
  }
  return names;
}

/**
 * A tiny HTTP server for probes and scraping:
 * - `GET /healthz`: 200 while the process is alive (the event loop answers).
 * - `GET /readyz`: 200 when every readiness check passes, else 503; the body lists each check as
 *   `[+]name ok` or `[-]name failed`, then names the failing ones.
 * - `GET /metrics`: the registry in Prometheus text format.
 * - `GET /why/<namespace>/<name>`: what the controller's recent reconciles of that object saw, decided and
 *   did (JSON, observability/history.ts; 404 when nothing is kept). `GET /why`: how much the history holds.
 *   Read-only; `npm run why` tells it as a story.
 * Anything else is 404 (405 for a method other than GET/HEAD). With `access`, `/metrics` and `/why` first
 * check the request's bearer token and what its user may read: 401, 403, 429 or 503 otherwise (access.ts).
 * Without it, every path first checks the request's `Host` (`allowedHosts`): 421 for a name it was not given.
 */
export class HealthServer {
  readonly #registry: Registry;
  readonly #checks: Map<string, ReadinessCheck>;
  readonly #logger: Logger;
  readonly #history: DecisionHistory | undefined;
  readonly #access: AccessGate | undefined;
  readonly #allowedHosts: readonly string[];
  /** The names `Host` may carry (without `access`): set by `start`, which knows the listen address. */
  #hosts: ReadonlySet<string> = new Set();
  /** When a 429 was last logged as a warning: at most one a minute (a flood of tokens must not flood the log). */
  #throttleWarnedAt = Number.NEGATIVE_INFINITY;
  #server: Server | undefined;

  /** Builds a stopped server; call `start()`. Throws on an `allowedHosts` entry that is no host name. */
  constructor(options: HealthServerOptions) {
    this.#registry = options.registry;
    this.#checks = new Map(Object.entries(options.readinessChecks ?? {}));
    this.#logger = options.logger;
    this.#history = options.history;
    this.#access = options.access && new AccessGate(options.access);
    this.#allowedHosts = parseAllowedHosts((options.allowedHosts ?? []).join(","));
  }

  /** Called by components as they come up (e.g. an informer registering "informer/shapes synced"). Replaces a check of the same name. */
  setReadinessCheck(name: string, check: ReadinessCheck): void {
    this.#checks.set(name, check);
  }

  /**
   * Called once at startup: listens on `address` (see {@link parseListenAddress}; port 0 picks a free port) and
   * resolves with the base URL, e.g. `http://127.0.0.1:41234`. Rejects when the address cannot be bound.
   */
  async start(address: string): Promise<string> {
    if (this.#server !== undefined) throw new Error("cannot start the health server: it is already started");
    const { host, port } = parseListenAddress(address);
    this.#hosts = allowedHostNames([...this.#allowedHosts, ...(host === undefined ? [] : [host])]);
    const server = createServer((req, res) => {
      this.#handle(req, res).catch((error: unknown) => {
        this.#logger.error({ err: error, url: req.url }, "health server handler failed");
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end("internal error\n");
      });
    });
    await new Promise<void>((resolve, reject) => {
      const fail = (error: Error) =>
        reject(new Error(`cannot listen on ${address}: ${error.message}`, { cause: error }));
      server.once("error", fail);
      server.listen(port, host, () => {
        server.off("error", fail);
        resolve();
      });
    });
    this.#server = server;
    const bound = server.address() as AddressInfo;
    const url = `http://${urlHost(bound.address)}:${bound.port}`;
    this.#logger.info({ url }, "health server listening");
    return url;
  }

  /** Called at shutdown: closes the listener and every open connection. Resolves when closed; a no-op when not started. */
  async stop(): Promise<void> {
    const server = this.#server;
    if (server === undefined) return;
    this.#server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.#access && !isAllowedHost(req.headers.host, this.#hosts)) {
      this.#logger.debug({ host: req.headers.host }, "metrics port: request for another host refused");
      const names = [...this.#hosts].join(", ");
      return send(
        res,
        421,
        `misdirected request: this server does not answer for host ${JSON.stringify(req.headers.host)}; without a token it answers only for IP addresses and ${names} (a web page must not read it through DNS rebinding)\n`,
      );
    }
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const why = this.#history !== undefined && (path === "/why" || path.startsWith("/why/"));
    if (path !== "/healthz" && path !== "/readyz" && path !== "/metrics" && !why)
      return send(res, 404, "not found\n");
    if (req.method !== "GET" && req.method !== "HEAD") return send(res, 405, "method not allowed\n");
    if (this.#access && (why || path === "/metrics")) {
      const verdict = await this.#access.check(req, path);
      if (!verdict.allowed) {
        const user = verdict.user?.username;
        if (verdict.status === 503) {
          this.#logger.error(
            { err: verdict.failure, path, user },
            "cannot review a request to the metrics port",
          );
        } else if (verdict.status === 429) {
          const now = Date.now();
          if (now - this.#throttleWarnedAt >= 60_000) {
            this.#throttleWarnedAt = now;
            this.#logger.warn(
              { path },
              "metrics port: too many unknown tokens, not reviewed (429; said at most once a minute)",
            );
          }
        } else {
          // No status number here: a 403 in a log line means an RBAC gap of the controller's own (stack/).
          const reason = verdict.status === 401 ? "no token the API server accepts" : "not allowed";
          this.#logger.debug({ path, user, reason }, "metrics port: request refused");
        }
        const headers: Record<string, string> =
          verdict.status === 401
            ? { "www-authenticate": "Bearer" }
            : verdict.retryAfterSeconds !== undefined
              ? { "retry-after": String(verdict.retryAfterSeconds) }
              : {};
        if (why) {
          const body = `${JSON.stringify({ error: verdict.message })}\n`;
          return send(res, verdict.status, body, "application/json; charset=utf-8", headers);
        }
        return send(res, verdict.status, `${verdict.message}\n`, undefined, headers);
      }
    }
    if (why && this.#history) return this.#why(res, this.#history, path);
    switch (path) {
      case "/healthz":
        return send(res, 200, "ok\n");
      case "/readyz":
        return this.#readyz(res);
      case "/metrics":
        return send(res, 200, await this.#registry.metrics(), this.#registry.contentType);
    }
  }

  #why(res: ServerResponse, history: DecisionHistory, path: string): void {
    const json = (status: number, body: unknown) =>
      send(res, status, `${JSON.stringify(body)}\n`, "application/json; charset=utf-8");
    if (path === "/why") return json(200, history.size());
    let subject: string;
    try {
      subject = decodeURIComponent(path.slice("/why/".length));
    } catch {
      return json(400, { error: "cannot read the object's name: a malformed %-escape" });
    }
    const kept = history.get(subject);
    if (!kept) return json(404, { error: `no decisions recorded for ${subject}` });
    return json(200, kept);
  }

  async #readyz(res: ServerResponse): Promise<void> {
    const results = await Promise.all(
      [...this.#checks].map(async ([name, check]) => ({ name, ok: await passes(check) })),
    );
    const failing = results.filter((r) => !r.ok).map((r) => r.name);
    const lines = results.map((r) => `[${r.ok ? "+" : "-"}]${r.name} ${r.ok ? "ok" : "failed"}`);
    lines.push(failing.length === 0 ? "ok" : `not ready: ${failing.join(", ")}`);
    send(res, failing.length === 0 ? 200 : 503, `${lines.join("\n")}\n`);
  }
}

async function passes(check: ReadinessCheck): Promise<boolean> {
  try {
    return (await check()) === true;
  } catch {
    return false;
  }
}

function send(
  res: ServerResponse,
  status: number,
  body: string,
  contentType = "text/plain; charset=utf-8",
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { ...headers, "content-type": contentType, "cache-control": "no-store" });
  res.end(body);
}

/** The host part of a URL for a bound address: wildcard binds are reached on loopback; IPv6 goes in brackets. */
function urlHost(address: string): string {
  if (address === "::" || address === "0.0.0.0") return "127.0.0.1";
  return address.includes(":") ? `[${address}]` : address;
}

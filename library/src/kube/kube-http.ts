/**
 * The controller's Kubernetes writes, as lean as a client can be: node:https over ONE keep-alive Agent per
 * API server, plain JSON bodies, the answer parsed once.
 *
 * Why not client-node's generated API classes (`CustomObjectsApi`, `CoreV1Api`) for the hot path: measured
 * on this project's 2 cores, the writes a converged Shape costs went 4.4× slower through them than through
 * a keep-alive https Agent with plain JSON (26.6 s vs 6.0 s for 5,000 writes), and a CPU profile
 * of the controller converging 1,000 Shapes spent more of its CPU in undici, web streams and client-node's
 * ObjectSerializer than in the reconciles. Every request there builds a fresh undici Agent (only to be
 * swapped for the pooled one, see pooled-kube-config.ts), a middleware chain, a typed serialisation of the body and
 * a web stream of the answer. Here a request is one `https.request`. client-node stays what it is good at:
 * exec plugins (the `generated-client` figures in docs/benchmarks.md).
 *
 * What it connects to: a {@link KubeConnection} (kubeconfig.ts, the lean loader: no client-node at run time;
 * a client-node KubeConfig becomes one through `kubeConnectionOf`, in `reconcile-kit/client-node`).
 * Authentication and TLS are read again from it every `authTtlMs` (tokens rotate — a token file's source
 * re-reads it — and an exec plugin's token expires): a changed CA, client certificate or key gets a new Agent.
 */
import http from "node:http";
import https from "node:https";
import { exchange, keepAliveAgent } from "../support/keep-alive-http.ts";
import type { KubeConnection } from "./kubeconfig.ts";

/** A request's HTTP method. */
export type KubeMethod = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";

/** A JSON merge patch (RFC 7386): what the controller's patches are. */
export const MERGE_PATCH = "application/merge-patch+json";

/** An API server answer that was not 2xx. `code` is what `statusCodeOf` reads (as client-node's ApiException). */
export class KubeApiError extends Error {
  /** The HTTP status. */
  readonly code: number;
  /** The Status object's `reason` (e.g. `Conflict`, `NotFound`), when the body was one. */
  readonly reason: string | undefined;
  /** The body as the API server sent it (text). */
  readonly body: string;

  constructor(method: string, path: string, code: number, body: string) {
    const status = parseStatus(body);
    const said = status?.message ?? (body.trim().slice(0, 300) || http.STATUS_CODES[code] || "no body");
    super(`${method} ${path}: ${code} ${status?.reason ?? http.STATUS_CODES[code] ?? ""}: ${said}`.trim());
    this.name = "KubeApiError";
    this.code = code;
    this.reason = status?.reason;
    this.body = body;
  }
}

/** Options of {@link KubeHttp}. */
export interface KubeHttpOptions {
  /** Connections at most, per API server. Default 32. */
  maxSockets?: number;
  /** How long authentication headers and TLS material are reused before being read again. Default 10 s. */
  authTtlMs?: number;
  /** Gives up on a request that has not answered after this long. Default 30 s. */
  timeoutMs?: number;
}

interface Auth {
  server: URL;
  headers: Record<string, string | string[]>;
  agent: http.Agent;
  /** ca/cert/key as read, to see when they change. */
  tls: string;
  readAt: number;
}

/**
 * Requests to the API server of a {@link KubeConnection}. Every call is
 * one request that resolves with the parsed answer or rejects with a {@link KubeApiError} (or a network
 * error); none retries by itself.
 */
export class KubeHttp {
  readonly #connection: KubeConnection;
  readonly #options: Required<KubeHttpOptions>;
  #auth: Promise<Auth> | undefined;
  #closed = false;

  constructor(connection: KubeConnection, options: KubeHttpOptions = {}) {
    this.#connection = connection;
    this.#options = {
      maxSockets: options.maxSockets ?? 32,
      authTtlMs: options.authTtlMs ?? 10_000,
      timeoutMs: options.timeoutMs ?? 30_000,
    };
  }

  /**
   * Sends `body` as JSON (with `contentType`, default application/json) and resolves with the parsed answer
   * (undefined for an empty one). Rejects with {@link KubeApiError} for a non-2xx answer, and with the
   * signal's reason when `signal` aborts first.
   */
  async request<T = unknown>(
    method: KubeMethod,
    path: string,
    body?: unknown,
    contentType = "application/json",
    signal?: AbortSignal,
  ): Promise<T> {
    // Messages say what failed, not "cannot …": the caller's asError puts its step's words in front.
    if (this.#closed) throw new Error(`${method} ${path}: the Kubernetes client is closed`);
    const auth = await this.#currentAuth();
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string | string[] | number> = {
      ...auth.headers,
      Accept: "application/json",
    };
    if (payload !== undefined) {
      headers["Content-Type"] = contentType;
      headers["Content-Length"] = Buffer.byteLength(payload);
    }
    // Relative to the server's URL, so a path prefix in it (a proxy's /k8s/…) is kept.
    const answer = await exchange({
      server: auth.server,
      path,
      method,
      headers,
      agent: auth.agent,
      body: payload,
      timeoutMs: this.#options.timeoutMs,
      signal,
    });
    if (answer.status < 200 || answer.status >= 300) {
      throw new KubeApiError(method, path, answer.status, answer.text);
    }
    if (answer.text === "") return undefined as T;
    try {
      return JSON.parse(answer.text) as T;
    } catch {
      throw new Error(
        `${method} ${path}: ${answer.status} with a body that is not JSON: ${answer.text.slice(0, 200)}`,
      );
    }
  }

  /**
   * A streaming GET (a watch): calls `onLine` with each line of the answer parsed as JSON, in order, as it
   * arrives, over one keep-alive request; `onOpen` is called when a 2xx answer's headers arrived. Resolves `"ended"` when the server ends the stream cleanly, and
   * `"idle"` when nothing arrived for `idleTimeoutMs` (default: the request timeout; the request is then
   * aborted). Rejects with {@link KubeApiError} for a non-2xx answer, with an error naming the line for a
   * line that is not JSON, with what `onLine` threw, with the signal's reason when `signal` aborts, and with
   * a network error when the connection breaks.
   */
  async stream(
    path: string,
    onLine: (line: unknown) => void,
    options: { signal?: AbortSignal; idleTimeoutMs?: number; onOpen?: () => void } = {},
  ): Promise<"ended" | "idle"> {
    if (this.#closed) throw new Error(`GET ${path}: the Kubernetes client is closed`);
    const { signal } = options;
    signal?.throwIfAborted();
    const idleTimeoutMs = options.idleTimeoutMs ?? this.#options.timeoutMs;
    const auth = await this.#currentAuth();
    const url = new URL(path.replace(/^\//, ""), auth.server);
    const send = url.protocol === "http:" ? http.request : https.request;
    return new Promise<"ended" | "idle">((resolve, reject) => {
      let settled = false;
      const finish = (outcome: "ended" | "idle" | Error) => {
        if (settled) return;
        settled = true;
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const req = send(
        url,
        {
          method: "GET",
          headers: { ...auth.headers, Accept: "application/json" },
          agent: auth.agent,
          timeout: idleTimeoutMs,
          ...(signal ? { signal } : {}),
        },
        (res) => {
          const code = res.statusCode ?? 0;
          const chunks: Buffer[] = [];
          if (code < 200 || code >= 300) {
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("end", () =>
              finish(new KubeApiError("GET", path, code, Buffer.concat(chunks).toString("utf8"))),
            );
            res.on("error", finish);
            return;
          }
          options.onOpen?.();
          let pending = "";
          const take = (text: string) => {
            if (text.trim() === "") return;
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              throw new Error(`GET ${path}: a line of the stream is not JSON: ${text.slice(0, 200)}`);
            }
            onLine(parsed);
          };
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            if (settled) return;
            pending += chunk;
            let newline = pending.indexOf("\n");
            try {
              while (newline >= 0) {
                const line = pending.slice(0, newline);
                pending = pending.slice(newline + 1);
                take(line);
                newline = pending.indexOf("\n");
              }
            } catch (error) {
              finish(error as Error);
              req.destroy();
            }
          });
          res.on("end", () => {
            if (settled) return;
            try {
              take(pending);
              finish("ended");
            } catch (error) {
              finish(error as Error);
            }
          });
          // A reset mid-stream: "aborted" then "error" or "close" without "end".
          res.on("error", (error) =>
            finish(new Error(`GET ${path}: the connection broke mid-stream (${error.message})`)),
          );
          res.on("close", () => {
            if (!res.complete) finish(new Error(`GET ${path}: the connection closed mid-stream`));
          });
        },
      );
      req.on("timeout", () => {
        finish("idle");
        req.destroy();
      });
      req.on("error", (error) => finish(signal?.aborted ? (signal.reason as Error) : error));
      req.end();
    });
  }

  /** Closes every idle connection; requests after this fail. Call once at shutdown. */
  async close(): Promise<void> {
    this.#closed = true;
    const auth = await this.#auth?.catch(() => undefined);
    auth?.agent.destroy();
  }

  /** The headers and Agent to use now: read again from the KubeConfig once `authTtlMs` passed. */
  #currentAuth(): Promise<Auth> {
    const current = this.#auth;
    if (current) {
      return current.then((auth) =>
        Date.now() - auth.readAt < this.#options.authTtlMs ? auth : this.#refresh(auth),
      );
    }
    return this.#refresh(undefined);
  }

  #refresh(previous: Auth | undefined): Promise<Auth> {
    const next = this.#readAuth(previous);
    this.#auth = next;
    // A failed read is not cached: the next request tries again.
    next.catch(() => {
      if (this.#auth === next) this.#auth = undefined;
    });
    return next;
  }

  async #readAuth(previous: Auth | undefined): Promise<Auth> {
    const connection = this.#connection;
    const creds = await connection.credentials();
    const headers = creds.headers;
    const tls = JSON.stringify([
      creds.ca?.toString("base64"),
      creds.cert?.toString("base64"),
      creds.key?.toString("base64"),
      creds.rejectUnauthorized,
      creds.servername,
    ]);
    const serverText = connection.server.endsWith("/") ? connection.server : `${connection.server}/`;
    if (previous && previous.tls === tls && previous.server.href === new URL(serverText).href) {
      return { ...previous, headers, readAt: Date.now() };
    }
    previous?.agent.destroy();
    const server = new URL(serverText);
    // One Agent per server and TLS setup (a change above gets a new one): keepAliveAgent says why.
    const agent = keepAliveAgent(server, {
      maxSockets: this.#options.maxSockets,
      ...(creds.ca ? { ca: creds.ca } : {}),
      ...(creds.cert ? { cert: creds.cert } : {}),
      ...(creds.key ? { key: creds.key } : {}),
      ...(creds.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: creds.rejectUnauthorized }),
      ...(creds.servername === undefined ? {} : { servername: creds.servername }),
    });
    return { server, headers, agent, tls, readAt: Date.now() };
  }
}

function parseStatus(body: string): { reason?: string; message?: string } | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed !== "object" || parsed === null) return undefined;
    const { reason, message } = parsed as { reason?: unknown; message?: unknown };
    return {
      ...(typeof reason === "string" ? { reason } : {}),
      ...(typeof message === "string" ? { message } : {}),
    };
  } catch {
    return undefined;
  }
}

/**
 * HTTP/1.1 over ONE keep-alive Agent per server, for a plugin's external client: `KeepAliveHttp` sends a
 * request and resolves with the whole answer as text (status and headers with it), or opens a stream (a
 * change feed) and hands over its body as text chunks. `exchange` is the one request both it and the
 * library's Kubernetes client (kube/kube-http.ts) are built on.
 *
 * Why not `fetch`: a CPU profile of the controller converging 1,000 Shapes (docs/benchmarks.md) spent 22 % of its CPU in
 * undici and web streams for the cloud client's calls — per request a Request, a Headers, a web stream of
 * the body, an `AbortSignal.any` of the caller's signal and a timeout signal. Here a request is one
 * `http.request` on a pooled socket and one timer.
 *
 * It knows nothing about what is sent: bodies are text, failures are what a caller classifies. A request
 * rejects only when no complete answer came — a network error, the timeout (`no answer in N ms`) or the
 * caller's signal (with its reason) — and resolves with any status, 4xx and 5xx included.
 */
import http from "node:http";
import https from "node:https";

/** A complete answer: status, headers and the body as text. */
export interface HttpAnswer {
  /** The HTTP status code. */
  readonly status: number;
  /** The response headers, names in lower case. */
  readonly headers: http.IncomingHttpHeaders;
  /** The whole body, decoded as UTF-8. */
  readonly text: string;
}

/** An answer whose body is still arriving: its chunks, as text, in order, until the server ends it. */
export interface HttpStream {
  /** The HTTP status code. */
  readonly status: number;
  /** The response headers, names in lower case. */
  readonly headers: http.IncomingHttpHeaders;
  /** The body's chunks as they arrive; the iteration ends with the body and throws if the connection breaks. */
  readonly body: AsyncIterable<string>;
}

/** Where a request goes: a server (parsed once) and a path with its query. */
export interface HttpTarget {
  readonly server: URL;
  /** Joined to the server's own path (`/k8s/` + `api/v1/...`): a proxy's prefix is kept. */
  readonly path: string;
}

/** One request of {@link exchange}. */
export interface HttpExchange extends HttpTarget {
  readonly method: string;
  readonly headers: http.OutgoingHttpHeaders;
  readonly agent: http.Agent;
  readonly body?: string | undefined;
  /** The whole exchange, from sending to the last byte of the answer, may take this long. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Sends one request over `agent` and resolves with the complete answer. Rejects with a network error, with
 * `<METHOD> <path>: no answer in <timeoutMs> ms` when the answer was not complete in time (the request is
 * then destroyed), and with the signal's reason when `signal` aborts first.
 */
export function exchange(request: HttpExchange): Promise<HttpAnswer> {
  const { method, path, signal, timeoutMs } = request;
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<HttpAnswer>((resolve, reject) => {
    const fail = (error: Error) => {
      clearTimeout(timer);
      reject(signal?.aborted ? (signal.reason as Error) : error);
    };
    const req = send(request, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        clearTimeout(timer);
        const text =
          chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8");
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
      });
      res.on("error", fail);
    });
    const timer = setTimeout(
      () => req.destroy(new Error(`${method} ${path}: no answer in ${timeoutMs} ms`)),
      timeoutMs,
    );
    req.on("error", fail);
    req.end(request.body);
  });
}

/** Options of {@link KeepAliveHttp}. */
export interface KeepAliveHttpOptions {
  /** The server, e.g. `http://127.0.0.1:8080` (a path in it prefixes every request's). */
  baseUrl: string;
  /** Sent with every request (a request's own headers win). */
  headers?: http.OutgoingHttpHeaders;
  /** Connections at most. Default 32. */
  maxSockets?: number;
  /** A request's timeout, unless the call gives its own. Default 10 s. */
  timeoutMs?: number;
}

/** The options of one {@link KeepAliveHttp.request}. */
export interface KeepAliveRequest {
  /** Request headers, beside the client's own. */
  headers?: http.OutgoingHttpHeaders;
  /** Sent as is: the caller serialises (and sets the content type). */
  body?: string | undefined;
  /** Aborts the request; the call then rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** The longest the whole exchange may take; then the call rejects. Default the client's. */
  timeoutMs?: number;
}

/**
 * Requests to one server over one keep-alive Agent. See the module comment; {@link KeepAliveHttp.close} at
 * shutdown closes the idle connections.
 */
export class KeepAliveHttp {
  readonly #server: URL;
  readonly #agent: http.Agent;
  readonly #headers: http.OutgoingHttpHeaders;
  readonly #timeoutMs: number;

  constructor(options: KeepAliveHttpOptions) {
    const base = options.baseUrl.endsWith("/") ? options.baseUrl : `${options.baseUrl}/`;
    this.#server = new URL(base);
    if (this.#server.protocol !== "http:" && this.#server.protocol !== "https:") {
      throw new Error(`${options.baseUrl} is not an http or https URL`);
    }
    this.#agent = keepAliveAgent(this.#server, { maxSockets: options.maxSockets ?? 32 });
    this.#headers = options.headers ?? {};
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** One request; resolves with the complete answer, whatever its status (see {@link exchange}). */
  request(method: string, path: string, options: KeepAliveRequest = {}): Promise<HttpAnswer> {
    const headers = { ...this.#headers, ...options.headers };
    if (options.body !== undefined) headers["content-length"] = Buffer.byteLength(options.body);
    return exchange({
      server: this.#server,
      path,
      method,
      headers,
      agent: this.#agent,
      body: options.body,
      timeoutMs: options.timeoutMs ?? this.#timeoutMs,
      signal: options.signal,
    });
  }

  /**
   * A streaming request (a change feed): `GET` unless `method` says otherwise, with `body` sent as is (the
   * caller sets its content type; etcd's JSON gateway watch, for one, is a POST with a body). Resolves once
   * the answer's headers arrived, whatever its status, with the body to read to its end. Reading it throws
   * when the connection breaks, when nothing arrived for `idleTimeoutMs` (`<METHOD> <path>: nothing for <N>
   * ms`), and with the signal's reason when `signal` aborts.
   */
  stream(
    path: string,
    options: {
      /** The request's method. Default `GET`. */
      method?: string;
      /** Request headers, beside the client's own. */
      headers?: http.OutgoingHttpHeaders;
      /** Sent as is, with its length: the caller serialises (and sets the content type). */
      body?: string | undefined;
      /** Aborts the request, or the reading of its body; either then rejects with the signal's reason. */
      signal?: AbortSignal | undefined;
      /** The longest the answer may bring nothing (its headers, then between chunks); then it fails. */
      idleTimeoutMs: number;
    },
  ): Promise<HttpStream> {
    const { signal, idleTimeoutMs, body } = options;
    const method = options.method ?? "GET";
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    const headers = options.headers ? { ...this.#headers, ...options.headers } : { ...this.#headers };
    if (body !== undefined) headers["content-length"] = Buffer.byteLength(body);
    let idle: Error | undefined;
    /** Why reading ended early, in the caller's terms: its own abort, the silence, or what broke. */
    const why = (error: Error): Error => (signal?.aborted ? (signal.reason as Error) : (idle ?? error));
    return new Promise<HttpStream>((resolve, reject) => {
      const req = send({ server: this.#server, path, method, headers, agent: this.#agent, signal }, (res) => {
        res.setEncoding("utf8");
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: textOf(res, why) });
      });
      req.setTimeout(idleTimeoutMs, () => {
        idle = new Error(`${method} ${path}: nothing for ${idleTimeoutMs} ms`);
        req.destroy(idle);
      });
      req.on("error", (error) => reject(why(error)));
      req.end(body);
    });
  }

  /** Closes the idle connections (and the busy ones once their answers are in). */
  close(): void {
    this.#agent.destroy();
  }
}

/**
 * A keep-alive Agent for one server (http or https, as `server` says) with one TLS setup: never shared
 * between servers. An https Agent keys its pool by a name it builds for every request from the TLS options,
 * the CA, client certificate and key included (PEM text, kilobytes, decoded and hashed per request: about
 * 30 µs each here); an Agent that only ever talks to one server with one setup needs one name.
 */
export function keepAliveAgent(server: URL, options: https.AgentOptions): http.Agent {
  const agentOptions = { ...options, keepAlive: true };
  return server.protocol === "http:" ? new http.Agent(agentOptions) : new OneServerAgent(agentOptions);
}

/** See {@link keepAliveAgent}. */
class OneServerAgent extends https.Agent {
  override getName(): string {
    return "the-one-server";
  }
}

/** The chunks of an answer being read; a failure to read is rethrown as `why` says. */
async function* textOf(res: http.IncomingMessage, why: (error: Error) => Error): AsyncIterable<string> {
  try {
    for await (const chunk of res) yield chunk as string;
  } catch (error) {
    throw why(error as Error);
  }
}

/** `http.request` or `https.request` to the target; the signal, when given, destroys the request. */
function send(
  request: HttpTarget & {
    method: string;
    headers: http.OutgoingHttpHeaders;
    agent: http.Agent;
    signal?: AbortSignal | undefined;
  },
  onResponse: (res: http.IncomingMessage) => void,
): http.ClientRequest {
  const { server } = request;
  const options: http.RequestOptions = {
    protocol: server.protocol,
    // URL keeps an IPv6 literal's brackets; the socket wants the bare address.
    hostname: server.hostname.startsWith("[") ? server.hostname.slice(1, -1) : server.hostname,
    port: server.port,
    path: server.pathname + (request.path.startsWith("/") ? request.path.slice(1) : request.path),
    method: request.method,
    headers: request.headers,
    agent: request.agent,
    ...(request.signal ? { signal: request.signal } : {}),
  };
  return server.protocol === "http:" ? http.request(options, onResponse) : https.request(options, onResponse);
}

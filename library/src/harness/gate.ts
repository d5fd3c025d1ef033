/**
 * An answer gate: a pass-through HTTP proxy between a controller and its external API that can HOLD the
 * answer to one request. The API has done the work (the object is created, or deleted) but the controller
 * has not heard back yet. That is the exact moment of "a crash after the external call, before any
 * bookkeeping", or of "the external side is done, the Kubernetes side not yet" — made deterministic instead
 * of lucky (the Shapes controller's stack, for example):
 *
 *   const gate = await AnswerGate.start(cloud.url);
 *   const controller = await stack.startController({ cloudUrl: gate.url });
 *   const held = gate.hold({ method: "POST", path: "/v1/shapes" });
 *   await stack.kube.applyShape(ns, "foo", spec);
 *   const answer = await held;          // the API answered 201; the controller is still waiting
 *   await controller.kill();            // ...and never hears it
 *
 * Everything else (a watch's or change feed's stream included) passes through untouched.
 */
import {
  createServer,
  request,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";

/** Which request's answer to hold: an exact method and a path (exact string, or a pattern; no query). */
export interface HoldMatch {
  /** The request's method, exactly ("POST"). */
  method: string;
  /** The request's path without its query: this string exactly, or any path the pattern matches. */
  path: string | RegExp;
}

/** An answer the external API gave that the gate has not passed on (yet). */
export interface HeldAnswer {
  /** The request's method. */
  method: string;
  /** The request's path, with its query. */
  path: string;
  /** The API's HTTP status. */
  status: number;
  /** The API's body, as text. */
  body: string;
  /** True while the client that asked still waits for the answer. */
  readonly clientWaiting: boolean;
  /** Passes the answer on, as if it had never been held (a no-op once the client is gone). */
  release(): void;
}

interface PendingHold {
  match: HoldMatch;
  resolve(answer: HeldAnswer): void;
}

/**
 * A running gate, on a free port of 127.0.0.1.
 *
 * # Guarantees
 * - A held answer is the API's whole answer: the work is done on the API's side before `hold` resolves.
 * - A hold is one-shot: it takes the next matching request only; every other request streams through
 *   untouched, both ways.
 * - A client that goes away (a controller killed) ends its request upstream; a released answer whose client
 *   is gone is dropped, never delivered to another one.
 */
export class AnswerGate {
  readonly #server: Server;
  readonly #target: URL;
  #holds: PendingHold[] = [];
  readonly #counters: { select: (method: string, path: string) => boolean; count: number }[] = [];
  readonly #held = new Set<HeldAnswer>();
  #url = "";

  private constructor(target: URL) {
    this.#target = target;
    this.#server = createServer((req, res) => this.forward(req, res));
  }

  /** Starts a gate in front of the API at `targetUrl` (http:), on a free local port. */
  static async start(targetUrl: string): Promise<AnswerGate> {
    const gate = new AnswerGate(new URL(targetUrl));
    await new Promise<void>((resolve, reject) => {
      gate.#server.once("error", reject);
      gate.#server.listen(0, "127.0.0.1", () => resolve());
    });
    const { port } = gate.#server.address() as AddressInfo;
    gate.#url = `http://127.0.0.1:${port}`;
    return gate;
  }

  /** The gate's base URL: give it to a controller as its external API's URL. */
  get url(): string {
    return this.#url;
  }

  /**
   * Holds the answer to the NEXT request matching `match`, and resolves once the API has answered it (the
   * work is done on its side) and the answer is held back from the client. Holds are one-shot.
   */
  hold(match: HoldMatch): Promise<HeldAnswer> {
    return new Promise((resolve) => this.#holds.push({ match, resolve }));
  }

  /**
   * Counts from now on the requests through the gate that `select` picks (by method and path, without the
   * query): a count of the controller's writes for an API that keeps none per client. Returns the reader of
   * the count.
   */
  count(select: (method: string, path: string) => boolean): () => number {
    const counter = { select, count: 0 };
    this.#counters.push(counter);
    return () => counter.count;
  }

  /** Passes on every held answer whose client still waits. */
  releaseAll(): void {
    for (const answer of this.#held) answer.release();
  }

  /** Stops the gate, dropping open connections. Safe to call twice. */
  async close(): Promise<void> {
    if (!this.#server.listening) return;
    this.#holds = [];
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  /** One request: forward it to the API, then pass the answer on, or hold it. */
  forward(req: IncomingMessage, res: ServerResponse): void {
    const method = req.method ?? "GET";
    const path = req.url ?? "/";
    for (const counter of this.#counters) {
      if (counter.select(method, path.split("?")[0] ?? path)) counter.count += 1;
    }
    const upstream = request(
      {
        protocol: this.#target.protocol,
        hostname: this.#target.hostname,
        port: this.#target.port,
        method,
        path,
        headers: { ...req.headers, host: this.#target.host },
        agent: false,
      },
      (answer) => {
        const status = answer.statusCode ?? 502;
        const headers = answer.headers;
        const hold = this.#takeHold(method, path.split("?")[0] ?? path);
        if (!hold) {
          res.writeHead(status, headers);
          answer.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        answer.on("data", (chunk: Buffer) => chunks.push(chunk));
        answer.on("end", () => {
          const body = Buffer.concat(chunks);
          const held: HeldAnswer = {
            method,
            path,
            status,
            body: body.toString("utf8"),
            get clientWaiting() {
              return !res.destroyed && !res.writableEnded;
            },
            release: () => {
              this.#held.delete(held);
              if (!held.clientWaiting) return;
              res.writeHead(status, withoutLength(headers));
              res.end(body);
            },
          };
          this.#held.add(held);
          hold.resolve(held);
        });
      },
    );
    upstream.on("error", () => {
      if (!res.headersSent && !res.destroyed) res.writeHead(502).end();
      else res.destroy();
    });
    // The client went away (a controller killed, a watch closed): so does our side of the request.
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  }

  #takeHold(method: string, path: string): PendingHold | undefined {
    const index = this.#holds.findIndex(
      (h) =>
        h.match.method === method &&
        (typeof h.match.path === "string" ? h.match.path === path : h.match.path.test(path)),
    );
    if (index < 0) return undefined;
    const [hold] = this.#holds.splice(index, 1);
    return hold;
  }
}

/** The API's headers, minus the framing ones (the body is re-sent whole). */
function withoutLength(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const {
    "content-length": _length,
    "transfer-encoding": _encoding,
    connection: _connection,
    ...rest
  } = headers;
  return rest;
}

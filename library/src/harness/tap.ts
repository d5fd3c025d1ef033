/**
 * A write tap: a pass-through HTTP(S) proxy between a controller and a server (the Kubernetes API server, or
 * the external API) that records every write the controller sends and can inject ONE fault at one chosen
 * write. It is the crash explorer's {@link WriteTap} (reconcile-kit/crash-points: the four faults are
 * defined there), so a crash lands exactly between "the request left" and "the server committed", or
 * between "committed" and "heard", instead of wherever a timer happened to fire (the Shapes controller's
 * stack, for example):
 *
 *   const tap = await WriteTapProxy.start({ side: "external", target: cloud.url });
 *   const controller = await stack.startController({ cloudUrl: tap.url });
 *   tap.arm({ fault: "crash-after", select: (w) => w.method === "POST", crash: () => controller.kill() });
 *   ...
 *   tap.take();   // every write seen, oldest first, with its status and answer
 *
 * Reads (GET, and a watch or change feed above all) are streamed both ways untouched and not recorded. A
 * write's body is buffered first (to record it and to let the arm select on it), then forwarded whole; its
 * answer is streamed on while a copy is kept. A write is recorded once its whole request has reached the
 * tap, which is also the moment the arm's `select` sees it and it gets its `seq` (one count over every tap of
 * the process): the order of `take()`, and of `seq`, is the order of `select`.
 * Upgrades (exec, port-forward) are not supported: a controller does not use them.
 */
import {
  Agent as HttpAgent,
  createServer as createHttpServer,
  request as httpRequest,
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from "node:http";
import {
  Agent as HttpsAgent,
  createServer as createHttpsServer,
  request as httpsRequest,
  type RequestOptions as HttpsRequestOptions,
} from "node:https";
import type { AddressInfo } from "node:net";
import type { Side, TapArm, TapFault, TappedWrite, WriteTap } from "../crash-points/subject.ts";

/** The methods that write: the tap records these (and only these), and can fault them. */
export const WRITE_METHODS: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** The body of the tap's own 503 (fault `fail`): a Kubernetes Status, which the external API's clients read as a 503 too. */
export const INJECTED_FAILURE_BODY = JSON.stringify({
  kind: "Status",
  apiVersion: "v1",
  status: "Failure",
  message: "injected by the crash explorer's tap",
  reason: "ServiceUnavailable",
  code: 503,
});

/**
 * How the tap reaches the server: TLS material (for an https target) and headers set on every forwarded
 * request over the client's (an `authorization`, an `impersonate-user`): the server sees these
 * credentials, never the client's.
 */
export type UpstreamOptions = Pick<
  HttpsRequestOptions,
  "ca" | "cert" | "key" | "pfx" | "passphrase" | "rejectUnauthorized" | "servername"
> & { headers?: OutgoingHttpHeaders };

/** Options of {@link WriteTapProxy.start}. */
export interface WriteTapOptions {
  /** Which of the controller's connections this is. */
  side: Side;
  /** The server's base URL (http: or https:); the request's path is kept as the client sent it. */
  target: string;
  /** TLS and credentials toward the server. Default: none (plain http, or the system's CAs). */
  upstream?: UpstreamOptions;
  /** Serve TLS with this certificate (the kube tap: client-node talks https only). Default: plain http. */
  serveTls?: { certPem: string; keyPem: string };
}

/** The `seq` of the last write any tap of this process recorded: one order over both of a controller's taps. */
let lastSeq = 0;

/**
 * A running write tap, on a free port of 127.0.0.1: the crash explorer's {@link WriteTap}.
 *
 * # Guarantees
 * - Every write (POST, PUT, PATCH, DELETE) whose whole request reached the tap is recorded, in the order the
 *   arm's `select` saw it; reads are neither recorded nor faulted.
 * - An armed fault fires at most once, at the first write it selects.
 * - With `crash-after` and `answer-lost` the server gets the whole write and answers it before the client's
 *   connection is reset.
 */
export class WriteTapProxy implements WriteTap {
  /** Which of the controller's connections it taps. */
  readonly side: Side;
  readonly #server: Server;
  readonly #target: URL;
  readonly #upstreamHeaders: OutgoingHttpHeaders;
  readonly #agent: HttpAgent;
  readonly #request: typeof httpRequest;
  #writes: TappedWrite[] = [];
  #arm: TapArm | undefined;
  #url = "";
  #closing: Promise<void> | undefined;

  private constructor(options: WriteTapOptions) {
    this.side = options.side;
    this.#target = new URL(options.target);
    const { headers = {}, ...tls } = options.upstream ?? {};
    // Lower-cased, so a header of the options replaces the client's instead of being sent beside it.
    this.#upstreamHeaders = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    if (this.#target.protocol === "https:") {
      this.#agent = new HttpsAgent({ keepAlive: true, ...tls });
      this.#request = httpsRequest;
    } else if (this.#target.protocol === "http:") {
      this.#agent = new HttpAgent({ keepAlive: true });
      this.#request = httpRequest;
    } else {
      throw new Error(`cannot tap ${options.target}: only http: and https: targets are supported`);
    }
    const handler = (req: IncomingMessage, res: ServerResponse) => this.#handle(req, res);
    this.#server = options.serveTls
      ? createHttpsServer({ cert: options.serveTls.certPem, key: options.serveTls.keyPem }, handler)
      : createHttpServer(handler);
  }

  /** Starts a tap in front of `options.target`, on a free port of 127.0.0.1. */
  static async start(options: WriteTapOptions): Promise<WriteTapProxy> {
    const tap = new WriteTapProxy(options);
    await new Promise<void>((resolve, reject) => {
      tap.#server.once("error", reject);
      tap.#server.listen(0, "127.0.0.1", () => resolve());
    });
    const { port } = tap.#server.address() as AddressInfo;
    tap.#url = `${options.serveTls ? "https" : "http"}://127.0.0.1:${port}`;
    return tap;
  }

  /** The tap's base URL: give it to the controller instead of the server's. */
  get url(): string {
    return this.#url;
  }

  /**
   * The writes seen since the last call, oldest first; forgets them. A write still in flight is returned
   * too, and its `status` and `responseBody` are filled in on the same object when the answer comes.
   */
  take(): TappedWrite[] {
    const writes = this.#writes;
    this.#writes = [];
    return writes;
  }

  /** Arms one fault (replacing an armed one that has not fired). */
  arm(arm: TapArm): void {
    this.#arm = arm;
  }

  /** Disarms it (a no-op when it fired already or none is armed). */
  disarm(): void {
    this.#arm = undefined;
  }

  /** Stops the tap, dropping every open connection (and so the requests in flight upstream). Safe to call twice. */
  close(): Promise<void> {
    return (this.#closing ??= (async () => {
      this.#arm = undefined;
      if (this.#server.listening) {
        const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
        this.#server.closeAllConnections();
        await closed;
      }
      this.#agent.destroy();
    })());
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    if (WRITE_METHODS.has(req.method ?? "GET")) {
      this.#write(req, res).catch(() => res.destroy());
      return;
    }
    // A read: streamed both ways. The client gone (a controller killed, a watch closed) ends it upstream.
    const upstream = this.#forward(req, (answer) => {
      res.writeHead(answer.statusCode ?? 502, withoutHopByHop(answer.headers));
      // Sent now, not with the first byte of the body: a watch's answer may have no body for minutes, and
      // its client counts the time until the headers (client-node's informers give up after 30 s).
      res.flushHeaders();
      answer.pipe(res);
    });
    this.#endWithClient(res, upstream);
    upstream.on("error", () => failed(res));
    req.pipe(upstream);
  }

  /** One write: buffered, recorded, shown to the arm, then forwarded (or not) as the fault says. */
  async #write(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? "POST";
    const url = req.url ?? "/";
    let body: Buffer;
    try {
      body = await readAll(req);
    } catch {
      res.destroy(); // the client went away mid-request: nothing reached the tap whole
      return;
    }
    const write: TappedWrite = {
      seq: ++lastSeq,
      side: this.side,
      method,
      path: url.split("?")[0] ?? url,
      requestBody: body.toString("utf8"),
      status: undefined,
      responseBody: "",
      fault: undefined,
    };
    this.#writes.push(write);
    const arm = this.#arm;
    if (arm && selects(arm, write)) {
      this.#arm = undefined; // one-shot
      write.fault = arm.fault;
      await this.#fault(arm, write, req, body, res);
      return;
    }
    const upstream = this.#forward(
      req,
      (answer) => {
        const status = answer.statusCode ?? 502;
        write.status = status;
        const chunks: Buffer[] = [];
        answer.on("data", (chunk: Buffer) => chunks.push(chunk));
        answer.on("end", () => (write.responseBody = Buffer.concat(chunks).toString("utf8")));
        res.writeHead(status, withoutHopByHop(answer.headers));
        answer.pipe(res);
      },
      body,
    );
    this.#endWithClient(res, upstream);
    upstream.on("error", () => failed(res));
    upstream.end(body);
  }

  /** The armed fault at `write` (the file's header of reconcile-kit/crash-points says what each one is). */
  async #fault(
    arm: TapArm,
    write: TappedWrite,
    req: IncomingMessage,
    body: Buffer,
    res: ServerResponse,
  ): Promise<void> {
    const fault: TapFault = arm.fault;
    switch (fault) {
      case "crash-before":
        await crash(arm);
        res.destroy();
        return;
      case "fail":
        write.status = 503;
        write.responseBody = INJECTED_FAILURE_BODY;
        res.writeHead(503, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(INJECTED_FAILURE_BODY),
        });
        res.end(INJECTED_FAILURE_BODY);
        return;
      case "crash-after":
      case "answer-lost": {
        // Forwarded whole and answered whole, even when the client has gone meanwhile: the server commits.
        const answered = await this.#exchange(req, body);
        if (answered) {
          write.status = answered.status;
          write.responseBody = answered.body;
        }
        if (fault === "crash-after") await crash(arm);
        res.destroy(); // not a byte of the answer: the client sees its connection reset
        return;
      }
    }
  }

  /** Sends a buffered write upstream and reads its whole answer; undefined when the server could not be reached. */
  #exchange(req: IncomingMessage, body: Buffer): Promise<{ status: number; body: string } | undefined> {
    return new Promise((resolve) => {
      const upstream = this.#forward(
        req,
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on("data", (chunk: Buffer) => chunks.push(chunk));
          answer.on("end", () =>
            resolve({ status: answer.statusCode ?? 502, body: Buffer.concat(chunks).toString("utf8") }),
          );
          answer.on("close", () => {
            if (!answer.complete) resolve(undefined);
          });
        },
        body,
      );
      upstream.on("error", () => resolve(undefined));
      upstream.end(body);
    });
  }

  /** A request to the server like the client's: same method, path and headers, the tap's credentials. */
  #forward(req: IncomingMessage, onAnswer: (answer: IncomingMessage) => void, body?: Buffer): ClientRequest {
    const headers: OutgoingHttpHeaders = {
      ...withoutHopByHop(req.headers),
      ...this.#upstreamHeaders,
      host: this.#target.host,
    };
    if (body) {
      // The body is sent whole, with its length, whatever framing the client used. Said explicitly: node
      // frames a DELETE's body neither by length nor by chunks unless told, and the server would read it
      // as the start of the next request on the connection (a 400 for that one).
      delete headers["transfer-encoding"];
      headers["content-length"] = String(body.length);
    }
    const upstream = this.#request(
      {
        protocol: this.#target.protocol,
        hostname: this.#target.hostname,
        port: this.#target.port,
        method: req.method ?? "GET",
        path: req.url ?? "/",
        headers,
        agent: this.#agent,
      },
      onAnswer,
    );
    return upstream;
  }

  /**
   * Ties a forwarded request to its client: the client gone before the whole answer (a controller killed, a
   * watch closed) ends the request upstream; the server ending an answer midway (an API server restarted
   * under a watch) ends the client's.
   */
  #endWithClient(res: ServerResponse, upstream: ClientRequest): void {
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    upstream.on("response", (answer: IncomingMessage) =>
      answer.on("close", () => {
        if (!answer.complete) res.destroy();
      }),
    );
  }
}

/** The arm's choice; a `select` that throws selects nothing (the write passes). */
function selects(arm: TapArm, write: TappedWrite): boolean {
  try {
    return arm.select(write);
  } catch {
    return false;
  }
}

/** The arm's kill, awaited; its failure is swallowed (the tap drops the client's side all the same). */
async function crash(arm: TapArm): Promise<void> {
  try {
    await arm.crash();
  } catch {
    // The explorer sees a controller that is still running; the tap must stay up either way.
  }
}

/** The server could not be reached, or failed midway: 502 when nothing was sent yet, else a reset. */
function failed(res: ServerResponse): void {
  if (!res.headersSent && !res.destroyed) res.writeHead(502).end();
  else res.destroy();
}

async function readAll(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Headers minus the ones about one connection (each side of the tap has its own). */
function withoutHopByHop(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { connection: _connection, "keep-alive": _keepAlive, ...rest } = headers;
  return rest;
}

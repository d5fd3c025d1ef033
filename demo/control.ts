/**
 * The control socket of a running `npm start`: a tiny HTTP API on a Unix socket in the state folder
 * (`demo.sock`, reachable only by the folder's owner). `npm run tour` uses it to find the running demo and
 * to stop and restart its controller — the honest way to show a deletion missed while the controller was
 * down, since the tour cannot (and should not) kill a process it did not start.
 *
 *   GET  /status            → DemoStatus
 *   POST /controller/stop   → stops the controller gracefully (SIGTERM, drains), answers when it exited
 *   POST /controller/start  → starts it again, answers once it is ready (startup resync done)
 *
 * The socket doubles as the "one demo per state folder" lock: listening fails while another live demo
 * holds it; a socket file left by a demo that died is detected (nobody answers) and replaced.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { connect } from "node:net";
import { rm } from "node:fs/promises";

/** What `GET /status` answers. */
export interface DemoStatus {
  /** The pid of `npm start`'s node process. */
  pid: number;
  stateDir: string;
  cluster: {
    /** `local`: the demo's own control plane (no kube-controller-manager); `existing`: KUBECONFIG's. */
    kind: "local" | "existing";
    server: string;
    /** The admin kubeconfig (what .demo/env's KUBECONFIG says). */
    kubeconfig: string;
  };
  cloud: { url: string };
  controller: ControllerStatus;
}

/** The controller process, as the demo sees it. */
export interface ControllerStatus {
  state: "starting" | "running" | "stopping" | "stopped" | "crashed";
  pid?: number;
  /** Base URL of its /healthz, /readyz and /metrics (while running). */
  metricsUrl?: string;
  logFile: string;
}

/** What the control server delegates to: the running demo. */
export interface DemoControl {
  /** Called for `GET /status`: a snapshot, cheap. */
  status(): DemoStatus;
  /** Called for `POST /controller/stop`: resolves once the controller process has exited. */
  stopController(): Promise<void>;
  /** Called for `POST /controller/start`: resolves once it is ready again. Rejects with a "cannot ..." error. */
  startController(): Promise<void>;
}

/** Thrown by {@link ControlClient} when no demo answers on the socket. */
export class DemoNotRunningError extends Error {
  override name = "DemoNotRunningError";
}

/** A listening control server. */
export interface ControlServer {
  /** Stops listening and removes the socket file. Safe to call twice. */
  close(): Promise<void>;
}

/** Unix socket paths are limited to about 104-108 bytes (sun_path). */
const MAX_SOCKET_PATH = 100;

/**
 * Listens on `socketPath`. Throws "cannot start: a demo already runs ..." when a live demo answers on it;
 * replaces a stale socket file (no one listening).
 */
export async function serveControl(socketPath: string, control: DemoControl): Promise<ControlServer> {
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
    throw new Error(
      `cannot create the control socket ${socketPath}: the path is longer than ${MAX_SOCKET_PATH} bytes ` +
        "(choose a shorter --state-dir)",
    );
  }
  const server = createServer((req, res) => void handle(control, req, res));
  try {
    await listen(server, socketPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE") throw error;
    if (await answers(socketPath)) {
      let who = "";
      try {
        who = ` (pid ${(await new ControlClient(socketPath).status()).pid})`;
      } catch {
        // it answered the connect, but not the status: still someone's
      }
      throw new Error(
        `cannot start: a demo already runs from this state folder${who}; stop it with Ctrl-C in its ` +
          "terminal, or use another --state-dir",
        { cause: error },
      );
    }
    // Left by a demo that died without cleaning up: nobody listens, so it is safe to take over.
    await rm(socketPath, { force: true });
    await listen(server, socketPath);
  }
  let closing: Promise<void> | undefined;
  return {
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(() => rm(socketPath, { force: true }))),
  };
}

async function handle(control: DemoControl, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const reply = (status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  try {
    const route = `${req.method ?? ""} ${req.url ?? ""}`;
    if (route === "GET /status") return reply(200, control.status());
    if (route === "POST /controller/stop") {
      await control.stopController();
      return reply(200, control.status());
    }
    if (route === "POST /controller/start") {
      await control.startController();
      return reply(200, control.status());
    }
    return reply(404, {
      error: `cannot ${route}: the control socket knows GET /status and POST /controller/{stop,start}`,
    });
  } catch (error) {
    return reply(500, { error: error instanceof Error ? error.message : String(error) });
  }
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/** True when something accepts connections on the socket. */
function answers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** The client side, used by the tour (and the e2e test). */
export class ControlClient {
  readonly socketPath: string;

  constructor(socketPath: string) {
    this.socketPath = socketPath;
  }

  /** The running demo's status. Throws DemoNotRunningError when no demo answers. */
  status(): Promise<DemoStatus> {
    return this.#call("GET", "/status");
  }

  /** Stops the demo's controller; resolves once it has exited. */
  stopController(): Promise<DemoStatus> {
    return this.#call("POST", "/controller/stop");
  }

  /** Starts the demo's controller; resolves once it is ready. */
  startController(): Promise<DemoStatus> {
    return this.#call("POST", "/controller/start");
  }

  #call(method: string, path: string): Promise<DemoStatus> {
    return new Promise((resolve, reject) => {
      const req = request({ socketPath: this.socketPath, method, path }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            return reject(
              new Error(`cannot ${method} ${path} on the demo: it answered ${text.slice(0, 200)}`),
            );
          }
          if (res.statusCode === 200) return resolve(body as DemoStatus);
          const message = (body as { error?: string }).error ?? `HTTP ${res.statusCode}`;
          reject(new Error(message));
        });
      });
      req.on("error", (error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT" || error.code === "ECONNREFUSED") {
          reject(
            new DemoNotRunningError(
              `cannot find a running demo (no answer on ${this.socketPath}): start it with \`npm start\` ` +
                "in another terminal, and wait for “The demo is running”",
            ),
          );
        } else reject(error);
      });
      req.end();
    });
  }
}

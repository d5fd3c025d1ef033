/**
 * The control socket of a running `npm start`: a tiny HTTP API on a Unix socket in the state folder
 * (`demo.sock`, reachable only by the folder's owner). `npm run tour` uses it to find the running demo, to
 * stop, restart and crash its controller — the honest way to show a deletion missed while the controller was
 * down, or a crash right after a create, since the tour cannot (and should not) kill a process it did not
 * start — and to say what it is showing, for the demo's two-worlds page.
 *
 *   GET    /status                       → DemoStatus
 *   POST   /controller/stop              → stops the controller gracefully (SIGTERM, drains), answers when it exited
 *   POST   /controller/start             → starts it (against the real cloud), answers once it is ready (startup
 *                                          resync done); also takes it from behind an armed crash gate
 *   POST   /controller/crash-after-create  {"cloudName": "...", "timeoutMs"?: n}
 *                                        → restarts it behind a gate that SIGKILLs it once the cloud has created
 *                                          that name; answers once it is ready behind the gate
 *   POST   /tour  (a TourMoment)         → the tour's current moment, for the two-worlds page
 *   DELETE /tour                         → no moment any more
 *
 * The socket doubles as the "one demo per state folder" lock: listening fails while another live demo
 * holds it; a socket file left by a demo that died is detected (nobody answers) and replaced.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { connect } from "node:net";
import { rm } from "node:fs/promises";
import { z } from "zod";

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
  /** The two-worlds page (without its token), once it serves. */
  view?: { url: string };
  controller: ControllerStatus;
}

/** The controller process, as the demo sees it. */
export interface ControllerStatus {
  state: "starting" | "running" | "stopping" | "stopped" | "crashed";
  pid?: number;
  /** Base URL of its /healthz, /readyz and /metrics (while running). */
  metricsUrl?: string;
  logFile: string;
  /**
   * Set while a crash asked for by the tour is armed: the controller talks to the cloud through a gate
   * (`gateUrl`) that, once the cloud has created `cloudName`, holds the answer and has the controller killed.
   */
  crashArmed?: { cloudName: string; gateUrl: string };
}

/** A moment of `npm run tour` that the demo's two-worlds page highlights. */
export interface TourMoment {
  /** 1-based step number, and how many steps the tour has. */
  step: number;
  steps: number;
  /** The step's title. */
  title: string;
  /** What to look at now, one sentence. */
  caption: string;
  /** The tour's namespace. */
  namespace: string;
  /** The Shapes (names in `namespace`) this moment is about: the page highlights their rows. */
  shapes: string[];
  /** Cloud shape names it is about (e.g. a foreign shape): highlighted too. */
  cloudNames: string[];
  /** The step's key moment (at most one per step): the one the docs' screenshot shows (demo/screenshots.ts). */
  key?: boolean;
}

const TourMomentSchema = z
  .strictObject({
    step: z.int().positive(),
    steps: z.int().positive(),
    title: z.string().min(1).max(200),
    caption: z.string().max(1000),
    namespace: z.string().min(1).max(253),
    shapes: z.array(z.string().min(1).max(253)).max(100),
    cloudNames: z.array(z.string().min(1).max(253)).max(100),
    key: z.boolean().optional(),
  })
  .refine((m) => m.step <= m.steps, { message: "step must not be above steps", path: ["step"] });

/** Checks what `POST /tour` received. Throws "cannot show the tour moment: ..." naming every wrong field. */
export function parseTourMoment(value: unknown): TourMoment {
  const parsed = TourMomentSchema.safeParse(value);
  if (!parsed.success) throw new BadRequest(`cannot show the tour moment: ${issues(parsed.error)}`);
  return parsed.data;
}

/** What `POST /controller/crash-after-create` asks for. */
export interface CrashRequest {
  /** The cloud name whose create kills the controller (`<namespace>.<name>` of the Shape the tour applies). */
  cloudName: string;
  /**
   * How long the crash stays armed. If no create of `cloudName` comes by then (the tour was killed, say), the
   * demo puts the controller back on the real cloud by itself. Default {@link DEFAULT_CRASH_TIMEOUT_MS}.
   */
  timeoutMs?: number;
}

/** How long a crash stays armed unless the request says otherwise. */
export const DEFAULT_CRASH_TIMEOUT_MS = 120_000;

const CrashRequestSchema = z.strictObject({
  cloudName: z.string().min(1).max(253),
  timeoutMs: z.int().positive().max(3_600_000).optional(),
});

/** Checks what `POST /controller/crash-after-create` received. Throws "cannot arm the crash: ...". */
export function parseCrashRequest(value: unknown): CrashRequest {
  const parsed = CrashRequestSchema.safeParse(value);
  if (!parsed.success) throw new BadRequest(`cannot arm the crash: ${issues(parsed.error)}`);
  return parsed.data;
}

/** A request the control socket refuses (400): the message says what is wrong with it. */
class BadRequest extends Error {
  override name = "BadRequest";
}

function issues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length > 0 ? `${i.path.join(".")}: ` : ""}${i.message}`)
    .join("; ");
}

/** What the control server delegates to: the running demo. */
export interface DemoControl {
  /** Called for `GET /status`: a snapshot, cheap. */
  status(): DemoStatus;
  /** Called for `POST /controller/stop`: resolves once the controller process has exited. */
  stopController(): Promise<void>;
  /**
   * Called for `POST /controller/start`: resolves once it is ready again, talking to the real cloud (a crash
   * still armed is disarmed first). Rejects with a "cannot ..." error.
   */
  startController(): Promise<void>;
  /**
   * Called for `POST /controller/crash-after-create`: restarts the controller with its cloud URL pointed at a
   * gate in front of the cloud, and resolves once it is ready there. When the cloud has answered the create of
   * `request.cloudName`, the gate holds the answer, the controller is killed (SIGKILL, state "crashed": it
   * stays down) and the gate closed. Undone by startController, stopController, the demo's stop, or
   * `timeoutMs` passing without that create. Rejects with a "cannot ..." error.
   */
  crashAfterCreate(request: CrashRequest): Promise<void>;
  /** Called for `POST /tour` (a moment) and `DELETE /tour` (undefined): what the tour is showing now. */
  showTourMoment(moment: TourMoment | undefined): void;
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
    if (route === "POST /controller/crash-after-create") {
      await control.crashAfterCreate(parseCrashRequest(await readJson(req)));
      return reply(200, control.status());
    }
    if (route === "POST /tour") {
      const moment = parseTourMoment(await readJson(req));
      control.showTourMoment(moment);
      return reply(200, { tour: moment });
    }
    if (route === "DELETE /tour") {
      control.showTourMoment(undefined);
      return reply(200, { tour: null });
    }
    return reply(404, {
      error:
        `cannot ${route}: the control socket knows GET /status, ` +
        "POST /controller/{stop,start,crash-after-create}, and POST or DELETE /tour",
    });
  } catch (error) {
    return reply(error instanceof BadRequest ? 400 : 500, {
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** The largest request body the socket reads: a tour moment is a few hundred bytes. */
const MAX_BODY_BYTES = 64 * 1024;

/** The request's body, parsed as JSON. Throws BadRequest when it is too large or not JSON. */
async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      throw new BadRequest(`cannot read the request: its body is larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new BadRequest(`cannot read the request: its body is not JSON (${text.slice(0, 100)})`);
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

  /** Starts the demo's controller against the real cloud (disarming a crash); resolves once it is ready. */
  startController(): Promise<DemoStatus> {
    return this.#call("POST", "/controller/start");
  }

  /**
   * Restarts the demo's controller behind a gate that has it killed (SIGKILL) the moment the cloud has created
   * `cloudName`; resolves once it is ready behind the gate. See {@link DemoControl.crashAfterCreate}.
   */
  crashAfterCreate(request: CrashRequest): Promise<DemoStatus> {
    return this.#call("POST", "/controller/crash-after-create", request);
  }

  /** Tells the demo what the tour shows now (undefined: nothing any more), for its two-worlds page. */
  async showTourMoment(moment: TourMoment | undefined): Promise<void> {
    if (moment) await this.#call("POST", "/tour", moment);
    else await this.#call("DELETE", "/tour");
  }

  #call<T = DemoStatus>(method: string, path: string, body?: unknown): Promise<T> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers = payload === undefined ? {} : { "content-type": "application/json" };
      const req = request({ socketPath: this.socketPath, method, path, headers }, (res) => {
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
          if (res.statusCode === 200) return resolve(body as T);
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
      req.end(payload);
    });
  }
}

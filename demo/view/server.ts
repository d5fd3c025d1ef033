/**
 * The two-worlds page's server: a small express app in `npm start`'s process, on loopback only. It serves
 * the page (static/), streams both worlds to it (worlds.ts), and carries out the page's actions with the
 * demo's own credentials: Kubernetes writes as the demo's admin, cloud writes with the demo's cloud token,
 * and the controller stopped and started through the demo's control socket (control.ts), exactly as
 * `npm run tour` does. The browser holds no credential of either world, only this page's token.
 *
 * Routes (the page and its files need no token: they hold no data):
 *   GET    /                                          the page
 *   GET    /view/config.json                          shape types and colors the cloud accepts
 *   GET    /view/<file>                               the page's scripts, style sheet and icon (ASSETS)
 * Behind `Authorization: Bearer <token>`:
 *   GET    /api/stream                                Server-Sent Events: snapshot, changes, … (wire.ts)
 *   GET    /api/why/:namespace/:name                  the controller's decision history of a Shape
 *   POST   /api/shapes                                apply a Shape {namespace, name, type, color}
 *   PATCH  /api/shapes/:namespace/:name               {type?, color?, paused?}
 *   DELETE /api/shapes/:namespace/:name
 *   POST   /api/shapes/:namespace/:name/remove-finalizer   what a person does by hand when the controller is down
 *   POST   /api/cloud/shapes                          create a foreign shape {name, type, color}
 *   PATCH  /api/cloud/shapes/:id                      recolor {color}
 *   DELETE /api/cloud/shapes/:id
 *   PUT    /api/cloud/faults                          {rules}: the cloud's fault rules
 *   POST   /api/controller/stop, /api/controller/start
 *
 * SECURITY. It listens on 127.0.0.1 only, and answers only requests whose Host is `localhost` or an IP
 * address (a web page elsewhere cannot reach it through DNS rebinding: its requests name the page's host).
 * The token travels in the link's fragment (`#token=…`, never sent to a server) and then in an
 * Authorization header, which no log here records; it is compared in constant time. No cookie, so no
 * request forged by another site carries it. Every answer has the console's Content-Security-Policy (this
 * origin's scripts only, no inline script), and the page builds its DOM with textContent: a hostile name or
 * tag is shown as text.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import express, { type ErrorRequestHandler, type Request, type RequestHandler, type Response } from "express";
import { z } from "zod";
import { ApiException } from "@kubernetes/client-node";
import type { Logger } from "reconcile-kit";
import { fetchHistory, NothingRecordedError, parseHistory, PAUSED_ANNOTATION } from "@shapes/controller";
import {
  allowedHostNames,
  CloudCallError,
  type CloudHttpClient,
  COLORS,
  CONSOLE_CSP,
  FaultConfig,
  isAllowedHost,
  SHAPE_TYPES,
  STATIC_DIR as CONSOLE_STATIC_DIR,
} from "@shapes/mock-cloud";
import type { KubeApi } from "@shapes/stack";
import type { ControllerStatus, TourMoment } from "../control.ts";
import type { ControllerView, Snapshot } from "./wire.ts";
import type { Worlds } from "./worlds.ts";

/** The folder of the page's own browser code. */
export const STATIC_DIR = join(import.meta.dirname, "static");

/** Every file served under /view/: the page's own, and the console's drawing, SSE and fault modules. */
export const ASSETS: Readonly<Record<string, { dir: string; type: string }>> = {
  "view.js": { dir: STATIC_DIR, type: "text/javascript; charset=utf-8" },
  "model.js": { dir: STATIC_DIR, type: "text/javascript; charset=utf-8" },
  "rows.js": { dir: STATIC_DIR, type: "text/javascript; charset=utf-8" },
  "view.css": { dir: STATIC_DIR, type: "text/css; charset=utf-8" },
  "draw.js": { dir: CONSOLE_STATIC_DIR, type: "text/javascript; charset=utf-8" },
  "sse.js": { dir: CONSOLE_STATIC_DIR, type: "text/javascript; charset=utf-8" },
  "faults.js": { dir: CONSOLE_STATIC_DIR, type: "text/javascript; charset=utf-8" },
  "favicon.svg": { dir: CONSOLE_STATIC_DIR, type: "image/svg+xml" },
};

/** The controller, as the page may see and steer it: through the demo's control socket. */
export interface ControllerControl {
  /** Called twice a second: the controller's state. Rejects when the demo cannot say. */
  status(): Promise<ControllerStatus>;
  /** Resolves once it has exited. */
  stop(): Promise<unknown>;
  /** Resolves once it is ready again (its startup resync done). */
  start(): Promise<unknown>;
}

/** Where `npm run tour` is, as the demo heard it (Demo.onTourMoment). */
export interface TourMoments {
  current(): TourMoment | undefined;
  /** Calls `listener` with each new moment (undefined: the tour ended) until the returned function is called. */
  subscribe(listener: (moment: TourMoment | undefined) => void): () => void;
}

/** What the page's server works with. */
export interface ViewOptions {
  worlds: Pick<Worlds, "state" | "onChanges">;
  /** The demo's Kubernetes client (its admin credentials). */
  kube: Pick<KubeApi, "applyShape" | "patchShape" | "deleteShape" | "stripFinalizer">;
  /** The demo's cloud client (its cloud token). */
  cloud: Pick<CloudHttpClient, "faults" | "create" | "patch" | "delete" | "setFaults">;
  controller: ControllerControl;
  tour: TourMoments;
  /** The page's token. */
  token: string;
  /** 0: any free port. */
  port: number;
  logger: Logger;
  /** How often the controller's state and the cloud's fault rules are read. Default 0.5 s and 3 s. */
  controllerPollMs?: number;
  faultsPollMs?: number;
}

/** A running page server. */
export interface RunningView {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Ends every stream and stops listening. Idempotent. */
  close(): Promise<void>;
}

/** A failure the page is told about, as `application/problem+json`. */
class Problem extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const Name = z.string().min(1).max(253);
const ShapeApply = z.strictObject({
  namespace: Name,
  name: Name,
  type: z.enum(SHAPE_TYPES),
  color: z.enum(COLORS),
});
const ShapeEdit = z.strictObject({
  type: z.enum(SHAPE_TYPES).optional(),
  color: z.enum(COLORS).optional(),
  paused: z.boolean().optional(),
});
const ForeignCreate = z.strictObject({
  name: z.string().min(1).max(253),
  type: z.enum(SHAPE_TYPES),
  color: z.enum(COLORS),
});
const Recolor = z.strictObject({ color: z.enum(COLORS) });

/** Starts the page's server on 127.0.0.1; resolves once it listens. */
export async function startView(options: ViewOptions): Promise<RunningView> {
  const { worlds, kube, cloud, logger } = options;
  const assets = new Map(
    Object.entries(ASSETS).map(([name, { dir, type }]) => [name, { type, body: readAsset(dir, name) }]),
  );
  const page = readAsset(STATIC_DIR, "index.html");
  const streams = new Set<Response>();
  const broadcast = (event: string, data: unknown) => {
    for (const res of streams) sendEvent(res, event, data);
  };

  // The controller's state and the cloud's fault rules have no feed: read them on a period, tell on change.
  let controller: ControllerView = { state: "stopped", pid: undefined, answersWhy: false };
  let metricsUrl: string | undefined;
  let faults: { rules: Record<string, unknown>[] } = { rules: [] };
  const readController = async () => {
    let next: ControllerView;
    try {
      const s = await options.controller.status();
      metricsUrl = s.state === "running" ? s.metricsUrl : undefined;
      next = { state: s.state, pid: s.pid, answersWhy: metricsUrl !== undefined };
    } catch {
      metricsUrl = undefined;
      next = { state: "stopped", pid: undefined, answersWhy: false };
    }
    if (JSON.stringify(next) !== JSON.stringify(controller)) broadcast("controller", (controller = next));
  };
  const readFaults = async () => {
    try {
      const next = await cloud.faults();
      if (JSON.stringify(next) !== JSON.stringify(faults)) broadcast("faults", (faults = next));
    } catch {
      // the cloud is the demo's own: it answers; a hiccup is read again at the next period
    }
  };
  await Promise.all([readController(), readFaults()]);
  const pollers = [
    setInterval(() => void readController(), options.controllerPollMs ?? 500),
    setInterval(() => void readFaults(), options.faultsPollMs ?? 3_000),
  ];
  const unsubscribe = [
    worlds.onChanges((changes) => broadcast("changes", changes)),
    options.tour.subscribe((moment) => broadcast("tour", moment ?? null)),
  ];
  const snapshot = (): Snapshot => ({
    ...worlds.state(),
    controller,
    tour: options.tour.current() ?? null,
    faults,
  });

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(onlyLoopbackHost());
  app.use(securityHeaders);

  app.get("/", (_req, res) => void res.type("text/html; charset=utf-8").send(page));
  app.get("/view/config.json", (_req, res) => void res.json({ types: SHAPE_TYPES, colors: COLORS }));
  app.get("/view/:file", (req, res, next) => {
    const asset = assets.get(req.params.file);
    if (!asset) return next();
    res.type(asset.type).send(asset.body);
  });

  const api = express.Router();
  api.use(requireToken(options.token));
  api.use(express.json({ limit: "16kb" }));

  api.get("/stream", (req, res) => {
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    sendEvent(res, "snapshot", snapshot());
    streams.add(res);
    const heartbeat = setInterval(() => res.write(": heartbeat\n\n"), 15_000);
    req.on("close", () => {
      clearInterval(heartbeat);
      streams.delete(res);
    });
  });

  api.get("/why/:namespace/:name", async (req, res) => {
    if (!metricsUrl) {
      throw new Problem(
        503,
        "cannot ask the controller why: it is not running (its decision history lives in its memory, and a restart starts it afresh)",
      );
    }
    try {
      const history = parseHistory(
        await fetchHistory(metricsUrl, { namespace: req.params.namespace, name: req.params.name }, 5_000),
      );
      res.json(history);
    } catch (error) {
      if (error instanceof NothingRecordedError) throw new Problem(404, error.message);
      throw error;
    }
  });

  api.post("/shapes", async (req, res) => {
    const body = parse(ShapeApply, req.body);
    await kube.applyShape(body.namespace, body.name, { type: body.type, color: body.color });
    res.status(201).json({ done: `applied Shape ${body.namespace}/${body.name}` });
  });
  api.patch("/shapes/:namespace/:name", async (req, res) => {
    const { namespace, name } = req.params;
    const body = parse(ShapeEdit, req.body);
    const spec = { ...(body.type ? { type: body.type } : {}), ...(body.color ? { color: body.color } : {}) };
    const patch = {
      ...(Object.keys(spec).length > 0 ? { spec } : {}),
      ...(body.paused === undefined
        ? {}
        : { metadata: { annotations: { [PAUSED_ANNOTATION]: body.paused ? "true" : null } } }),
    };
    if (Object.keys(patch).length === 0) throw new Problem(400, "cannot edit the Shape: nothing to change");
    await kube.patchShape(namespace, name, patch);
    res.json({ done: `edited Shape ${namespace}/${name}` });
  });
  api.delete("/shapes/:namespace/:name", async (req, res) => {
    await kube.deleteShape(req.params.namespace, req.params.name);
    res.json({ done: `asked to delete Shape ${req.params.namespace}/${req.params.name}` });
  });
  api.post("/shapes/:namespace/:name/remove-finalizer", async (req, res) => {
    await kube.stripFinalizer(req.params.namespace, req.params.name);
    res.json({ done: `removed the finalizer of Shape ${req.params.namespace}/${req.params.name}` });
  });

  api.post("/cloud/shapes", async (req, res) => {
    const body = parse(ForeignCreate, req.body);
    const created = await cloud.create(body);
    res.status(201).json({ done: `created the foreign shape ${created.name} (${created.id})` });
  });
  api.patch("/cloud/shapes/:id", async (req, res) => {
    const body = parse(Recolor, req.body);
    const shape = await cloud.patch(req.params.id, { color: body.color });
    res.json({ done: `recolored ${shape.name} to ${shape.color} in the cloud` });
  });
  api.delete("/cloud/shapes/:id", async (req, res) => {
    await cloud.delete(req.params.id);
    res.json({ done: `deleted ${req.params.id} in the cloud` });
  });
  api.put("/cloud/faults", async (req, res) => {
    const body = parse(FaultConfig, req.body);
    await cloud.setFaults(body.rules);
    await readFaults();
    res.json({ done: body.rules.length === 0 ? "the cloud behaves again" : "fault rules set" });
  });

  api.post("/controller/stop", async (_req, res) => {
    await options.controller.stop();
    await readController();
    res.json({ done: "stopped the controller" });
  });
  api.post("/controller/start", async (_req, res) => {
    await options.controller.start();
    await readController();
    res.json({ done: "started the controller: its startup resync is done" });
  });

  app.use("/api", api);
  app.use((req, _res, next) => next(new Problem(404, `cannot ${req.method} ${req.path}: no such route`)));
  app.use(problems(logger));

  const server = await listen(app, options.port);
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        for (const timer of pollers) clearInterval(timer);
        for (const undo of unsubscribe) undo();
        for (const res of streams) res.end();
        streams.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

function listen(app: express.Express, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, "127.0.0.1", (error?: Error) =>
      error ? reject(error) : resolve(server),
    );
    server.once("error", reject);
  });
}

function sendEvent(res: Response, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`);
  throw new Problem(400, `cannot accept the request: ${issues.join("; ")}`);
}

/** 401 unless the request carries the page's token (compared in constant time). */
function requireToken(token: string): RequestHandler {
  const expected = createHash("sha256").update(token).digest();
  return (req, _res, next) => {
    const header = req.get("authorization") ?? "";
    const given = header.startsWith("Bearer ") ? header.slice("Bearer ".length) : "";
    const digest = createHash("sha256").update(given).digest();
    if (given === "" || !timingSafeEqual(digest, expected)) {
      return next(
        new Problem(401, "cannot let you in: open the link `npm start` printed (it carries the token)"),
      );
    }
    next();
  };
}

/**
 * 421 for a Host that is not this loopback server (DNS rebinding: a foreign page's name, our address): the
 * mock cloud's check (isAllowedHost: an IP address or `localhost`, any port), which its own routes without a
 * token use too.
 */
function onlyLoopbackHost(): RequestHandler {
  const allowed = allowedHostNames([]);
  return (req: Request, _res, next) => {
    const host = req.get("host");
    if (!isAllowedHost(host, allowed)) {
      return next(
        new Problem(
          421,
          `cannot answer for host ${JSON.stringify(host ?? "")}: this page is served on loopback only`,
        ),
      );
    }
    next();
  };
}

const securityHeaders: RequestHandler = (_req, res, next) => {
  res.set({
    "content-security-policy": CONSOLE_CSP,
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
    "x-content-type-options": "nosniff",
  });
  next();
};

/**
 * The one error middleware: every failure is `application/problem+json` with a `detail` a person
 * understands: the API server's or the cloud's own message when they refused, never a stack trace.
 */
function problems(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    let status = 500;
    let detail: string;
    if (error instanceof Problem) {
      status = error.status;
      detail = error.message;
    } else if (error instanceof ApiException) {
      status = error.code >= 400 && error.code < 600 ? error.code : 502;
      detail = `the API server refused: ${kubeMessage(error)}`;
    } else if (error instanceof CloudCallError) {
      status = error.status >= 400 ? error.status : 502;
      detail = error.message;
    } else if (isBodyError(error)) {
      status = error.status;
      detail = `cannot accept the body: ${error.message}`;
    } else {
      detail = `cannot ${req.method} ${req.path}: ${error instanceof Error ? error.message : String(error)}`;
      logger.error({ err: error, method: req.method, path: req.path }, "the page's request failed");
    }
    res
      .status(status)
      .type("application/problem+json")
      .json({ title: titleOf(status), status, detail });
  };
}

function kubeMessage(error: ApiException<unknown>): string {
  const body = typeof error.body === "string" ? error.body : JSON.stringify(error.body);
  try {
    const message = (JSON.parse(body) as { message?: unknown }).message;
    if (typeof message === "string") return message;
  } catch {
    // not a Status
  }
  return `HTTP ${error.code}`;
}

/** body-parser's errors (malformed JSON, too large, …): a `type` and a 4xx `status`. */
function isBodyError(error: unknown): error is Error & { status: number } {
  const e = error as { type?: unknown; status?: unknown };
  return (
    error instanceof Error &&
    typeof e.type === "string" &&
    typeof e.status === "number" &&
    e.status >= 400 &&
    e.status < 500
  );
}

function titleOf(status: number): string {
  return (
    {
      400: "Bad request",
      401: "Unauthorized",
      404: "Not found",
      409: "Conflict",
      421: "Misdirected request",
      503: "Unavailable",
    }[status] ?? "Failed"
  );
}

function readAsset(dir: string, name: string): Buffer {
  try {
    return readFileSync(join(dir, name));
  } catch (error) {
    throw new Error(`cannot read the page's file ${name} in ${dir}: ${String(error)}`, { cause: error });
  }
}

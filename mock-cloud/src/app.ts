/**
 * Builds the express app of the mock cloud from its dependencies. Nothing here listens on a port
 * (server.ts does) and nothing is global: two clouds in one process share nothing (but the OpenTelemetry
 * tracer provider, which only a process entry registers: cli.ts).
 *
 * Request pipeline, in order:
 *   trace (continues the caller's W3C trace: a SERVER span around everything below)
 *   -> observe (metrics, access log, request log)
 *   -> the route of the API that matches the path (so metrics know the route template even for rejected
 *      requests)
 *      -> guards: bearer auth, then (API routes only) fault injection
 *      -> JSON body parsing (routes with a body)
 *      -> the handler, or 405 for another method
 *   -> every other request answers without a token, so first: 421 unless its Host names this cloud
 *      (middleware/host-check.ts: no web page reads them through DNS rebinding)
 *   -> the routes without a token (/healthz, /metrics, /openapi.json, the console)
 *   -> 404 for any other path
 *   -> the problem middleware: every error as application/problem+json
 */
import express from "express";
import type { Express } from "express";
import type { Logger } from "pino";
import { pino } from "pino";
import { ChangeFeed } from "./change-feed.ts";
import { consoleApp } from "./console/console-app.ts";
import { ShapeRepository } from "./db/repository.ts";
import { FaultStore } from "./faults.ts";
import { CloudMetrics } from "./metrics.ts";
import { allowedHostNames } from "./http/host-check.ts";
import { refuseEveryone, requireBearer } from "./middleware/auth.ts";
import { injectFaults } from "./middleware/faults.ts";
import { onlyAllowedHosts } from "./middleware/host-check.ts";
import { jsonBody } from "./middleware/json-body.ts";
import { observe } from "./middleware/observe.ts";
import { notFound, problemHandler } from "./middleware/problems.ts";
import { traceRequests } from "./middleware/trace.ts";
import { buildOpenApi } from "./openapi.ts";
import { DEFAULTS, type CloudOptions } from "./options.ts";
import { RequestLog } from "./request-log.ts";
import { adminRouter } from "./routes/admin.ts";
import { shapesRouter } from "./routes/shapes.ts";
import { systemRouter } from "./routes/system.ts";
import { watchRouter } from "./routes/watch.ts";

/** Everything the app is built from. */
export interface CloudDeps {
  readonly repository: ShapeRepository;
  readonly faults: FaultStore;
  readonly feed: ChangeFeed;
  readonly requestLog: RequestLog;
  readonly metrics: CloudMetrics;
  readonly logger: Logger;
  /** Bearer token of `/v1`. */
  readonly token: string;
  /** Bearer token of `/admin`; undefined: `/admin` is closed to every token. */
  readonly adminToken: string | undefined;
  /** Largest request body. */
  readonly bodyLimitBytes: number;
  /** The names `Host` may carry on the routes without a token, besides IP addresses (`allowedHostNames`). */
  readonly allowedHosts: ReadonlySet<string>;
}

/** The detail of every `/admin` answer of a cloud without an admin token. */
const ADMIN_CLOSED =
  "cannot authenticate: this cloud was started without an admin token, so /admin is closed to every token " +
  "(the API token too); start it with one (--admin-token or --admin-token-file) to switch faults";

/** Builds the express app. */
export function createApp(deps: CloudDeps): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false); // ETags are revisions, set by the handlers; no generated ones.
  app.use(traceRequests());
  app.use((_req, res, next) => {
    res.set("x-content-type-options", "nosniff");
    next();
  });
  app.use(observe(deps));

  const body = jsonBody(deps.bodyLimitBytes);
  const apiGuards = [requireBearer(deps.token, "shapes"), injectFaults(deps.faults, deps.metrics)];
  app.use(
    shapesRouter({ repository: deps.repository, faults: deps.faults, guards: apiGuards, jsonBody: body }),
  );
  app.use(
    watchRouter({ repository: deps.repository, faults: deps.faults, feed: deps.feed, guards: apiGuards }),
  );
  app.use(
    adminRouter({
      faults: deps.faults,
      requestLog: deps.requestLog,
      guards: [
        deps.adminToken === undefined
          ? refuseEveryone("shapes-admin", ADMIN_CLOSED)
          : requireBearer(deps.adminToken, "shapes-admin"),
      ],
      jsonBody: body,
    }),
  );
  // Below: only what answers without a token.
  app.use(onlyAllowedHosts(deps.allowedHosts));
  app.use(systemRouter({ repository: deps.repository, metrics: deps.metrics, openapi: buildOpenApi() }));
  app.use(consoleApp()); // the web console at `/`: a client of the API above, not part of it
  app.use(notFound);
  app.use(problemHandler(deps.logger));
  return app;
}

/** An app with the dependencies it was built from, and how to release them. */
export interface Cloud {
  readonly app: Express;
  readonly deps: CloudDeps;
  /** Ends every watch stream and closes the database (checkpointing the WAL). Safe to call twice. */
  dispose(): void;
}

/** Opens the database and builds every dependency and the app from `options`. */
export function buildCloud(options: CloudOptions): Cloud {
  if (!options.token) throw new Error("cannot start the mock cloud: a token is required");
  const repository = ShapeRepository.open({
    path: options.db ?? DEFAULTS.db,
    historyLimit: options.historyLimit ?? DEFAULTS.historyLimit,
    ...(options.now ? { now: options.now } : {}),
  });
  const faults = new FaultStore(options.random);
  const feed = new ChangeFeed(repository, { heartbeatMs: options.heartbeatMs ?? DEFAULTS.heartbeatMs });
  faults.onChange(() => feed.pokeAll());
  const deps: CloudDeps = {
    repository,
    faults,
    feed,
    requestLog: new RequestLog(options.requestLogLimit ?? DEFAULTS.requestLogLimit),
    metrics: new CloudMetrics({
      shapes: () => repository.count(),
      revision: () => repository.revision,
      watchers: () => feed.size,
    }),
    logger: options.logger ?? pino({ level: "silent" }),
    token: options.token,
    adminToken: options.adminToken,
    bodyLimitBytes: options.bodyLimitBytes ?? DEFAULTS.bodyLimitBytes,
    allowedHosts: allowedHostNames([...(options.allowedHosts ?? []), options.host ?? DEFAULTS.host]),
  };
  return {
    app: createApp(deps),
    deps,
    dispose() {
      feed.closeAll();
      repository.close();
    },
  };
}

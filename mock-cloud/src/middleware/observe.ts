/**
 * Watches every request finish: counts it in the metrics (by route TEMPLATE, never the raw path, so random
 * URLs cannot blow up the label space), logs it, and appends API writes to the request log.
 */
import type { Request, RequestHandler } from "express";
import type { Logger } from "pino";
import type { CloudMetrics } from "../metrics.ts";
import type { RequestLog } from "../request-log.ts";

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** The route template that matched `req` ("/v1/shapes/:id"), or "unmatched". */
export function routeOf(req: Request): string {
  const route = req.route as { path?: unknown } | undefined;
  return typeof route?.path === "string" ? req.baseUrl + route.path : "unmatched";
}

/** Middleware recording each request once it is answered (or abandoned). */
export function observe(deps: {
  metrics: CloudMetrics;
  requestLog: RequestLog;
  logger: Logger;
}): RequestHandler {
  return (req, res, next) => {
    const startedAtMs = performance.timeOrigin + performance.now();
    const path = req.path;
    res.once("close", () => {
      const finishedAtMs = performance.timeOrigin + performance.now();
      const status = res.writableFinished || res.headersSent ? res.statusCode : 0;
      const route = routeOf(req);
      deps.metrics.observeRequest(route, req.method, status, (finishedAtMs - startedAtMs) / 1000);
      deps.logger.debug(
        { method: req.method, path, route, status, ms: Math.round(finishedAtMs - startedAtMs) },
        "request",
      );
      if (WRITES.has(req.method) && path.startsWith("/v1/")) {
        const userAgent = req.get("user-agent");
        const clientId = req.get("x-client-id");
        deps.requestLog.add({
          method: req.method,
          path,
          status,
          time: new Date(startedAtMs).toISOString(),
          startedAtMs,
          finishedAtMs,
          ...(userAgent === undefined ? {} : { userAgent }),
          ...(clientId === undefined ? {} : { clientId }),
        });
      }
    });
    next();
  };
}

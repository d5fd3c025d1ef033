/**
 * Watches every request finish: counts it in the metrics (by route TEMPLATE, never the raw path, so random
 * URLs cannot blow up the label space), logs it, and appends API writes to the request log (with the trace id
 * the trace middleware found, so a write can be looked up in the tracing backend).
 */
import type { Request, RequestHandler, Response } from "express";
import type { Logger } from "pino";
import type { CloudMetrics } from "../metrics.ts";
import type { RequestLog } from "../request-log.ts";
import type { TraceLocals } from "./trace.ts";

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** The route template that matched `req` ("/v1/shapes/:id"), or "unmatched". */
export function routeOf(req: Request): string {
  const route = req.route as { path?: unknown } | undefined;
  return typeof route?.path === "string" ? req.baseUrl + route.path : "unmatched";
}

/** The status a finished response was answered with, or 0 when the client went away before an answer. */
export function answeredStatus(res: Response): number {
  return res.writableFinished || res.headersSent ? res.statusCode : 0;
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
      const status = answeredStatus(res);
      const route = routeOf(req);
      deps.metrics.observeRequest(route, req.method, status, (finishedAtMs - startedAtMs) / 1000);
      deps.logger.debug(
        { method: req.method, path, route, status, ms: Math.round(finishedAtMs - startedAtMs) },
        "request",
      );
      if (WRITES.has(req.method) && path.startsWith("/v1/")) {
        const userAgent = req.get("user-agent");
        const clientId = req.get("x-client-id");
        const { traceId } = res.locals as TraceLocals;
        deps.requestLog.add({
          method: req.method,
          path,
          status,
          time: new Date(startedAtMs).toISOString(),
          startedAtMs,
          finishedAtMs,
          ...(userAgent === undefined ? {} : { userAgent }),
          ...(clientId === undefined ? {} : { clientId }),
          ...(traceId === undefined ? {} : { traceId }),
        });
      }
    });
    next();
  };
}

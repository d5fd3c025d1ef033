/**
 * Acts on the fault rules (faults.ts) for one API request, before its handler runs, so an injected error
 * or throttle never changes anything: first the latency, then an outage (503), a throttle (429 with
 * Retry-After) or an error (500). `listLagMs` is not applied here: lists and the watch ask the store.
 */
import type { RequestHandler } from "express";
import { setTimeout as sleep } from "node:timers/promises";
import { HttpProblem } from "../errors.ts";
import type { FaultStore } from "../faults.ts";
import type { CloudMetrics } from "../metrics.ts";

/** Middleware applying `faults` to each request. */
export function injectFaults(faults: FaultStore, metrics: CloudMetrics): RequestHandler {
  return async (req, res, next) => {
    const path = req.baseUrl + req.path;
    const decision = faults.decide(req.method, path);
    if (decision.latencyMs > 0) {
      const gone = new AbortController();
      const onClose = () => gone.abort();
      res.once("close", onClose);
      try {
        await sleep(decision.latencyMs, undefined, { signal: gone.signal });
      } catch {
        return; // the client went away while we were being slow
      } finally {
        res.off("close", onClose);
      }
    }
    switch (decision.kind) {
      case "none":
        next();
        return;
      case "outage":
        metrics.observeFault("outage");
        throw new HttpProblem(
          503,
          "unavailable",
          "Service unavailable",
          "cannot serve the request: the cloud is in an (injected) outage",
          {},
          decision.retryAfterSeconds === undefined
            ? {}
            : { "retry-after": String(decision.retryAfterSeconds) },
        );
      case "throttle":
        metrics.observeFault("throttle");
        throw new HttpProblem(
          429,
          "throttled",
          "Too many requests",
          `cannot serve the request now: throttled (injected); retry after ${decision.retryAfterSeconds} s`,
          {},
          { "retry-after": String(decision.retryAfterSeconds) },
        );
      case "error":
        metrics.observeFault("error");
        throw new HttpProblem(
          500,
          "injected-error",
          "Internal server error",
          "cannot serve the request: an injected server error (nothing was changed)",
        );
    }
  };
}

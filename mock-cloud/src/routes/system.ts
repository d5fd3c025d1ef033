/**
 * Unauthenticated operational routes: `/healthz` (the database answers), `/metrics` (Prometheus text of
 * the app's own registry) and `/openapi.json` (the API description).
 */
import { Router } from "express";
import type { ShapeRepository } from "../db/repository.ts";
import { HttpProblem } from "../errors.ts";
import type { CloudMetrics } from "../metrics.ts";
import type { Health } from "../schemas.ts";
import { onlyMethods } from "./shapes.ts";

/** What the system routes need. */
export interface SystemRouteDeps {
  readonly repository: ShapeRepository;
  readonly metrics: CloudMetrics;
  /** The OpenAPI document to serve. */
  readonly openapi: object;
}

/** The router of `/healthz`, `/metrics`, `/openapi.json`. */
export function systemRouter(deps: SystemRouteDeps): Router {
  const router = Router();
  router
    .route("/healthz")
    .get((_req, res) => {
      let health: Health;
      try {
        health = { status: "ok", revision: deps.repository.revision, shapes: deps.repository.count() };
      } catch (err) {
        throw new HttpProblem(
          503,
          "unavailable",
          "Service unavailable",
          `cannot read the database: ${String(err)}`,
        );
      }
      res.json(health);
    })
    .all(onlyMethods("GET"));
  router
    .route("/metrics")
    .get(async (_req, res) => {
      const text = await deps.metrics.registry.metrics();
      res.type(deps.metrics.registry.contentType).send(text);
    })
    .all(onlyMethods("GET"));
  router
    .route("/openapi.json")
    .get((_req, res) => {
      res.json(deps.openapi);
    })
    .all(onlyMethods("GET"));
  return router;
}

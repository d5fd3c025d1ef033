/**
 * `/admin/*`, behind the admin token: the fault switches (`/admin/faults`) and the log of API writes
 * (`/admin/requests`). Never subject to faults, so an outage can always be switched off.
 */
import { Router } from "express";
import type { RequestHandler } from "express";
import type { FaultStore } from "../faults.ts";
import { parseOrThrow } from "../http/validation.ts";
import type { RequestLog } from "../request-log.ts";
import { FaultConfig, FaultRule, type RequestLogPage } from "../schemas.ts";
import { onlyMethods } from "./shapes.ts";

/** What the admin routes need. */
export interface AdminRouteDeps {
  readonly faults: FaultStore;
  readonly requestLog: RequestLog;
  /** Admin authentication. */
  readonly guards: RequestHandler[];
  /** JSON body parsing. */
  readonly jsonBody: RequestHandler[];
}

/** The `/admin` router. */
export function adminRouter(deps: AdminRouteDeps): Router {
  const router = Router();
  router
    .route("/admin/faults")
    .all(deps.guards)
    .get((_req, res) => {
      res.json(deps.faults.config);
    })
    .put(...deps.jsonBody, (req, res) => {
      // FaultUpdate is "a config or one rule"; parse the alternative the body means, for clear errors.
      const body: unknown = req.body;
      const hasRules = typeof body === "object" && body !== null && Object.hasOwn(body, "rules");
      deps.faults.set(
        hasRules
          ? parseOrThrow(FaultConfig, body, "body")
          : { rules: [parseOrThrow(FaultRule, body, "body")] },
      );
      res.json(deps.faults.config);
    })
    .delete((_req, res) => {
      deps.faults.clear();
      res.status(204).end();
    })
    .all(onlyMethods("GET", "PUT", "DELETE"));

  router
    .route("/admin/requests")
    .all(deps.guards)
    .get((_req, res) => {
      const page: RequestLogPage = { items: deps.requestLog.entries(), limit: deps.requestLog.limit };
      res.json(page);
    })
    .delete((_req, res) => {
      deps.requestLog.clear();
      res.status(204).end();
    })
    .all(onlyMethods("GET", "DELETE"));
  return router;
}

/**
 * `GET /v1/watch?since=REV[&tag=k=v...]`: the change feed as Server-Sent Events (see change-feed.ts for the
 * wire format). `since` is exclusive: the stream starts with the first change after it. A `Last-Event-ID`
 * header (sent by EventSource when it reconnects) takes precedence over `since`. Without either, the
 * stream starts at the current revision (only new changes).
 *
 * 410 Gone when `since` is older than the retained history (the changes after it are lost: relist), or
 * newer than the cloud's revision (the cloud's data was reset: relist too).
 */
import { Router } from "express";
import type { RequestHandler } from "express";
import { z } from "zod";
import type { ChangeFeed } from "../change-feed.ts";
import type { ShapeRepository } from "../db/repository.ts";
import { HttpProblem } from "../errors.ts";
import type { FaultStore } from "../faults.ts";
import { parseTagFilters, readQuery } from "../http/query.ts";
import { parseOrThrow } from "../http/validation.ts";
import { onlyMethods } from "./shapes.ts";

const Revision = z
  .string()
  .regex(/^\d{1,15}$/, { error: "must be a non-negative integer revision" })
  .transform(Number);

const WatchQuery = z.strictObject({
  since: Revision.optional(),
  tag: z.array(z.string()).optional(),
});

/** What the watch route needs. */
export interface WatchRouteDeps {
  readonly repository: ShapeRepository;
  readonly faults: FaultStore;
  readonly feed: ChangeFeed;
  /** Authentication and fault injection. */
  readonly guards: RequestHandler[];
}

/** The `/v1/watch` router. */
export function watchRouter(deps: WatchRouteDeps): Router {
  const router = Router();
  router
    .route("/v1/watch")
    .all(deps.guards)
    .get((req, res) => {
      const query = parseOrThrow(WatchQuery, readQuery(req), "query");
      const lastEventId = req.get("last-event-id");
      const since =
        lastEventId !== undefined
          ? parseOrThrow(z.object({ "Last-Event-ID": Revision }), { "Last-Event-ID": lastEventId }, "query")[
              "Last-Event-ID"
            ]
          : (query.since ?? deps.repository.revision);
      const filter = parseTagFilters(query.tag);
      const oldest = deps.repository.oldestReadableRevision;
      const current = deps.repository.revision;
      if (since < oldest || since > current) {
        throw new HttpProblem(
          410,
          "gone",
          "Gone",
          since < oldest
            ? `cannot watch from revision ${since}: the history now starts after revision ${oldest}; list again and watch from the list's revision`
            : `cannot watch from revision ${since}: the cloud is only at revision ${current} (was its data reset?); list again`,
          { oldestRevision: oldest, currentRevision: current },
        );
      }
      if (req.method === "HEAD") {
        res.status(200).type("text/event-stream").end();
        return;
      }
      const path = req.path;
      deps.feed.open(res, { since, filter, lagMs: () => deps.faults.lagMs("GET", path) });
    })
    .all(onlyMethods("GET"));
  return router;
}

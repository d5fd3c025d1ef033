/**
 * `/v1/shapes`: create, list, read (by id or by name), merge-patch, replace and delete shapes. Handlers
 * are thin: validate with the payload's schema (400) and the cloud's own rules (rules.ts, 422), call the
 * repository (which does each read-modify-write in one transaction), answer. Every error is thrown and answered by the problem middleware.
 *
 * THE LIST CONSISTENCY CONTRACT (list-then-watch). A listing is a sequence of pages, each read at a
 * revision: the first page at the cloud's (visible) revision R, every later page at R or later. Every page
 * reports `revision: R`, carried in the opaque `pageToken`. Pages follow an immutable key (creation order),
 * so a shape that exists during the whole listing appears exactly once. A shape changed after R may appear
 * in its newer state; a shape created after R may appear; a shape deleted after R may be missing. Every one
 * of those changes has a revision > R, so a client that lists every page and then watches from `since=R`
 * receives them all: applying watch events over the listing, idempotently, converges on the cloud's state.
 */
import { Router } from "express";
import type { Request, RequestHandler, Response } from "express";
import type { ShapeRepository } from "../db/repository.ts";
import { HttpProblem, methodNotAllowed, ShapeNotFoundError } from "../errors.ts";
import type { FaultStore } from "../faults.ts";
import { etagOf, ifMatchCondition } from "../http/conditional.ts";
import { decodePageToken, encodePageToken } from "../http/page-token.ts";
import { parseTagFilters, readQuery } from "../http/query.ts";
import { parseOrThrow } from "../http/validation.ts";
import { keepingRules } from "../rules.ts";
import type { Shape } from "../schemas.ts";
import { ShapeCreate, ShapePatch, ShapeReplace, type ShapeFields, type ShapePage } from "../schemas.ts";
import { z } from "zod";

/** Default page size. */
export const DEFAULT_PAGE_SIZE = 100;
/** Largest page size. */
export const MAX_PAGE_SIZE = 1000;

const ListQuery = z.strictObject({
  tag: z.array(z.string()).optional(),
  limit: z
    .string()
    .regex(/^\d{1,4}$/, { error: `must be an integer from 1 to ${MAX_PAGE_SIZE}` })
    .transform(Number)
    .pipe(
      z
        .int()
        .min(1, { error: "must be at least 1" })
        .max(MAX_PAGE_SIZE, { error: `must be at most ${MAX_PAGE_SIZE}` }),
    )
    .optional(),
  pageToken: z.string().max(1000).optional(),
});

/** What the shapes routes need. */
export interface ShapesRouteDeps {
  readonly repository: ShapeRepository;
  readonly faults: FaultStore;
  /** Authentication and fault injection, run for every method of every route. */
  readonly guards: RequestHandler[];
  /** JSON body parsing, for the routes that take a body. */
  readonly jsonBody: RequestHandler[];
}

/** The `/v1/shapes` router. */
export function shapesRouter(deps: ShapesRouteDeps): Router {
  const { repository: repo } = deps;
  const router = Router();

  router
    .route("/v1/shapes")
    .all(deps.guards)
    .get((req, res) => {
      const query = parseOrThrow(ListQuery, readQuery(req), "query");
      const filter = parseTagFilters(query.tag);
      const cursor = query.pageToken === undefined ? undefined : decodePageToken(query.pageToken, filter);
      const result = repo.list({
        tags: filter,
        after: cursor?.after ?? 0,
        limit: query.limit ?? DEFAULT_PAGE_SIZE,
        notBefore: cursor?.revision ?? 0,
        lagMs: deps.faults.lagMs(req.method, req.path),
      });
      const revision = cursor?.revision ?? result.readAt;
      const page: ShapePage = {
        items: result.items,
        ...(result.nextAfter === undefined
          ? {}
          : { nextPageToken: encodePageToken({ revision, after: result.nextAfter }, filter) }),
        revision,
      };
      res.json(page);
    })
    .post(...deps.jsonBody, (req, res) => {
      const input = keepingRules(parseOrThrow(ShapeCreate, req.body, "body"), "create");
      const shape = repo.create(input);
      sendShape(res.status(201).location(`/v1/shapes/${encodeURIComponent(shape.id)}`), shape);
    })
    .all(onlyMethods("GET", "POST"));

  // A consistent point read by name. A client that recorded an intent before a create and crashed before
  // it learned the id asks "does a shape with this name exist?" here: like GET by id, the answer is the
  // latest state even with a listLagMs fault, where a listing (or the watch) could still trail the create.
  // Registered before /v1/shapes/:id so that `by-name` is never read as an id (ids are `shp_<hex>`).
  router
    .route("/v1/shapes/by-name/:name")
    .all(deps.guards)
    .get((req, res) => {
      const name = String(req.params.name);
      const shape = repo.getByName(name);
      if (!shape) throw shapeNameNotFound(name);
      sendShape(res, shape);
    })
    .all(onlyMethods("GET"));

  router
    .route("/v1/shapes/:id")
    .all(deps.guards)
    .get((req, res) => {
      const id = idOf(req);
      const shape = repo.get(id);
      if (!shape) throw new ShapeNotFoundError(id);
      sendShape(res, shape);
    })
    .patch(...deps.jsonBody, (req, res) => {
      const condition = ifMatchCondition(req.get("if-match"));
      const patch = parseOrThrow(ShapePatch, req.body, "body");
      sendShape(
        res,
        repo.update(idOf(req), (current) => mergePatch(current, patch), condition),
      );
    })
    .put(...deps.jsonBody, (req, res) => {
      const condition = ifMatchCondition(req.get("if-match"));
      const replacement = parseOrThrow(ShapeReplace, req.body, "body");
      sendShape(
        res,
        repo.update(idOf(req), () => keepingRules(replacement, "replace"), condition),
      );
    })
    .delete((req, res) => {
      const condition = ifMatchCondition(req.get("if-match"));
      repo.delete(idOf(req), condition);
      res.status(204).end();
    })
    .all(onlyMethods("GET", "PATCH", "PUT", "DELETE"));

  return router;
}

/**
 * Applies a JSON Merge Patch (RFC 7396) to a shape's writable fields: absent members are kept, `null`
 * removes (`size`, one tag, or with `tags: null` every tag), anything else replaces. The result is checked
 * against the same rules as a create (e.g. the tag count), inside the update's transaction: a patch that
 * would make an invalid shape is refused whole. The cloud's own rules (rules.ts) apply when the patch sets
 * what they are about (the type, the size): a shape stored before a rule existed can still be recolored.
 */
export function mergePatch(current: Shape, patch: ShapePatch): ShapeFields {
  const tags: Record<string, string> = patch.tags === null ? {} : { ...current.tags };
  for (const [key, value] of Object.entries(patch.tags ?? {})) {
    if (value === null) delete tags[key];
    else tags[key] = value;
  }
  const size = patch.size === undefined ? current.size : (patch.size ?? undefined);
  const merged = {
    name: patch.name ?? current.name,
    type: patch.type ?? current.type,
    color: patch.color ?? current.color,
    ...(size === undefined ? {} : { size }),
    tags,
  };
  const valid = parseOrThrow(ShapeCreate, merged, "body");
  return patch.type !== undefined || (patch.size ?? null) !== null ? keepingRules(valid, "change") : valid;
}

function sendShape(res: Response, shape: Shape): void {
  res.set("etag", etagOf(shape.revision)).json(shape);
}

/** 404 for a name no shape holds. */
function shapeNameNotFound(name: string): HttpProblem {
  return new HttpProblem(404, "not-found", "Not found", `cannot find a shape named ${JSON.stringify(name)}`);
}

function idOf(req: Request): string {
  return String(req.params.id);
}

/** The last handler of a route: every other method is a 405 naming the allowed ones. */
export function onlyMethods(...allowed: string[]): RequestHandler {
  const withHead = allowed.includes("GET") ? [...allowed, "HEAD"] : allowed;
  return (req) => {
    throw methodNotAllowed(req.method, req.path, withHead);
  };
}

/**
 * `/openapi.json`: the API described in OpenAPI 3.1. Component schemas are generated from the zod schemas
 * the code validates with (schemas.ts), so they cannot drift; the paths are written here, next to each
 * other, and openapi.test.ts checks them against the live router and live responses.
 */
import { z } from "zod";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./routes/shapes.ts";
import {
  FaultConfig,
  FaultRule,
  FaultUpdate,
  Health,
  Problem,
  RequestLogEntry,
  RequestLogPage,
  Shape,
  ShapeCreate,
  ShapePage,
  ShapePatch,
  ShapeReplace,
  SIZE_RULES,
  WatchEvent,
} from "./schemas.ts";

/** Every component schema of the document, by name, with the direction it is documented in. */
export const COMPONENTS = {
  Shape: { schema: Shape, io: "output" },
  ShapeCreate: { schema: ShapeCreate, io: "input" },
  ShapeReplace: { schema: ShapeReplace, io: "input" },
  ShapePatch: { schema: ShapePatch, io: "input" },
  ShapePage: { schema: ShapePage, io: "output" },
  WatchEvent: { schema: WatchEvent, io: "output" },
  Problem: { schema: Problem, io: "output" },
  FaultRule: { schema: FaultRule, io: "input" },
  FaultConfig: { schema: FaultConfig, io: "output" },
  FaultUpdate: { schema: FaultUpdate, io: "input" },
  RequestLogEntry: { schema: RequestLogEntry, io: "output" },
  RequestLogPage: { schema: RequestLogPage, io: "output" },
  Health: { schema: Health, io: "output" },
} as const satisfies Record<string, { schema: z.ZodType; io: "input" | "output" }>;

/** A component's name. */
export type ComponentName = keyof typeof COMPONENTS;

type Json = Record<string, unknown>;

const ref = (name: ComponentName): Json => ({ $ref: `#/components/schemas/${name}` });
const response = (name: string): Json => ({ $ref: `#/components/responses/${name}` });
const json = (name: ComponentName, mediaType = "application/json"): Json => ({
  [mediaType]: { schema: ref(name) },
});
const problemResponse = (description: string, headers?: Json): Json => ({
  description,
  ...(headers ? { headers } : {}),
  content: json("Problem", "application/problem+json"),
});
const header = (description: string, schema: Json = { type: "string" }): Json => ({ description, schema });

/** The failures every faultable API operation can answer. */
const API_FAILURES = {
  "401": response("Unauthorized"),
  "429": response("Throttled"),
  "500": response("ServerError"),
  "503": response("Unavailable"),
};

const idParam = {
  name: "id",
  in: "path",
  required: true,
  schema: { type: "string" },
  description: "The shape id.",
};
const ifMatchParam = {
  name: "If-Match",
  in: "header",
  required: false,
  schema: { type: "string" },
  description:
    'Only if the shape is at this revision: its ETag, e.g. "12", a comma-separated list of entity tags, or *. ' +
    "Entity tags are opaque: a well-formed tag the cloud never issued (or a weak one) does not match, 412. " +
    "400 only when the header is not entity-tag syntax (RFC 9110).",
};
const nameParam = {
  name: "name",
  in: "path",
  required: true,
  schema: { type: "string" },
  description: "The shape name (unique across the cloud).",
};
const tagParam = {
  name: "tag",
  in: "query",
  required: false,
  style: "form",
  explode: true,
  schema: { type: "array", items: { type: "string", pattern: "^[^=]+=.*$" }, maxItems: 32 },
  description: "key=value; repeat to AND several filters.",
};
const etagHeader = { ETag: header('The shape\'s revision, quoted: "12". Send it back in If-Match.') };

const LIST_CONTRACT = [
  "Pages follow an immutable key (creation order): a shape that exists during the whole listing appears exactly once.",
  "`revision` is the cloud revision the FIRST page was read at; every page repeats it (it travels in `pageToken`),",
  "and later pages are read at that revision or later. List every page, then `GET /v1/watch?since=<revision>`:",
  "every change the pages may not show has a larger revision, so the watch delivers it, and applying the events",
  "idempotently over the listing converges on the cloud's state. With a `listLagMs` fault, the first page is read",
  "at the revision visible that long ago.",
].join(" ");

/** Builds the document. */
export function buildOpenApi(): Json {
  const inputs = z.toJSONSchema(componentRegistry(), {
    io: "input",
    uri: (id) => `#/components/schemas/${id}`,
  });
  const outputs = z.toJSONSchema(componentRegistry(), {
    io: "output",
    uri: (id) => `#/components/schemas/${id}`,
  });
  const schemas: Record<string, unknown> = {};
  for (const [name, { io }] of Object.entries(COMPONENTS)) {
    const all = (io === "input" ? inputs : outputs).schemas;
    const { $schema: _s, $id: _i, ...schema } = all[name] as Json;
    schemas[name] = schema;
  }

  return {
    openapi: "3.1.1",
    info: {
      title: "Shapes cloud (mock)",
      version: "1.0.0",
      description:
        "A mock cloud API of shapes that many users share. Every error is application/problem+json. " +
        "Writes are stamped with a cloud-wide, strictly increasing `revision`; a shape's ETag is its revision. " +
        "A request may carry a W3C `traceparent` header: the cloud continues that trace, records its id in " +
        "the request log, and answers with a `traceresponse` header (W3C Trace Context Level 2) whenever a " +
        "trace id is known. A write the schemas accept may still break a rule of the cloud's own " +
        `(${SIZE_RULES}): 422, application/problem+json, and the same request is refused again. ` +
        LIST_CONTRACT,
    },
    security: [{ bearer: [] }],
    paths: {
      "/v1/shapes": {
        get: {
          operationId: "listShapes",
          summary: "List shapes (paginated, filtered by tags)",
          description: LIST_CONTRACT,
          parameters: [
            tagParam,
            {
              name: "limit",
              in: "query",
              required: false,
              schema: { type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
            },
            {
              name: "pageToken",
              in: "query",
              required: false,
              schema: { type: "string" },
              description: "The previous page's nextPageToken, with the same tag filters.",
            },
          ],
          responses: {
            "200": { description: "One page.", content: json("ShapePage") },
            "400": response("BadRequest"),
            ...API_FAILURES,
          },
        },
        post: {
          operationId: "createShape",
          summary: "Create a shape",
          requestBody: { required: true, content: json("ShapeCreate") },
          responses: {
            "201": {
              description: "Created.",
              headers: { ...etagHeader, Location: header("/v1/shapes/{id}") },
              content: json("Shape"),
            },
            "400": response("BadRequest"),
            "409": response("Conflict"),
            "413": response("PayloadTooLarge"),
            "415": response("UnsupportedMediaType"),
            "422": response("Unprocessable"),
            ...API_FAILURES,
          },
        },
      },
      "/v1/shapes/by-name/{name}": {
        parameters: [nameParam],
        get: {
          operationId: "getShapeByName",
          summary: "Read the shape holding a name (always the latest state, even with listLagMs)",
          description:
            "A consistent point read by name: the same body and ETag as GET /v1/shapes/{id}, or 404 when no " +
            "shape holds the name. It exists for a client that recorded an intent before a create and lost " +
            "the answer (it crashed before it learned the id): it can ask whether a shape with this name " +
            "exists and get an answer that never trails, as a listing or the watch may under listLagMs.",
          responses: {
            "200": { description: "The shape.", headers: etagHeader, content: json("Shape") },
            "404": response("NotFound"),
            ...API_FAILURES,
          },
        },
      },
      "/v1/shapes/{id}": {
        parameters: [idParam],
        get: {
          operationId: "getShape",
          summary: "Read a shape (always the latest state, even with listLagMs)",
          responses: {
            "200": { description: "The shape.", headers: etagHeader, content: json("Shape") },
            "404": response("NotFound"),
            ...API_FAILURES,
          },
        },
        patch: {
          operationId: "patchShape",
          summary: "Merge-patch a shape (RFC 7396)",
          description:
            "Absent members are kept; null removes size, a tag, or (tags: null) every tag. A patch that changes " +
            "nothing is not a write (same revision). Concurrent patches of different tags never lose one. " +
            "The cloud's size limits per type (422) apply when the patch sets the type or the size.",
          parameters: [ifMatchParam],
          requestBody: {
            required: true,
            content: { ...json("ShapePatch", "application/merge-patch+json"), ...json("ShapePatch") },
          },
          responses: {
            "200": { description: "The shape after the patch.", headers: etagHeader, content: json("Shape") },
            "400": response("BadRequest"),
            "404": response("NotFound"),
            "409": response("Conflict"),
            "412": response("PreconditionFailed"),
            "413": response("PayloadTooLarge"),
            "415": response("UnsupportedMediaType"),
            "422": response("Unprocessable"),
            ...API_FAILURES,
          },
        },
        put: {
          operationId: "replaceShape",
          summary: "Replace a shape's writable fields",
          parameters: [ifMatchParam],
          requestBody: { required: true, content: json("ShapeReplace") },
          responses: {
            "200": {
              description: "The shape after the replace.",
              headers: etagHeader,
              content: json("Shape"),
            },
            "400": response("BadRequest"),
            "404": response("NotFound"),
            "409": response("Conflict"),
            "412": response("PreconditionFailed"),
            "413": response("PayloadTooLarge"),
            "415": response("UnsupportedMediaType"),
            "422": response("Unprocessable"),
            ...API_FAILURES,
          },
        },
        delete: {
          operationId: "deleteShape",
          summary: "Delete a shape",
          description: "404 when it does not exist, even with If-Match.",
          parameters: [ifMatchParam],
          responses: {
            "204": { description: "Deleted." },
            "400": response("BadRequest"),
            "404": response("NotFound"),
            "412": response("PreconditionFailed"),
            ...API_FAILURES,
          },
        },
      },
      "/v1/watch": {
        get: {
          operationId: "watchShapes",
          summary: "Follow every change as Server-Sent Events",
          description:
            "Events `id: <revision>` / `data: <WatchEvent JSON>` for every change after `since` (exclusive), " +
            "in revision order, then live; `: heartbeat` comments keep the connection open. With tag filters, " +
            "a shape that starts matching is ADDED and one that stops matching is DELETED (with its new state). " +
            "With a listLagMs fault, events arrive that long after their write. A stream that falls behind the " +
            "retained history is ended; reconnecting from its last id answers 410.",
          parameters: [
            {
              name: "since",
              in: "query",
              required: false,
              schema: { type: "integer", minimum: 0 },
              description: "Start after this revision. Default: the current revision (only new changes).",
            },
            {
              name: "Last-Event-ID",
              in: "header",
              required: false,
              schema: { type: "integer", minimum: 0 },
              description: "EventSource resume: takes precedence over since.",
            },
            tagParam,
          ],
          responses: {
            "200": {
              description: "The event stream. Each event's data is a WatchEvent.",
              content: {
                "text/event-stream": { schema: { type: "string" }, "x-event-data": ref("WatchEvent") },
              },
            },
            "400": response("BadRequest"),
            "410": problemResponse(
              "since is older than the retained history, or newer than the cloud's revision: list again.",
            ),
            ...API_FAILURES,
          },
        },
      },
      "/admin/faults": {
        get: {
          operationId: "getFaults",
          summary: "The fault rules",
          responses: {
            "200": { description: "The rules.", content: json("FaultConfig") },
            "401": response("Unauthorized"),
          },
        },
        put: {
          operationId: "setFaults",
          summary: "Replace the fault rules",
          description:
            "Every matching rule applies to API (/v1) requests: an outage wins; the largest latency, lag and " +
            "Retry-After win; error and throttle rates each roll their own dice.",
          requestBody: { required: true, content: json("FaultUpdate") },
          responses: {
            "200": { description: "The rules now.", content: json("FaultConfig") },
            "400": response("BadRequest"),
            "401": response("Unauthorized"),
            "413": response("PayloadTooLarge"),
            "415": response("UnsupportedMediaType"),
          },
        },
        delete: {
          operationId: "clearFaults",
          summary: "Remove every fault rule",
          responses: { "204": { description: "Cleared." }, "401": response("Unauthorized") },
        },
      },
      "/admin/requests": {
        get: {
          operationId: "getRequestLog",
          summary: "The most recent API writes, oldest first",
          responses: {
            "200": { description: "The log.", content: json("RequestLogPage") },
            "401": response("Unauthorized"),
          },
        },
        delete: {
          operationId: "clearRequestLog",
          summary: "Forget the logged writes",
          responses: { "204": { description: "Cleared." }, "401": response("Unauthorized") },
        },
      },
      "/healthz": {
        get: {
          operationId: "health",
          summary: "Liveness: the database answers",
          security: [],
          responses: {
            "200": { description: "Healthy.", content: json("Health") },
            "503": problemResponse("The database does not answer."),
            "421": response("MisdirectedRequest"),
          },
        },
      },
      "/metrics": {
        get: {
          operationId: "metrics",
          summary: "Prometheus metrics",
          security: [],
          responses: {
            "200": {
              description: "Prometheus text format.",
              content: { "text/plain": { schema: { type: "string" } } },
            },
            "421": response("MisdirectedRequest"),
          },
        },
      },
      "/openapi.json": {
        get: {
          operationId: "openapi",
          summary: "This document",
          security: [],
          responses: {
            "200": {
              description: "OpenAPI 3.1.",
              content: { "application/json": { schema: { type: "object" } } },
            },
            "421": response("MisdirectedRequest"),
          },
        },
      },
    },
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas,
      responses: {
        BadRequest: problemResponse(
          "Invalid input, unknown field, malformed JSON or bad header; `errors` names each field.",
        ),
        Unauthorized: problemResponse("Missing or wrong bearer token.", {
          "WWW-Authenticate": header('Bearer realm="..."'),
        }),
        NotFound: problemResponse("No such shape (no shape with this id, or holding this name)."),
        Conflict: problemResponse("The name is held by another shape; `existingId` says which."),
        PreconditionFailed: problemResponse(
          "If-Match does not match; `currentRevision` is the shape's revision.",
        ),
        PayloadTooLarge: problemResponse("The body is too large."),
        UnsupportedMediaType: problemResponse("The body is not JSON."),
        Unprocessable: problemResponse(
          `A rule of the cloud refuses the shape, though every field is valid on its own (type size-limit): ${SIZE_RULES}. ` +
            "`errors` names the field. The same request is refused again, however often it is sent.",
        ),
        Throttled: problemResponse("Throttled (a fault rule): wait Retry-After seconds.", {
          "Retry-After": header("Seconds to wait.", { type: "integer" }),
        }),
        ServerError: problemResponse("An injected (or, should it happen, a real) server error."),
        MisdirectedRequest: problemResponse(
          "The Host header names another server (type misdirected-request): a route without a token answers only " +
            "for IP addresses, localhost, the cloud's --host and its --allowed-hosts, so that a web page cannot " +
            "read it through DNS rebinding.",
        ),
        Unavailable: problemResponse("Outage (a fault rule).", {
          "Retry-After": header("Seconds to wait, when the rule sets one.", { type: "integer" }),
        }),
      },
    },
  };
}

/** A registry of every component, so that components refer to each other by `$ref`. */
function componentRegistry() {
  const registry = z.registry<{ id: string }>();
  for (const [name, c] of Object.entries(COMPONENTS)) registry.add(c.schema, { id: name });
  return registry;
}

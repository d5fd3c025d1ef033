/**
 * Every payload the mock cloud reads or writes, as ONE zod schema each: the schema is the validator, its
 * `z.infer` is the TypeScript type, and `z.toJSONSchema` of it is the component in `/openapi.json`
 * (see openapi.ts). Change a rule here and the code, the types and the document change together.
 */
import { z } from "zod";

/** Largest name: the length of a DNS subdomain (RFC 1123), like a Kubernetes object name. */
export const MAX_NAME_LENGTH = 253;
/** Most tags one shape may carry. */
export const MAX_TAGS = 32;
/** Longest tag key. */
export const MAX_TAG_KEY_LENGTH = 63;
/** Longest tag value (room for `<namespace>/<name>` of a Kubernetes object). */
export const MAX_TAG_VALUE_LENGTH = 512;
/** Largest `size`. Some types have a smaller limit of their own: a rule of the cloud (rules.ts, 422). */
export const MAX_SIZE = 1000;

/** The shape types the cloud can draw. */
export const SHAPE_TYPES = ["square", "circle", "triangle", "hexagon"] as const;

/**
 * The largest size of the types that have a limit of their own, below {@link MAX_SIZE}: a rule of the cloud,
 * not of the payload (rules.ts answers 422 when a write breaks it; the schemas here accept the size).
 */
export const MAX_SIZE_BY_TYPE: Readonly<Partial<Record<(typeof SHAPE_TYPES)[number], number>>> = {
  triangle: 500,
};

/** The largest size the cloud accepts for `type` ({@link MAX_SIZE} for a type without a limit of its own). */
export function maxSizeOf(type: string): number {
  return MAX_SIZE_BY_TYPE[type as (typeof SHAPE_TYPES)[number]] ?? MAX_SIZE;
}

/** The per-type limits in words, for the OpenAPI document: "a triangle's size is at most 500". */
export const SIZE_RULES = Object.entries(MAX_SIZE_BY_TYPE)
  .map(([type, max]) => `a ${type}'s size is at most ${max}`)
  .join("; ");
/** The named color palette. */
export const COLORS = [
  "red",
  "orange",
  "yellow",
  "green",
  "blue",
  "purple",
  "pink",
  "brown",
  "black",
  "white",
  "gray",
] as const;

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const TAG_KEY = /^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$/;

/** A shape's name: unique across the cloud, a lowercase RFC 1123 DNS subdomain. */
export const ShapeName = z
  .string()
  .min(1, { error: "must not be empty" })
  .max(MAX_NAME_LENGTH, { error: `must be at most ${MAX_NAME_LENGTH} characters` })
  .regex(DNS_SUBDOMAIN, {
    error:
      "must be a lowercase RFC 1123 DNS subdomain (a-z, 0-9, '-' and '.', starting and ending alphanumeric)",
  })
  .meta({
    description: "Unique across the whole cloud: a lowercase RFC 1123 DNS subdomain.",
    examples: ["default.foo"],
  });

/** What a shape looks like. */
export const ShapeType = z.enum(SHAPE_TYPES, {
  error: `must be one of ${SHAPE_TYPES.join(", ")}`,
});

/** A color from the palette. */
export const Color = z.enum(COLORS, { error: `must be one of ${COLORS.join(", ")}` });

/** A shape's size: optional, positive, bounded. */
export const Size = z
  .number({ error: "must be a number" })
  .positive({ error: "must be greater than 0" })
  .max(MAX_SIZE, { error: `must be at most ${MAX_SIZE}` });

/** A tag key: like a Kubernetes label key. */
export const TagKey = z
  .string()
  .max(MAX_TAG_KEY_LENGTH, { error: `tag keys must be at most ${MAX_TAG_KEY_LENGTH} characters` })
  .regex(TAG_KEY, {
    error: "tag keys must be 1-63 of A-Z a-z 0-9 . _ / -, starting and ending alphanumeric",
  });

/** A tag value: any text (quotes, SQL, HTML are kept verbatim), bounded. */
export const TagValue = z
  .string({ error: "tag values must be strings" })
  .max(MAX_TAG_VALUE_LENGTH, { error: `tag values must be at most ${MAX_TAG_VALUE_LENGTH} characters` });

/** A shape's tags: string to string. Ownership lives here; the cloud gives tags no meaning. */
export const Tags = z
  .record(TagKey, TagValue)
  .refine((tags) => Object.keys(tags).length <= MAX_TAGS, { error: `at most ${MAX_TAGS} tags` })
  .meta({ maxProperties: MAX_TAGS, description: "Free-form string tags; ownership is only what tags say." });

/** Body of `POST /v1/shapes`. */
export const ShapeCreate = z
  .strictObject({
    name: ShapeName,
    type: ShapeType,
    color: Color,
    size: Size.optional(),
    tags: Tags.default({}),
  })
  .meta({
    description:
      "A new shape. Unknown fields are rejected (400). Beyond this schema, a rule of the cloud: " +
      `${SIZE_RULES} (422 size-limit).`,
  });
/** A new shape, as validated. */
export type ShapeCreate = z.infer<typeof ShapeCreate>;

/** Body of `PUT /v1/shapes/{id}`: every writable field; an absent `size` or `tags` is removed. */
export const ShapeReplace = ShapeCreate.meta({
  description: "The whole writable state of a shape. An absent size is removed; absent tags become {}.",
});
/** A full replacement, as validated. */
export type ShapeReplace = z.infer<typeof ShapeReplace>;

/** The writable fields of a stored shape (what create, replace and patch all produce). */
export type ShapeFields = ShapeCreate;

/**
 * Body of `PATCH /v1/shapes/{id}`: a JSON Merge Patch (RFC 7396). Absent members are unchanged; `null`
 * removes `size`, a tag, or (for `tags: null`) every tag. `name`, `type` and `color` cannot be removed.
 */
export const ShapePatch = z
  .strictObject({
    name: ShapeName.optional(),
    type: ShapeType.optional(),
    color: Color.optional(),
    size: Size.nullable().optional(),
    tags: z.record(TagKey, TagValue.nullable()).nullable().optional(),
  })
  .meta({ description: "JSON Merge Patch (RFC 7396) of a shape's writable fields." });
/** A merge patch, as validated. */
export type ShapePatch = z.infer<typeof ShapePatch>;

/** A shape as the cloud returns it. */
export const Shape = z.strictObject({
  id: z.string().meta({ description: "Server-assigned, opaque, stable." }),
  name: ShapeName,
  type: ShapeType,
  color: Color,
  size: Size.optional(),
  tags: Tags,
  revision: z
    .int()
    .positive()
    .meta({ description: "The cloud revision of this shape's last write. The ETag is its quoted value." }),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
});
/** A shape as the cloud returns it. */
export type Shape = z.infer<typeof Shape>;

/** Answer of `GET /v1/shapes`. */
export const ShapePage = z.strictObject({
  items: z.array(Shape),
  nextPageToken: z
    .string()
    .optional()
    .meta({ description: "Present when there are more items: pass it as `pageToken`." }),
  revision: z
    .int()
    .nonnegative()
    .meta({
      description:
        "The cloud revision the FIRST page was read at (every page repeats it). List every page, then " +
        "watch from this revision, and you miss no change.",
    }),
});
/** One page of a listing. */
export type ShapePage = z.infer<typeof ShapePage>;

/** The kinds of change in the change feed. */
export const WatchEventType = z.enum(["ADDED", "MODIFIED", "DELETED"]);
/** A kind of change. */
export type WatchEventType = z.infer<typeof WatchEventType>;

/** The `data:` of one Server-Sent Event of `GET /v1/watch`; the SSE `id:` is the same `revision`. */
export const WatchEvent = z
  .strictObject({
    type: WatchEventType,
    shape: Shape,
    revision: z.int().positive(),
  })
  .meta({
    description:
      "One change. `shape` is the shape after the change (DELETED: as it was when deleted); `revision` is " +
      "the cloud revision of the change and also the SSE `id:`.",
  });
/** One change. */
export type WatchEvent = z.infer<typeof WatchEvent>;

/** An RFC 9457 (ex-7807) problem: the body of every error. */
export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.int().min(400).max(599),
    detail: z.string(),
    errors: z
      .array(z.strictObject({ field: z.string(), message: z.string() }))
      .optional()
      .meta({ description: "400 and 422: one entry per bad field." }),
    existingId: z.string().optional().meta({ description: "409: the id of the shape that holds the name." }),
    currentRevision: z.int().nonnegative().optional(),
    oldestRevision: z.int().nonnegative().optional(),
  })
  .meta({ description: "application/problem+json (RFC 9457)." });
/** A problem body. */
export type Problem = z.infer<typeof Problem>;

const Rate = z
  .number()
  .min(0, { error: "must be between 0 and 1" })
  .max(1, { error: "must be between 0 and 1" });

/** HTTP methods a fault rule can be scoped to. */
export const FAULT_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/**
 * One fault rule. A rule applies to the API (`/v1/...`) requests that match its `method` and `path`
 * (both optional); admin, health, metrics and the OpenAPI document are never faulted.
 */
export const FaultRule = z.strictObject({
  method: z
    .enum(FAULT_METHODS, { error: `must be one of ${FAULT_METHODS.join(", ")} (upper case)` })
    .optional(),
  path: z
    .string()
    .max(200)
    .regex(/^\/\S*$/, { error: "must start with '/' and contain no spaces" })
    .optional()
    .meta({
      description:
        "A path template: exact ('/v1/shapes'), with ':param' segments ('/v1/shapes/:id'), or a prefix ending in '*' ('/v1/*').",
    }),
  errorRate: Rate.optional().meta({ description: "Share of requests answered 500 before anything is done." }),
  latencyMs: z.int().min(0).max(60_000).optional().meta({ description: "Delay before handling a request." }),
  throttleRate: Rate.optional().meta({ description: "Share of requests answered 429 with Retry-After." }),
  retryAfterSeconds: z.int().min(0).max(3600).optional().meta({
    description: "Retry-After of throttled (default 1) and outage (when set) answers.",
  }),
  outage: z.boolean().optional().meta({ description: "true: every matching request is answered 503." }),
  listLagMs: z.int().min(0).max(600_000).optional().meta({
    description: "Lists and the watch show the cloud as it was this long ago (eventual consistency).",
  }),
});
/** One fault rule. */
export type FaultRule = z.infer<typeof FaultRule>;

/** The whole fault configuration (`GET /admin/faults`). */
export const FaultConfig = z
  .strictObject({ rules: z.array(FaultRule).max(50) })
  .meta({ description: "Every matching rule applies." });
/** The whole fault configuration. */
export type FaultConfig = z.infer<typeof FaultConfig>;

/** Body of `PUT /admin/faults`: the whole configuration, or one rule as a shorthand for `{ rules: [rule] }`. */
export const FaultUpdate = z.union([FaultConfig, FaultRule]);
/** A fault update. */
export type FaultUpdate = z.infer<typeof FaultUpdate>;

/** One write request the cloud answered (or that was cut short), from the request log. */
export const RequestLogEntry = z.strictObject({
  seq: z.int().positive(),
  method: z.string(),
  path: z.string(),
  status: z.int().meta({ description: "The HTTP status; 0 when the client went away before an answer." }),
  time: z.iso.datetime().meta({ description: "When the request arrived." }),
  startedAtMs: z.number().meta({ description: "Arrival, epoch milliseconds (sub-millisecond precision)." }),
  finishedAtMs: z.number().meta({ description: "Answer sent or connection closed, epoch milliseconds." }),
  userAgent: z.string().optional(),
  clientId: z.string().optional().meta({ description: "The X-Client-Id header." }),
  traceId: z
    .string()
    .regex(/^[0-9a-f]{32}$/)
    .optional()
    .meta({
      description:
        "The W3C trace id of the request: the cloud's own span's when it traces, else the caller's " +
        "(`traceparent`); absent when neither is known.",
    }),
});
/** One logged write. */
export type RequestLogEntry = z.infer<typeof RequestLogEntry>;

/** Answer of `GET /admin/requests`: the most recent writes, oldest first. */
export const RequestLogPage = z.strictObject({ items: z.array(RequestLogEntry), limit: z.int().positive() });
/** The request log. */
export type RequestLogPage = z.infer<typeof RequestLogPage>;

/** Answer of `GET /healthz`. */
export const Health = z.strictObject({
  status: z.literal("ok"),
  revision: z.int().nonnegative(),
  shapes: z.int().nonnegative(),
});
/** The health answer. */
export type Health = z.infer<typeof Health>;

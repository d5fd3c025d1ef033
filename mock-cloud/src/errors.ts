/**
 * The two kinds of failure the cloud knows:
 *
 * - domain errors, thrown by the repository ("that name is taken", "that shape is gone", "it changed
 *   since you read it"), which know nothing about HTTP;
 * - `HttpProblem`, thrown by handlers and middleware for everything about the request itself.
 *
 * The error middleware (middleware/problems.ts) turns both into `application/problem+json`.
 */
import type { Problem } from "./schemas.ts";

/** Base of every problem `type` URI; README.md lists them. */
export const PROBLEM_BASE = "https://shapes.example.com/problems/";

/** A shape that does not exist (or no longer does). */
export class ShapeNotFoundError extends Error {
  /** The id that was asked for. */
  readonly id: string;
  constructor(id: string) {
    super(`cannot find shape ${JSON.stringify(id)}`);
    this.name = "ShapeNotFoundError";
    this.id = id;
  }
}

/** A create or rename to a name another shape holds. */
export class NameTakenError extends Error {
  /** The contested name. */
  readonly shapeName: string;
  /** The id of the shape that holds it. */
  readonly existingId: string;
  constructor(shapeName: string, existingId: string) {
    super(`cannot use name ${JSON.stringify(shapeName)}: shape ${existingId} already has it`);
    this.name = "NameTakenError";
    this.shapeName = shapeName;
    this.existingId = existingId;
  }
}

/** An `If-Match` that does not match the shape's current revision. */
export class RevisionMismatchError extends Error {
  /** The shape's revision now. */
  readonly currentRevision: number;
  constructor(id: string, currentRevision: number) {
    super(
      `cannot change shape ${id}: it is at revision ${currentRevision}, not the one in If-Match (read it again)`,
    );
    this.name = "RevisionMismatchError";
    this.currentRevision = currentRevision;
  }
}

/** Extra members of a problem body beyond type/title/status/detail. */
export type ProblemExtras = Omit<Problem, "type" | "title" | "status" | "detail">;

/** An error that is answered as an RFC 9457 problem with this status. */
export class HttpProblem extends Error {
  /** HTTP status. */
  readonly status: number;
  /** Last segment of the problem `type` URI, e.g. "name-conflict". */
  readonly slug: string;
  /** Short, fixed summary of the problem type. */
  readonly title: string;
  /** Extra body members (`errors`, `existingId`, ...). */
  readonly extras: ProblemExtras;
  /** Extra response headers (`Retry-After`, `Allow`, `WWW-Authenticate`). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    slug: string,
    title: string,
    detail: string,
    extras: ProblemExtras = {},
    headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = "HttpProblem";
    this.status = status;
    this.slug = slug;
    this.title = title;
    this.extras = extras;
    this.headers = headers;
  }

  /** The problem body. */
  toProblem(): Problem {
    return {
      type: PROBLEM_BASE + this.slug,
      title: this.title,
      status: this.status,
      detail: this.message,
      ...this.extras,
    };
  }
}

/** 400: the request is wrong; `errors` names each bad field. */
export function badRequest(detail: string, errors?: { field: string; message: string }[]): HttpProblem {
  return new HttpProblem(400, "invalid-request", "Invalid request", detail, errors ? { errors } : {});
}

/** 404 for a path that is not part of the API. */
export function routeNotFound(method: string, path: string): HttpProblem {
  return new HttpProblem(
    404,
    "not-found",
    "Not found",
    `cannot ${method} ${path}: no such resource (see /openapi.json)`,
  );
}

/** 405 with the methods the path does allow. */
export function methodNotAllowed(method: string, path: string, allowed: readonly string[]): HttpProblem {
  return new HttpProblem(
    405,
    "method-not-allowed",
    "Method not allowed",
    `cannot ${method} ${path}: allowed methods are ${allowed.join(", ")}`,
    {},
    { allow: allowed.join(", ") },
  );
}

/**
 * The ONE error middleware: every failure leaves the cloud as `application/problem+json` (RFC 9457) with
 * `type`, `title`, `status` and a `detail` a person understands. Domain errors and body-parser errors are
 * translated; anything unexpected is logged with its stack and answered as a bare 500 (no stack trace
 * ever reaches a client).
 */
import type { ErrorRequestHandler, RequestHandler } from "express";
import type { Logger } from "pino";
import {
  HttpProblem,
  NameTakenError,
  RevisionMismatchError,
  ShapeNotFoundError,
  routeNotFound,
} from "../errors.ts";

/** Body-parser (and raw-body) errors carry an HTTP status and a `type`. */
interface HttpishError {
  status?: unknown;
  statusCode?: unknown;
  type?: unknown;
  message?: unknown;
}

/** Translates any thrown value into an `HttpProblem` (undefined: an unexpected failure). */
export function toProblem(err: unknown): HttpProblem | undefined {
  if (err instanceof HttpProblem) return err;
  if (err instanceof ShapeNotFoundError) {
    return new HttpProblem(404, "not-found", "Not found", `cannot find shape ${JSON.stringify(err.id)}`);
  }
  if (err instanceof NameTakenError) {
    return new HttpProblem(409, "name-conflict", "Name already in use", err.message, {
      existingId: err.existingId,
    });
  }
  if (err instanceof RevisionMismatchError) {
    return new HttpProblem(412, "precondition-failed", "Precondition failed", err.message, {
      currentRevision: err.currentRevision,
    });
  }
  const e = (typeof err === "object" && err !== null ? err : {}) as HttpishError;
  const status =
    typeof e.status === "number" ? e.status : typeof e.statusCode === "number" ? e.statusCode : 0;
  const message = typeof e.message === "string" ? e.message : "";
  switch (e.type) {
    case "entity.too.large":
      return new HttpProblem(
        413,
        "payload-too-large",
        "Payload too large",
        `cannot accept the body: ${message}`,
      );
    case "entity.parse.failed":
      return new HttpProblem(
        400,
        "malformed-json",
        "Malformed JSON",
        `cannot parse the body as JSON: ${message}`,
        {
          errors: [{ field: "(body)", message: "malformed JSON" }],
        },
      );
    case "encoding.unsupported":
    case "charset.unsupported":
      return new HttpProblem(
        415,
        "unsupported-media-type",
        "Unsupported media type",
        `cannot read the body: ${message}`,
      );
    case "request.aborted":
    case "request.size.invalid":
      return new HttpProblem(400, "invalid-request", "Invalid request", `cannot read the body: ${message}`);
  }
  if (status >= 400 && status < 500) {
    return new HttpProblem(
      status,
      "invalid-request",
      "Invalid request",
      `cannot accept the request: ${message}`,
    );
  }
  return undefined;
}

/** The error middleware. Register it last. */
export function problemHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      // Too late for a problem body (e.g. a stream already started): drop the connection.
      logger.error(
        { err, method: req.method, path: req.path },
        "cannot finish a response that already started",
      );
      next(err);
      return;
    }
    let problem = toProblem(err);
    if (!problem) {
      logger.error({ err, method: req.method, path: req.path }, "unexpected failure");
      problem = new HttpProblem(
        500,
        "internal",
        "Internal server error",
        "cannot complete the request: an unexpected internal error (the server log has the details)",
      );
    }
    res
      .status(problem.status)
      .set(problem.headers)
      .type("application/problem+json")
      .send(JSON.stringify(problem.toProblem()));
  };
}

/** The last route: 404 for every path the API does not have. */
export const notFound: RequestHandler = (req) => {
  throw routeNotFound(req.method, req.path);
};

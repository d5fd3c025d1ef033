/**
 * JSON request bodies: `application/json` and `application/merge-patch+json` (any `+json`), at most
 * `limitBytes` (413 beyond). Malformed JSON is a 400, another content type a 415, a missing body a 400.
 * The key `__proto__` is refused anywhere in a body: it cannot be stored faithfully in a JS object.
 */
import express from "express";
import type { RequestHandler } from "express";
import { badRequest, HttpProblem } from "../errors.ts";

/** Is `type` (a Content-Type without parameters) a JSON media type? */
function isJson(type: string): boolean {
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

/** Middleware pair: parse the JSON body, then insist there was one. */
export function jsonBody(limitBytes: number): RequestHandler[] {
  const parse = express.json({
    limit: limitBytes,
    strict: true,
    type: (req) => isJson((req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? ""),
    reviver: (key: string, value: unknown) => {
      if (key === "__proto__") throw new SyntaxError('the key "__proto__" is not allowed');
      return value;
    },
  });
  const requireBody: RequestHandler = (req, _res, next) => {
    if (req.body !== undefined) {
      next();
      return;
    }
    const hasBody =
      Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;
    if (hasBody) {
      throw new HttpProblem(
        415,
        "unsupported-media-type",
        "Unsupported media type",
        `cannot read a ${JSON.stringify(req.headers["content-type"] ?? "(none)")} body: send Content-Type: application/json`,
      );
    }
    throw badRequest("cannot accept the request: it needs a JSON body", [
      { field: "(body)", message: "required" },
    ]);
  };
  return [parse, requireBody];
}

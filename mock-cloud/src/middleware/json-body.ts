/**
 * JSON request bodies: `application/json` and `application/merge-patch+json` (any `+json`), at most
 * `limitBytes` (413 beyond). Malformed JSON is a 400, another content type a 415, a missing body a 400,
 * and so is an empty one: express.json() reads zero bytes as `{}`, which would make an empty PATCH a
 * successful no-op (the API fuzzer, chaos/fuzz-cloud-api.test.ts, found it).
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
  // The requests whose JSON body had zero bytes (told by `verify`, which sees the raw bytes).
  const empty = new WeakSet<object>();
  const parse = express.json({
    verify: (req, _res, buf) => {
      if (buf.length === 0) empty.add(req);
    },
    limit: limitBytes,
    strict: true,
    type: (req) => isJson((req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? ""),
    reviver: (key: string, value: unknown) => {
      if (key === "__proto__") throw new SyntaxError('the key "__proto__" is not allowed');
      return value;
    },
  });
  const requireBody: RequestHandler = (req, _res, next) => {
    if (req.body !== undefined && !empty.has(req)) {
      next();
      return;
    }
    const hasBody =
      Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;
    if (hasBody && !empty.has(req)) {
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

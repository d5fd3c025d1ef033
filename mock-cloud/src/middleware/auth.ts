/**
 * Bearer-token authentication. The presented token is compared in constant time (SHA-256 of both sides,
 * then `timingSafeEqual`, so neither the content nor the length of the secret leaks through timing).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { RequestHandler } from "express";
import { HttpProblem } from "../errors.ts";

/** Does `presented` equal `secret`? Constant time in the content of both. */
export function tokensEqual(presented: string, secret: string): boolean {
  const a = createHash("sha256").update(presented).digest();
  const b = createHash("sha256").update(secret).digest();
  return timingSafeEqual(a, b);
}

/** Middleware: 401 (with `WWW-Authenticate`) unless `Authorization: Bearer <token>` carries `token`. */
export function requireBearer(token: string, realm: string): RequestHandler {
  return (req, _res, next) => {
    const header = req.get("authorization");
    const m = header === undefined ? null : /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
    if (!m) {
      throw new HttpProblem(
        401,
        "unauthorized",
        "Unauthorized",
        "cannot authenticate: send Authorization: Bearer <token>",
        {},
        { "www-authenticate": `Bearer realm="${realm}"` },
      );
    }
    if (!tokensEqual(m[1] ?? "", token)) {
      throw new HttpProblem(
        401,
        "unauthorized",
        "Unauthorized",
        "cannot authenticate: the bearer token is not valid",
        {},
        { "www-authenticate": `Bearer realm="${realm}", error="invalid_token"` },
      );
    }
    next();
  };
}

/**
 * Middleware for a realm no token opens (a cloud started without an admin token): 401 (with
 * `WWW-Authenticate`) to every request, whatever it carries, with `detail` saying why.
 */
export function refuseEveryone(realm: string, detail: string): RequestHandler {
  return () => {
    throw new HttpProblem(
      401,
      "unauthorized",
      "Unauthorized",
      detail,
      {},
      {
        "www-authenticate": `Bearer realm="${realm}"`,
      },
    );
  };
}

/**
 * Middleware: 421 Misdirected Request for a request whose `Host` does not name this cloud
 * (http/host-check.ts says which do, and why: DNS rebinding). app.ts puts it before every route that answers
 * without a token; the API's routes have the token as their guard.
 */
import type { RequestHandler } from "express";
import { HttpProblem } from "../errors.ts";
import { isAllowedHost } from "../http/host-check.ts";

/** 421 unless the request's `Host` is an IP address or one of `allowed` (from `allowedHostNames`). */
export function onlyAllowedHosts(allowed: ReadonlySet<string>): RequestHandler {
  const names = [...allowed].join(", ");
  return (req, _res, next) => {
    const host = req.headers.host;
    if (!isAllowedHost(host, allowed)) {
      throw new HttpProblem(
        421,
        "misdirected-request",
        "Misdirected request",
        `cannot answer for host ${JSON.stringify(host)}: without a token this cloud answers only for IP addresses and ${names} (a web page must not read it through DNS rebinding; add a name with --allowed-hosts)`,
      );
    }
    next();
  };
}

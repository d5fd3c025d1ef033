/**
 * Which `Host` a server that answers without a token accepts: the defence against DNS rebinding. A web page
 * on a name its author controls (`evil.example`) re-points that name at 127.0.0.1, or at a pod's IP; the
 * browser, seeing one origin, then lets the page read what the server answers. Such a request always carries
 * the page's NAME in its `Host` header, so a `Host` is accepted when it is:
 * - an IP address (`127.0.0.1`, `10.1.2.3`, `[::1]`): a browser sends one only to the server at that address,
 *   which no rebinding can redirect; the kubelet's probes and a scraper that finds pods by IP send one;
 * - `localhost`;
 * - a name the server was given: its listen address's host, and names a person allows (a Service's name);
 * with any port (a port-forward, or a port published by compose, puts another port in it). A request with no
 * `Host` at all (HTTP/1.0) comes from no browser: accepted. Anything else is answered 421 Misdirected Request,
 * with nothing read. (webpack-dev-server's `allowedHosts: "auto"` and Vite's `server.allowedHosts` draw much
 * the same line; they also take names under `.localhost`, which this does not.)
 *
 * The mock cloud has the same few lines (mock-cloud/src/http/host-check.ts, shared there with the demo's
 * page), on purpose: the two are separate programs. The library must not import the mock cloud, and the mock
 * cloud, a stand-in for another party's API, does not depend on the operator's library (a lint rule in
 * eslint.config.js forbids the import). A duplicate finder lists the pair; that is expected, not a clean-up.
 */
import { isIP } from "node:net";

/** The names a server accepts in `Host` besides IP addresses, normalized (see {@link isAllowedHost}). */
export function allowedHostNames(names: Iterable<string>): Set<string> {
  const allowed = new Set(["localhost"]);
  for (const name of names) {
    const normal = normalize(name);
    if (normal !== "" && isIP(normal) === 0) allowed.add(normal); // every address is accepted anyway
  }
  return allowed;
}

/**
 * True when a request's `Host` header (`req.headers.host`) names this server: an IP address, or a name in
 * `allowed` (from {@link allowedHostNames}), with any port; or no header at all. False for anything else,
 * a malformed header included.
 */
export function isAllowedHost(host: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (host === undefined) return true;
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::\d{1,5})?$/.exec(host.trim());
  if (match === null) return false;
  const [, bracketed, name] = match;
  if (bracketed !== undefined) return isIP(bracketed) === 6;
  const normal = normalize(name ?? "");
  return isIP(normal) === 4 || allowed.has(normal);
}

/** Lowercase, without a root dot (`Localhost.` is `localhost`) or IPv6 brackets. */
function normalize(name: string): string {
  const lower = name.trim().toLowerCase().replace(/\.$/, "");
  return lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower;
}

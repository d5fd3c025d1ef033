/**
 * The https Agent of {@link KubeHttp}: node's, except for how it names its connection pools. Each KubeHttp
 * agent serves one API server with one TLS setup (its own options: one CA, client certificate and key; a
 * changed one gets a new agent), so its pools are named as an http Agent names them, by host and port. node's
 * https Agent appends the CA, certificate and key to the name as text: every Buffer turned into a new string
 * of several KiB, on every request, twice (when it is queued and again when its socket is freed). Measured
 * with `npm run bench -- --heap-prof` (issue 31): the largest single item the controller allocated while
 * converging 1,000 Shapes (docs/benchmarks.md, Reading).
 */
import http from "node:http";
import https from "node:https";

/** See the module comment. Not for requests that carry TLS options of their own: they would share a pool. */
export class OneTlsAgent extends https.Agent {
  override getName(options?: http.ClientRequestArgs): string {
    return http.Agent.prototype.getName.call(this, options);
  }
}

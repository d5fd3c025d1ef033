/**
 * API cost as the servers themselves count it: kube-apiserver's `apiserver_request_total` summed by verb and
 * resource (with the subresource: `PATCH shapes/status`), and the mock cloud's `cloud_http_requests_total`
 * by method and route (`GET /v1/shapes`). The controller's own counters are a second opinion; these are the
 * ground truth every request pays, whoever sent it.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { MetricsSnapshot } from "@shapes/stack";
import { type ClientTls, httpsGet } from "@shapes/envtest";

/**
 * Request counts keyed `VERB what`: for Kubernetes `VERB resource[/subresource]` (`POST shaperefs`,
 * `PATCH shapes/status`), for the cloud `METHOD route` (`GET /v1/shapes`, `PATCH /v1/shapes/:id`).
 */
export type RequestCounts = Record<string, number>;

/** The API server verbs that change something (what "writes" means in every table). */
export const WRITE_VERBS: ReadonlySet<string> = new Set([
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "DELETECOLLECTION",
  "APPLY",
]);

/** The resources the controller works with; requests for anything else are the API server's own business. */
export const SHAPES_RESOURCES: ReadonlySet<string> = new Set(["shapes", "shaperefs", "events"]);

/** The verb of a `VERB resource` key. */
export function verbOf(key: string): string {
  return key.slice(0, key.indexOf(" "));
}

/** The resource (without subresource) of a `VERB resource[/sub]` key. */
export function resourceOf(key: string): string {
  return key.slice(key.indexOf(" ") + 1).split("/")[0] ?? "";
}

/** Sums `apiserver_request_total` by verb and resource; non-resource requests (/metrics, /healthz) are left out. */
export function requestCountsOf(metricsText: string): RequestCounts {
  const counts: RequestCounts = {};
  for (const s of MetricsSnapshot.parse(metricsText).samples) {
    if (s.name !== "apiserver_request_total" || !s.labels.resource) continue;
    const sub = s.labels.subresource ? `/${s.labels.subresource}` : "";
    const key = `${s.labels.verb ?? "?"} ${s.labels.resource}${sub}`;
    counts[key] = (counts[key] ?? 0) + s.value;
  }
  return counts;
}

/** What changed from `before` to `after` (only keys that moved). */
export function diffCounts(before: RequestCounts, after: RequestCounts): RequestCounts {
  const diff: RequestCounts = {};
  for (const [key, value] of Object.entries(after)) {
    const delta = value - (before[key] ?? 0);
    if (delta !== 0) diff[key] = delta;
  }
  return diff;
}

/** `a - b`, key by key (to take the bench's own requests out of a diff); zeroes are dropped. */
export function subtractCounts(a: RequestCounts, b: RequestCounts): RequestCounts {
  const out: RequestCounts = {};
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const v = (a[key] ?? 0) - (b[key] ?? 0);
    if (v !== 0) out[key] = v;
  }
  return out;
}

/** The sum of the counts whose key passes `keep`. */
export function total(counts: RequestCounts, keep: (key: string) => boolean = () => true): number {
  return Object.entries(counts).reduce((sum, [key, n]) => (keep(key) ? sum + n : sum), 0);
}

/** Reads kube-apiserver's /metrics with an admin's client certificate. */
export class ApiServerMetrics {
  readonly #url: string;
  readonly #tls: ClientTls;

  constructor(kubeConfig: KubeConfig) {
    const cluster = kubeConfig.getCurrentCluster();
    const user = kubeConfig.getCurrentUser();
    if (!cluster?.caData || !user?.certData || !user.keyData) {
      throw new Error(
        "cannot read the API server's /metrics: the kubeconfig must embed its CA and client certificate",
      );
    }
    const pem = (b64: string) => Buffer.from(b64, "base64").toString("utf8");
    this.#url = `${cluster.server.replace(/\/+$/, "")}/metrics`;
    this.#tls = { caPem: pem(cluster.caData), certPem: pem(user.certData), keyPem: pem(user.keyData) };
  }

  /** The request counts now. */
  async requests(): Promise<RequestCounts> {
    const res = await httpsGet(this.#url, this.#tls, 30_000);
    if (res.status !== 200) throw new Error(`cannot read the API server's /metrics: HTTP ${res.status}`);
    return requestCountsOf(res.body);
  }
}

/** The cloud methods that change something. */
export const CLOUD_WRITE_METHODS: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Sums the mock cloud's `cloud_http_requests_total` by method and route template, for the API (`/v1/...`)
 * only: /metrics, /healthz and /admin are the bench's own reads. A watch is counted when its stream ends.
 */
export function cloudRequestCountsOf(metricsText: string): RequestCounts {
  const counts: RequestCounts = {};
  for (const s of MetricsSnapshot.parse(metricsText).samples) {
    if (s.name !== "cloud_http_requests_total" || !s.labels.route?.startsWith("/v1/")) continue;
    const key = `${s.labels.method ?? "?"} ${s.labels.route}`;
    counts[key] = (counts[key] ?? 0) + s.value;
  }
  return counts;
}

/**
 * The cloud's `GET /v1/shapes/by-name/:name` requests from its /metrics text: all of them, and those it
 * answered 404 (no shape of that name).
 */
export function byNameReadsOf(metricsText: string): ByNameReads {
  const reads: ByNameReads = { total: 0, notFound: 0 };
  for (const s of MetricsSnapshot.parse(metricsText).samples) {
    if (s.name !== "cloud_http_requests_total" || s.labels.route !== BY_NAME_ROUTE) continue;
    if (s.labels.method !== "GET") continue;
    reads.total += s.value;
    if (s.labels.status === "404") reads.notFound += s.value;
  }
  return reads;
}

/** The cloud's route template of a read by name. */
export const BY_NAME_ROUTE = "/v1/shapes/by-name/:name";

/** Counts of `GET /v1/shapes/by-name/:name`: every one, and those answered 404. */
export interface ByNameReads {
  total: number;
  notFound: number;
}

/** The cloud's by-name reads now (from its /metrics, no token needed). */
export async function cloudByNameReads(cloudUrl: string): Promise<ByNameReads> {
  const res = await fetch(`${cloudUrl}/metrics`);
  if (!res.ok) throw new Error(`cannot read the cloud's /metrics: HTTP ${res.status}`);
  return byNameReadsOf(await res.text());
}

/** Reads the mock cloud's request counts from its /metrics (no token needed). */
export async function cloudRequests(cloudUrl: string): Promise<RequestCounts> {
  const res = await fetch(`${cloudUrl}/metrics`);
  if (!res.ok) throw new Error(`cannot read the cloud's /metrics: HTTP ${res.status}`);
  return cloudRequestCountsOf(await res.text());
}

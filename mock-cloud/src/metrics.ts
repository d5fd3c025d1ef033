/**
 * Prometheus metrics of one app instance, in their OWN registry (never prom-client's global one), so that
 * several clouds in one process (tests) do not collide.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";

/** Where the gauges read their values when scraped. */
export interface MetricSources {
  /** Number of shapes stored. */
  shapes(): number;
  /** The cloud revision. */
  revision(): number;
  /** Number of open watch streams. */
  watchers(): number;
}

/** The cloud's metrics. */
export class CloudMetrics {
  /** The registry `/metrics` renders. */
  readonly registry = new Registry();
  readonly #requests: Counter<"route" | "method" | "status">;
  readonly #duration: Histogram<"route" | "method">;
  readonly #faults: Counter<"kind">;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    this.#requests = new Counter({
      name: "cloud_http_requests_total",
      help: "HTTP requests answered, by route template, method and status.",
      labelNames: ["route", "method", "status"],
      registers,
    });
    this.#duration = new Histogram({
      name: "cloud_http_request_duration_seconds",
      help: "Time to answer an HTTP request (a watch: the whole stream), by route template and method.",
      labelNames: ["route", "method"],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.#faults = new Counter({
      name: "cloud_injected_faults_total",
      help: "Faults injected by /admin/faults rules, by kind (error, throttle, outage).",
      labelNames: ["kind"],
      registers,
    });
    new Gauge({
      name: "cloud_shapes",
      help: "Shapes stored.",
      registers,
      collect() {
        this.set(sources.shapes());
      },
    });
    new Gauge({
      name: "cloud_revision",
      help: "The cloud-wide revision counter.",
      registers,
      collect() {
        this.set(sources.revision());
      },
    });
    new Gauge({
      name: "cloud_watchers",
      help: "Open watch streams.",
      registers,
      collect() {
        this.set(sources.watchers());
      },
    });
  }

  /** Records one answered request. `route` is the route template ("/v1/shapes/:id") or "unmatched". */
  observeRequest(route: string, method: string, status: number, seconds: number): void {
    this.#requests.inc({ route, method, status: String(status) });
    this.#duration.observe({ route, method }, seconds);
  }

  /** Records one injected fault. */
  observeFault(kind: "error" | "throttle" | "outage"): void {
    this.#faults.inc({ kind });
  }
}

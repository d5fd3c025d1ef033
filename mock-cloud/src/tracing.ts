/**
 * The mock cloud's tracing: OpenTelemetry, configured by the standard `OTEL_*` variables, exported with
 * OTLP/HTTP (JSON bodies), and only when an endpoint is configured: no endpoint, no provider, the API's
 * no-op tracer (no spans, no cost).
 *
 * The cloud has its own, not the operator library's (reconcile-kit/tracing): the two are separate programs,
 * and the cloud, a stand-in for another party's API, shares the wire with the controller, not its code. It
 * reads the same variables as the controller, so one `OTEL_EXPORTER_OTLP_ENDPOINT` traces both processes,
 * and its server spans join the controller's traces through the W3C `traceparent` header the controller
 * sends (middleware/trace.ts). The variables read (the rest of the spec's are not):
 *
 * - `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` is appended) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used
 *   as is): where spans go; unset or empty turns tracing off. `OTEL_EXPORTER_OTLP_HEADERS`,
 *   `OTEL_EXPORTER_OTLP_TIMEOUT` and their `_TRACES_` forms are read by the exporter itself.
 * - `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`: off, whatever the endpoint.
 * - `OTEL_SERVICE_NAME` (default `shapes-cloud`), `OTEL_RESOURCE_ATTRIBUTES`.
 * - `OTEL_TRACES_SAMPLER` (`always_on`, `always_off`, `traceidratio` and their `parentbased_` forms;
 *   default `parentbased_always_on`) with `OTEL_TRACES_SAMPLER_ARG` (the ratio).
 * - `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (defaults
 *   5000 ms, 2048 and 512 spans; a full queue drops spans, never blocks).
 *
 * This module is what the command line needs (the help, the endpoint); the SDK (tracing-sdk.ts) is loaded
 * by `startCloudTracing` only when an endpoint is set.
 */

/** The variables read here or by the exporter: for `--help` and for the checks of deployment files. */
export const CLOUD_TRACING_ENV = [
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_EXPORTER_OTLP_HEADERS",
  "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
  "OTEL_EXPORTER_OTLP_TIMEOUT",
  "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
  "OTEL_SDK_DISABLED",
  "OTEL_TRACES_EXPORTER",
  "OTEL_SERVICE_NAME",
  "OTEL_RESOURCE_ATTRIBUTES",
  "OTEL_TRACES_SAMPLER",
  "OTEL_TRACES_SAMPLER_ARG",
  "OTEL_BSP_SCHEDULE_DELAY",
  "OTEL_BSP_MAX_QUEUE_SIZE",
  "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
] as const;

/** The tracing paragraph of the cloud's `--help`: every variable of {@link CLOUD_TRACING_ENV}. */
export const CLOUD_TRACING_HELP = `Tracing (OpenTelemetry, off by default; spans go out with OTLP/HTTP, JSON bodies):
  where     OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 (/v1/traces is appended)
            or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it is); OTEL_EXPORTER_OTLP_HEADERS,
            OTEL_EXPORTER_OTLP_TRACES_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT
  off       OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, whatever the endpoint
  who       OTEL_SERVICE_NAME (default shapes-cloud), OTEL_RESOURCE_ATTRIBUTES
  sampling  OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG
  batching  OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE
`;

/** Tracing registered for the process: where spans go, and how to stop it at exit. */
export interface CloudTracing {
  /** The traces URL. */
  readonly endpoint: string;
  /** Exports what is pending, then unregisters the provider; call once, at exit. Never rejects. */
  shutdown(): Promise<void>;
}

/** The traces URL the `OTEL_*` variables in `env` name, or undefined when tracing is off. */
export function cloudTracesEndpoint(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "").split(",").map((name) => name.trim());
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true" || exporters.includes("none")) return undefined;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? `${base.replace(/\/+$/, "")}/v1/traces` : undefined;
}

/**
 * Called once by a process that serves the cloud, before the server starts: when `env` names an
 * endpoint, loads the SDK and registers a tracer provider exporting there (with the AsyncLocalStorage
 * context manager and the W3C propagator) and resolves to it; otherwise resolves to undefined and
 * registers nothing. Rejects with "cannot start tracing: ..." on a bad variable (the endpoint, the
 * sampler or its ratio, a batching number, a resource attribute).
 */
export async function startCloudTracing(
  env: NodeJS.ProcessEnv = process.env,
): Promise<CloudTracing | undefined> {
  const endpoint = cloudTracesEndpoint(env);
  if (endpoint === undefined) return undefined;
  if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol)) {
    throw new Error(
      `cannot start tracing: the OTLP traces endpoint ${JSON.stringify(endpoint)} is not an http(s) URL (from OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)`,
    );
  }
  const { exportSpans } = await import("./tracing-sdk.ts");
  return { endpoint, shutdown: exportSpans(endpoint, env) };
}

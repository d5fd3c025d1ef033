/**
 * Tracing for a controller process: OpenTelemetry, configured by the standard `OTEL_*` variables, exported
 * with OTLP/HTTP (JSON bodies) — ONLY when an endpoint is configured. (The mock cloud, another program, has
 * its own setup reading the same variables: mock-cloud/src/tracing.ts.)
 *
 * Why not the SDK's defaults: `@opentelemetry/sdk-node` exports to localhost:4318 when nothing is set and
 * brings gRPC, metrics and logs SDKs we do not use. Here, no endpoint means no provider at all: the API's
 * no-op tracer, no spans, no ids, no cost. The variables read (the rest of the spec's are not):
 *
 * - `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` is appended) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used
 *   as is): where to send spans; unset or empty turns tracing off. `OTEL_EXPORTER_OTLP_HEADERS`,
 *   `OTEL_EXPORTER_OTLP_TIMEOUT` and their `_TRACES_` forms are read by the exporter itself.
 * - `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`: off, whatever the endpoint.
 * - `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`: who the spans are from (the service name defaults to
 *   the one the process gives).
 * - `OTEL_TRACES_SAMPLER` (`always_on`, `always_off`, `traceidratio`, and the `parentbased_` forms; default
 *   `parentbased_always_on`) with `OTEL_TRACES_SAMPLER_ARG` (the ratio).
 * - `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`: the batching
 *   (defaults 5000 ms, 2048 spans, 512 spans; a full queue drops spans, never blocks).
 *
 * Context crosses processes as W3C `traceparent`, and flows through `await`s by AsyncLocalStorage.
 *
 * This module is the light half, what every process loads: the variables, the help text, the endpoint.
 * The SDK half (tracing-sdk.ts: the provider, the exporter, the resource, the context manager) is imported
 * by `startTracing` only when an endpoint is set, so a process with tracing off (the default) never loads
 * it; tracing-sdk.ts says what that saves.
 */
/** The variables read here (or by the exporter), for `--help` and for checks of deployment files. */
export const TRACING_ENV = [
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

/** A paragraph for a process's `--help`: how to turn tracing on, and every variable read (TRACING_ENV). */
export const TRACING_HELP = `Tracing (OpenTelemetry, off by default; spans go out with OTLP/HTTP, JSON bodies):
  where     OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 (/v1/traces is appended)
            or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it is); OTEL_EXPORTER_OTLP_HEADERS,
            OTEL_EXPORTER_OTLP_TRACES_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT
  off       OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, whatever the endpoint
  who       OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
  sampling  OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG
  batching  OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE
`;

/** A started tracing setup: flush and stop it at process exit. */
export interface Tracing {
  /** Where spans go (the traces URL). */
  readonly endpoint: string;
  /** Exports what is pending and stops; call once, at exit. Never rejects. */
  shutdown(): Promise<void>;
}

/** The traces URL the `OTEL_*` variables name, or undefined when tracing is off. */
export function tracesEndpoint(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  if (
    env.OTEL_TRACES_EXPORTER?.split(",")
      .map((s) => s.trim())
      .includes("none")
  )
    return undefined;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? `${base.replace(/\/+$/, "")}/v1/traces` : undefined;
}

/**
 * Called once, first thing in a process's main: when an endpoint is configured, imports the SDK
 * (tracing-sdk.ts), registers a tracer provider exporting there, the AsyncLocalStorage context manager and
 * the W3C propagator, and resolves to the setup; otherwise resolves to undefined, registers nothing and
 * loads no SDK module. Rejects with "cannot start tracing: ..." on a bad variable (the endpoint, a sampler
 * name or ratio, a delay).
 */
export async function startTracing(
  serviceName: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Tracing | undefined> {
  const endpoint = tracesEndpoint(env);
  if (endpoint === undefined) return undefined;
  if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol)) {
    throw new Error(
      `cannot start tracing: the OTLP traces endpoint ${JSON.stringify(endpoint)} is not an http(s) URL (from OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)`,
    );
  }
  const { startSdkTracing } = await import("./tracing-sdk.ts");
  return startSdkTracing(serviceName, endpoint, env);
}

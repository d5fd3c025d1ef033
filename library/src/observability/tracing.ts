/**
 * Tracing for the controller and the mock cloud: OpenTelemetry, configured by the standard `OTEL_*`
 * variables, exported with OTLP/HTTP (JSON bodies) — ONLY when an endpoint is configured.
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
 */
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from "@opentelemetry/sdk-trace";

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
 * Called once, first thing in a process's main: when an endpoint is configured, registers a tracer
 * provider exporting there, the AsyncLocalStorage context manager and the W3C propagator, and returns the
 * setup; otherwise returns undefined and registers nothing. Throws "cannot start tracing: ..." on a bad
 * variable (a sampler name or ratio, a delay).
 */
export function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  const endpoint = tracesEndpoint(env);
  if (endpoint === undefined) return undefined;
  if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol)) {
    throw new Error(
      `cannot start tracing: the OTLP traces endpoint ${JSON.stringify(endpoint)} is not an http(s) URL (from OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)`,
    );
  }
  const provider = new TracerProvider({
    resource: defaultResource().merge(
      resourceFromAttributes({
        ...resourceAttributes(env.OTEL_RESOURCE_ATTRIBUTES),
        "service.name": env.OTEL_SERVICE_NAME?.trim() || serviceName,
      }),
    ),
    sampler: samplerFrom(env),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: endpoint }),
        scheduledDelayMillis: positiveNumber(env, "OTEL_BSP_SCHEDULE_DELAY") ?? 5_000,
        maxQueueSize: positiveNumber(env, "OTEL_BSP_MAX_QUEUE_SIZE") ?? 2_048,
        maxExportBatchSize: positiveNumber(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE") ?? 512,
      }),
    ],
  });
  return { endpoint, shutdown: registerTracing(provider) };
}

/**
 * Registers `provider` for the whole process, with the AsyncLocalStorage context manager and the W3C
 * propagator, and returns what undoes it: flush and stop the provider (never rejects), then unregister all
 * three, so later code sees tracing off again. `startTracing` and the tests' in-memory setup use it.
 */
export function registerTracing(provider: TracerProvider): () => Promise<void> {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return async () => {
    await provider.shutdown().catch(() => undefined);
    trace.disable();
    context.disable();
    propagation.disable();
  };
}

/** `OTEL_RESOURCE_ATTRIBUTES`: `key=value` pairs, comma-separated, values percent-encoded (the spec's form). */
function resourceAttributes(text: string | undefined): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const pair of (text ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    try {
      attributes[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new Error(
        `cannot start tracing: OTEL_RESOURCE_ATTRIBUTES has a badly encoded value in ${JSON.stringify(pair)}`,
      );
    }
  }
  return attributes;
}

function samplerFrom(env: NodeJS.ProcessEnv): Sampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim() || "parentbased_always_on";
  const ratio = () => {
    const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim() || "1";
    const value = Number(arg);
    if (!(value >= 0 && value <= 1))
      throw new Error(
        `cannot start tracing: OTEL_TRACES_SAMPLER_ARG ${JSON.stringify(arg)} must be a ratio from 0 to 1`,
      );
    return new TraceIdRatioBasedSampler(value);
  };
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratio();
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratio() });
    default:
      throw new Error(
        `cannot start tracing: OTEL_TRACES_SAMPLER ${JSON.stringify(name)} is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio`,
      );
  }
}

function positiveNumber(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const text = env[name]?.trim();
  if (!text) return undefined;
  const value = Number(text);
  if (!(value > 0))
    throw new Error(`cannot start tracing: ${name} ${JSON.stringify(text)} must be a positive number`);
  return value;
}

/**
 * The SDK half of tracing (tracing.ts is the light half, and the `reconcile-kit/tracing` entry point): the
 * tracer provider with its sampler, batching and OTLP/HTTP exporter, the resource, the AsyncLocalStorage
 * context manager and the W3C propagator. `startTracing` imports this module (`await import`) only when an
 * OTLP endpoint is set.
 *
 * Why lazily: these packages (@opentelemetry/sdk-trace, sdk-metrics which the OTLP transformer pulls in,
 * exporter-trace-otlp-http, otlp-exporter-base, otlp-transformer, resources, semantic-conventions, core,
 * context-async-hooks) were the largest group a controller with tracing off still loaded. Measured on the
 * Shapes controller built to JS, ready with no Shapes, on the lean client, against the real API server
 * and the mock cloud (2026-11-27, node 24, 5 runs): 517 modules resolved, 293 of them OpenTelemetry's,
 * idle RSS mostly 95–96 MB with this module loaded at startup; 325 modules, 102 OpenTelemetry's (the API
 * only), 92–93 MB with it loaded lazily (controller/README.md has the table and the command).
 * `@opentelemetry/api` stays loaded either way: the reconcile scope (reconcile-scope.ts) and the cloud
 * client call it, and with no provider registered it is the no-op tracer.
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
import type { Tracing } from "./tracing.ts";

/**
 * Registers a tracer provider exporting to `endpoint` (an http(s) URL, checked by `startTracing`) as
 * the `OTEL_*` variables in `env` configure it, with `registerTracing`. Throws "cannot start tracing: ..."
 * on a bad variable (a sampler name or ratio, a delay, a resource attribute).
 */
export function startSdkTracing(serviceName: string, endpoint: string, env: NodeJS.ProcessEnv): Tracing {
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
 * three, so later code sees tracing off again. `startSdkTracing` and the tests' in-memory setup
 * (testing/tracing.ts) use it.
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

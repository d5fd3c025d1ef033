/**
 * The SDK side of the cloud's tracing (tracing.ts says what is read and why the cloud has its own): the
 * tracer provider with its sampler, batching and OTLP/HTTP exporter, its resource, and the process-wide
 * registration (the AsyncLocalStorage context manager, so a request's span flows through its `await`s, and
 * the W3C propagator). `startCloudTracing` imports this module only when an endpoint is set.
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
import { CLOUD_SERVICE_NAME } from "./tracer.ts";

/**
 * Registers a provider that exports to `endpoint` (an http(s) URL) as the `OTEL_*` variables in `env`
 * say, and returns its shutdown (see {@link registerProvider}). Throws "cannot start tracing: ..." on a bad
 * variable.
 */
export function exportSpans(endpoint: string, env: NodeJS.ProcessEnv): () => Promise<void> {
  const batching = (name: string, fallback: number): number => {
    const text = env[name]?.trim();
    if (!text) return fallback;
    if (!(Number(text) > 0)) fail(`${name} ${JSON.stringify(text)} must be a positive number`);
    return Number(text);
  };
  const service = env.OTEL_SERVICE_NAME?.trim() || CLOUD_SERVICE_NAME;
  const attributes = { ...parseAttributes(env.OTEL_RESOURCE_ATTRIBUTES ?? ""), "service.name": service };
  return registerProvider(
    new TracerProvider({
      resource: defaultResource().merge(resourceFromAttributes(attributes)),
      sampler: sampler(
        env.OTEL_TRACES_SAMPLER?.trim() || "parentbased_always_on",
        env.OTEL_TRACES_SAMPLER_ARG,
      ),
      spanProcessors: [
        new BatchSpanProcessor({
          exporter: new OTLPTraceExporter({ url: endpoint }),
          scheduledDelayMillis: batching("OTEL_BSP_SCHEDULE_DELAY", 5_000),
          maxQueueSize: batching("OTEL_BSP_MAX_QUEUE_SIZE", 2_048),
          maxExportBatchSize: batching("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512),
        }),
      ],
    }),
  );
}

/**
 * Makes `provider` the process's, with the AsyncLocalStorage context manager and the W3C propagator, and
 * returns what undoes it: flush and shut the provider down (never rejects), then unregister all three, so
 * later code sees tracing off. The tests' in-memory tracing (test-support.ts) registers through it too.
 */
export function registerProvider(provider: TracerProvider): () => Promise<void> {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return async () => {
    await provider.shutdown().catch(() => undefined);
    for (const api of [trace, context, propagation]) api.disable();
  };
}

function fail(what: string): never {
  throw new Error(`cannot start tracing: ${what}`);
}

/** `OTEL_RESOURCE_ATTRIBUTES`: comma-separated `key=value` pairs, each value percent-encoded. */
function parseAttributes(text: string): Record<string, string> {
  const pairs = text
    .split(",")
    .map((pair) => [pair, pair.indexOf("=")] as const)
    .filter(([, at]) => at > 0);
  return Object.fromEntries(
    pairs.map(([pair, at]) => {
      try {
        return [pair.slice(0, at).trim(), decodeURIComponent(pair.slice(at + 1).trim())];
      } catch {
        return fail(`OTEL_RESOURCE_ATTRIBUTES has a badly encoded value in ${JSON.stringify(pair)}`);
      }
    }),
  );
}

/** The roots `OTEL_TRACES_SAMPLER` names; each has a `parentbased_` form too. */
const ROOT_SAMPLERS: Record<string, (ratio: () => number) => Sampler> = {
  always_on: () => new AlwaysOnSampler(),
  always_off: () => new AlwaysOffSampler(),
  traceidratio: (ratio) => new TraceIdRatioBasedSampler(ratio()),
};

function sampler(name: string, arg: string | undefined): Sampler {
  const ratio = () => {
    const text = arg?.trim() || "1";
    const value = Number(text);
    if (!(value >= 0 && value <= 1))
      fail(`OTEL_TRACES_SAMPLER_ARG ${JSON.stringify(text)} must be a ratio from 0 to 1`);
    return value;
  };
  const parentBased = name.startsWith("parentbased_");
  const root = ROOT_SAMPLERS[parentBased ? name.slice("parentbased_".length) : name];
  if (root === undefined) {
    const names = Object.keys(ROOT_SAMPLERS).flatMap((n) => [n, `parentbased_${n}`]);
    return fail(`OTEL_TRACES_SAMPLER ${JSON.stringify(name)} is not one of ${names.join(", ")}`);
  }
  return parentBased ? new ParentBasedSampler({ root: root(ratio) }) : root(ratio);
}

/**
 * Tracing for tests: a real OpenTelemetry SDK provider that keeps every finished span in memory, registered
 * globally (with the AsyncLocalStorage context manager and the W3C propagator, as telemetry/tracing.ts does
 * in a process) until `stop()`.
 */
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from "@opentelemetry/sdk-trace";

/** A registered in-memory tracing setup. */
export interface InMemoryTracing {
  /** Every span finished so far, oldest first. */
  spans(): ReadableSpan[];
  /** The finished spans named `name`. */
  named(name: string): ReadableSpan[];
  /** Forgets the spans finished so far. */
  reset(): void;
  /** Unregisters everything: later code sees tracing off again. */
  stop(): Promise<void>;
}

/** Registers an in-memory provider globally; call `stop()` in `afterAll`/`afterEach`. */
export function startInMemoryTracing(): InMemoryTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    spans: () => exporter.getFinishedSpans(),
    named: (name) => exporter.getFinishedSpans().filter((s) => s.name === name),
    reset: () => exporter.reset(),
    stop: async () => {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

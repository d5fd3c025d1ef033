/**
 * Tracing for tests: a real OpenTelemetry SDK provider that keeps every finished span in memory, registered
 * for the whole process as `startTracing` registers one (tracing-sdk.ts: `registerTracing`), until `stop()`.
 */
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from "@opentelemetry/sdk-trace";
import { registerTracing } from "../observability/tracing-sdk.ts";

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

/** Registers an in-memory provider for the process; call `stop()` in `afterAll`/`afterEach`. */
export function startInMemoryTracing(): InMemoryTracing {
  const exporter = new InMemorySpanExporter();
  const stop = registerTracing(
    new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }),
  );
  return {
    spans: () => exporter.getFinishedSpans(),
    named: (name) => exporter.getFinishedSpans().filter((s) => s.name === name),
    reset: () => exporter.reset(),
    stop,
  };
}

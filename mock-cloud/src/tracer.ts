/**
 * The mock cloud's OpenTelemetry tracer. Spans go to the GLOBAL tracer provider: the one
 * `startCloudTracing` (tracing.ts) registers in the cloud's process entry (cli.ts) when an OTLP endpoint is
 * configured, an in-memory one in tests, and otherwise the API's no-op tracer (no spans, no cost). Nothing
 * here registers anything.
 */
import { trace, type Tracer } from "@opentelemetry/api";

/** The cloud's service name, and the name of its tracer. */
export const CLOUD_SERVICE_NAME = "shapes-cloud";

/**
 * The cloud's tracer. Asked for at each use rather than kept, so that a provider registered after this
 * module loaded (a test's) is the one used.
 */
export function cloudTracer(): Tracer {
  return trace.getTracer(CLOUD_SERVICE_NAME);
}

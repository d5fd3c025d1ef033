import { trace } from "@opentelemetry/api";
import { describe, expect, it } from "vitest";
import { startOtlpReceiver } from "@shapes/envtest";
import { TRACING_ENV, TRACING_HELP, startTracing, tracesEndpoint } from "./tracing.ts";

describe("tracesEndpoint: tracing is on only when an endpoint is configured", () => {
  it.each<{ reason: string; env: NodeJS.ProcessEnv; want: string | undefined }>([
    { reason: "nothing set: off (the SDK's localhost default is NOT used)", env: {}, want: undefined },
    {
      reason: "an empty endpoint (compose's ${VAR:-}) is off",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: " " },
      want: undefined,
    },
    {
      reason: "the base endpoint gets /v1/traces, without a double slash",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" },
      want: "http://collector:4318/v1/traces",
    },
    {
      reason: "the traces endpoint is used as it is, and wins",
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b/traces",
      },
      want: "http://b/traces",
    },
    {
      reason: "OTEL_SDK_DISABLED=true turns it off whatever the endpoint",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_SDK_DISABLED: "TRUE" },
      want: undefined,
    },
    {
      reason: "OTEL_TRACES_EXPORTER=none turns it off too",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_TRACES_EXPORTER: "none" },
      want: undefined,
    },
  ])("$reason", ({ env, want }) => {
    expect(tracesEndpoint(env)).toBe(want);
  });
});

describe("startTracing", () => {
  it("registers nothing when tracing is off: spans stay non-recording", async () => {
    expect(await startTracing("test", {})).toBeUndefined();
    expect(trace.getTracer("t").startSpan("x").isRecording()).toBe(false);
  });

  it.each([
    {
      reason: "an unknown sampler",
      env: { OTEL_TRACES_SAMPLER: "sometimes" },
      want: /OTEL_TRACES_SAMPLER "sometimes"/,
    },
    {
      reason: "a ratio out of range",
      env: { OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" },
      want: /OTEL_TRACES_SAMPLER_ARG "2" must be a ratio from 0 to 1/,
    },
    {
      reason: "a delay that is not a number",
      env: { OTEL_BSP_SCHEDULE_DELAY: "soon" },
      want: /OTEL_BSP_SCHEDULE_DELAY "soon"/,
    },
    {
      reason: "an endpoint that is not a URL (YAML's null, written out)",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "null" },
      want: /endpoint "null\/v1\/traces" is not an http\(s\) URL/,
    },
  ])("refuses bad input with a clear message: $reason", async ({ env, want }) => {
    const started = startTracing("test", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", ...env });
    await expect(started).rejects.toThrow(/^cannot start tracing: /);
    await expect(started).rejects.toThrow(want);
  });

  it("exports real spans over OTLP/HTTP to the endpoint, named after the service, then unregisters", async () => {
    const receiver = await startOtlpReceiver();
    try {
      const tracing = await startTracing("test-service", {
        ...receiver.env,
        OTEL_RESOURCE_ATTRIBUTES: "team=shapes",
      });
      expect(tracing?.endpoint).toBe(`${receiver.url}/v1/traces`);
      const span = trace.getTracer("t").startSpan("hello", { attributes: { answer: 42 } });
      const { traceId } = span.spanContext();
      span.end();
      await tracing?.shutdown(); // flushes
      const [got] = await receiver.waitFor((s) => s.name === "hello", { timeoutMs: 30_000 });
      expect(got).toMatchObject({ traceId, service: "test-service", attributes: { answer: 42 } });
      expect(got?.resource.team).toBe("shapes");
      expect(trace.getTracer("t").startSpan("after").isRecording()).toBe(false);
    } finally {
      await receiver.close();
    }
  });
});

describe("TRACING_HELP", () => {
  it.each(TRACING_ENV.map((name) => ({ name })))("names $name, which tracing reads", ({ name }) => {
    expect(TRACING_HELP).toMatch(new RegExp(`\\b${name}\\b`));
  });

  it("fits a terminal: no line longer than 110 characters", () => {
    for (const line of TRACING_HELP.split("\n")) expect(line.length, line).toBeLessThanOrEqual(110);
  });
});

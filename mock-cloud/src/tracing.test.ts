/**
 * The cloud's own tracing (tracing.ts, tracing-sdk.ts): on only with an endpoint, a bad variable refused
 * with the message the CLI prints before exiting 2, and with an endpoint, a request's server span exported
 * over OTLP/HTTP as `shapes-cloud`, in the trace of the caller's `traceparent`.
 */
import { trace } from "@opentelemetry/api";
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { startOtlpReceiver } from "@shapes/envtest";
import { startTestCloud, TOKEN } from "./test-support.ts";
import { CLOUD_TRACING_ENV, CLOUD_TRACING_HELP, cloudTracesEndpoint, startCloudTracing } from "./tracing.ts";

describe("cloudTracesEndpoint", () => {
  it.each<{ reason: string; env: NodeJS.ProcessEnv; want: string | undefined }>([
    { reason: "nothing set: off, no localhost default", env: {}, want: undefined },
    {
      reason: "a blank endpoint (compose's ${VAR:-}): off",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "" },
      want: undefined,
    },
    {
      reason: "the base endpoint gets /v1/traces",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318//" },
      want: "http://collector:4318/v1/traces",
    },
    {
      reason: "the traces endpoint wins, as it is",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b/t" },
      want: "http://b/t",
    },
    {
      reason: "OTEL_SDK_DISABLED=true: off whatever the endpoint",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_SDK_DISABLED: "true" },
      want: undefined,
    },
    {
      reason: "none among the exporters: off",
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_TRACES_EXPORTER: "otlp, none" },
      want: undefined,
    },
  ])("$reason", ({ env, want }) => {
    expect(cloudTracesEndpoint(env)).toBe(want);
  });
});

describe("startCloudTracing", () => {
  it("registers nothing without an endpoint", async () => {
    expect(await startCloudTracing({})).toBeUndefined();
    expect(trace.getTracer("t").startSpan("x").isRecording()).toBe(false);
  });

  it.each([
    {
      reason: "a sampler it does not know",
      env: { OTEL_TRACES_SAMPLER: "often" },
      want: /OTEL_TRACES_SAMPLER "often"/,
    },
    {
      reason: "a ratio above 1",
      env: { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.5" },
      want: /OTEL_TRACES_SAMPLER_ARG "1.5"/,
    },
    {
      reason: "a batch size of 0",
      env: { OTEL_BSP_MAX_QUEUE_SIZE: "0" },
      want: /OTEL_BSP_MAX_QUEUE_SIZE "0"/,
    },
    {
      reason: "a badly encoded resource attribute",
      env: { OTEL_RESOURCE_ATTRIBUTES: "team=%zz" },
      want: /OTEL_RESOURCE_ATTRIBUTES has a badly encoded value/,
    },
    {
      reason: "an endpoint that is not an http(s) URL",
      env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "collector:4318" },
      want: /"collector:4318" is not an http\(s\) URL/,
    },
  ])("refuses $reason with a message the CLI prints", async ({ env, want }) => {
    const started = startCloudTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", ...env });
    await expect(started).rejects.toThrow(/^cannot start tracing: /);
    await expect(started).rejects.toThrow(want);
  });

  it("exports a request's server span as shapes-cloud, in the caller's trace, then unregisters", async () => {
    const receiver = await startOtlpReceiver();
    const t = await startTestCloud();
    try {
      const tracing = await startCloudTracing({ ...receiver.env, OTEL_RESOURCE_ATTRIBUTES: "team=shapes" });
      expect(tracing?.endpoint).toBe(`${receiver.url}/v1/traces`);
      const traceId = randomBytes(16).toString("hex");
      const res = await fetch(`${t.url}/v1/shapes`, {
        headers: {
          authorization: `Bearer ${TOKEN}`,
          traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01`,
        },
      });
      expect(res.status).toBe(200);
      await tracing?.shutdown(); // flushes
      const [span] = await receiver.waitFor((s) => s.traceId === traceId && s.name === "GET /v1/shapes", {
        timeoutMs: 30_000,
      });
      expect(span).toMatchObject({ service: "shapes-cloud", resource: { team: "shapes" } });
      expect(trace.getTracer("t").startSpan("after").isRecording()).toBe(false);
    } finally {
      await t.close();
      await receiver.close();
    }
  });
});

describe("CLOUD_TRACING_HELP", () => {
  it.each(CLOUD_TRACING_ENV.map((name) => ({ name })))("names $name", ({ name }) => {
    expect(CLOUD_TRACING_HELP).toMatch(new RegExp(`\\b${name}\\b`));
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import request from "supertest";
import { shapeBody, startTestCloud, type TestCloud } from "../test-support.ts";

let a: TestCloud;
let b: TestCloud;
beforeAll(async () => {
  [a, b] = await Promise.all([startTestCloud(), startTestCloud()]);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
});

/** The value of one sample line of the Prometheus text, or undefined. */
function sample(text: string, line: string): number | undefined {
  const found = text.split("\n").find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe("GET /healthz", () => {
  it("answers without a token with the revision and the shape count", async () => {
    const before = (await request(a.url).get("/healthz")).body;
    expect(before).toEqual({ status: "ok", revision: expect.any(Number), shapes: expect.any(Number) });
    await a.create(shapeBody("health-1"));
    const after = await request(a.url).get("/healthz");
    expect(after.status).toBe(200);
    expect(after.body).toEqual({ status: "ok", revision: before.revision + 1, shapes: before.shapes + 1 });
  });
});

describe("GET /metrics", () => {
  it("counts requests by route template, method and status, times them, and gauges the shapes", async () => {
    const s = await a.create(shapeBody("metric-1"));
    await a.api("get", `/v1/shapes/${s.id}`).expect(200);
    await a.api("get", "/v1/shapes/shp_missing").expect(404);
    await a.api("get", "/no/such/path/12345").expect(404);
    const res = await request(a.url).get("/metrics");
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    const text = res.text;
    expect(
      sample(text, 'cloud_http_requests_total{route="/v1/shapes",method="POST",status="201"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'cloud_http_requests_total{route="/v1/shapes/:id",method="GET",status="200"}')).toBe(
      1,
    );
    expect(sample(text, 'cloud_http_requests_total{route="/v1/shapes/:id",method="GET",status="404"}')).toBe(
      1,
    );
    expect(sample(text, 'cloud_http_requests_total{route="unmatched",method="GET",status="404"}')).toBe(1);
    expect(text).not.toContain("12345"); // raw paths never become labels
    expect(
      sample(text, 'cloud_http_request_duration_seconds_count{route="/v1/shapes/:id",method="GET"}'),
    ).toBe(2);
    expect(text).toContain(
      'cloud_http_request_duration_seconds_bucket{le="0.005",route="/v1/shapes/:id",method="GET"}',
    );
    const health = (await request(a.url).get("/healthz")).body;
    expect(sample(text, "cloud_shapes")).toBe(health.shapes);
    expect(sample(text, "cloud_revision")).toBe(health.revision);
    expect(sample(text, "cloud_watchers")).toBe(0);
  });

  it("keeps each app's metrics in its own registry", async () => {
    for (const name of ["b-1", "b-2", "b-3"]) await b.create(shapeBody(name));
    const ta = (await request(a.url).get("/metrics")).text;
    const tb = (await request(b.url).get("/metrics")).text;
    expect(sample(tb, 'cloud_http_requests_total{route="/v1/shapes",method="POST",status="201"}')).toBe(3);
    expect(sample(tb, "cloud_shapes")).toBe(3);
    expect(sample(ta, "cloud_shapes")).toBe(2); // health-1 and metric-1
  });
});

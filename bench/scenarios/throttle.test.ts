import { describe, expect, it } from "vitest";
import type { RequestCounts } from "../requests.ts";
import { COLORS } from "../workload.ts";
import { apiCalls, configuredCloudQps, otherColor, stormMsOf } from "./throttle.ts";

describe("configuredCloudQps", () => {
  it.each([
    { reason: "no flag: the controller's default", flags: [], want: 100 },
    { reason: "the ablation's --cloud-qps=0", flags: ["--cloud-qps=0"], want: 0 },
    { reason: "a flag and its value apart", flags: ["--workers=1", "--cloud-qps", "5"], want: 5 },
    {
      reason: "the last one wins, as on the command line",
      flags: ["--cloud-qps=5", "--cloud-qps=7.5"],
      want: 7.5,
    },
    { reason: "other flags leave the default", flags: ["--cloud-burst=3", "--workers=4"], want: 100 },
  ])("$reason", ({ flags, want }) => {
    expect(configuredCloudQps(flags)).toBe(want);
  });
});

describe("apiCalls", () => {
  it.each<{ reason: string; counts: RequestCounts; want: number }>([
    {
      reason: "counts every API route",
      counts: { "GET /v1/shapes": 2, "PATCH /v1/shapes/:id": 30, "POST /v1/shapes": 1 },
      want: 33,
    },
    {
      reason: "leaves the change feed out (one long request, not gated by the limiter)",
      counts: { "GET /v1/watch": 3, "PATCH /v1/shapes/:id": 4 },
      want: 4,
    },
    { reason: "nothing, nothing", counts: {}, want: 0 },
  ])("$reason", ({ counts, want }) => {
    expect(apiCalls(counts)).toBe(want);
  });
});

describe("otherColor", () => {
  it.each(COLORS.map((color) => ({ reason: `${color} becomes another`, color })))("$reason", ({ color }) => {
    const other = otherColor(color);
    expect(other).not.toBe(color);
    expect(COLORS).toContain(other);
    expect(otherColor(color)).toBe(other);
  });

  it("an unknown color becomes one of the palette", () => {
    expect(COLORS).toContain(otherColor("ultraviolet"));
  });
});

describe("stormMsOf", () => {
  it.each([
    { reason: "a smoke run stays short", smoke: true, want: 3_000 },
    { reason: "a real run spans several Retry-After rounds", smoke: false, want: 10_000 },
  ])("$reason", ({ smoke, want }) => {
    expect(stormMsOf(smoke)).toBe(want);
  });
});

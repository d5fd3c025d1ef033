import { describe, expect, it } from "vitest";
import { compilePath, FaultStore } from "./faults.ts";

describe("compilePath", () => {
  const cases: { reason: string; template: string | undefined; path: string; match: boolean }[] = [
    { reason: "no template matches anything", template: undefined, path: "/v1/watch", match: true },
    { reason: "exact path", template: "/v1/shapes", path: "/v1/shapes", match: true },
    {
      reason: "exact path does not match a longer one",
      template: "/v1/shapes",
      path: "/v1/shapes/x",
      match: false,
    },
    {
      reason: ":param matches one segment",
      template: "/v1/shapes/:id",
      path: "/v1/shapes/shp_1",
      match: true,
    },
    {
      reason: ":param does not match an empty segment",
      template: "/v1/shapes/:id",
      path: "/v1/shapes/",
      match: false,
    },
    {
      reason: ":param does not match two segments",
      template: "/v1/shapes/:id",
      path: "/v1/shapes/a/b",
      match: false,
    },
    { reason: "prefix with *", template: "/v1/*", path: "/v1/shapes/a", match: true },
    { reason: "prefix with * needs the prefix", template: "/v1/*", path: "/v2/shapes", match: false },
  ];
  it.each(cases)("$reason", ({ template, path, match }) => {
    expect(compilePath(template)(path)).toBe(match);
  });
});

describe("FaultStore.decide", () => {
  it("is a well-behaved cloud without rules", () => {
    expect(new FaultStore(() => 0).decide("GET", "/v1/shapes")).toEqual({ kind: "none", latencyMs: 0 });
  });

  it("lets an outage win, with the largest latency of the matching rules", () => {
    const store = new FaultStore(() => 0);
    store.set({
      rules: [{ errorRate: 1, latencyMs: 10 }, { outage: true, latencyMs: 30 }, { throttleRate: 1 }],
    });
    expect(store.decide("GET", "/v1/shapes")).toEqual({
      kind: "outage",
      latencyMs: 30,
      retryAfterSeconds: undefined,
    });
  });

  it("rolls each rate against the random source", () => {
    let roll = 0.5;
    const store = new FaultStore(() => roll);
    store.set({ rules: [{ throttleRate: 0.4, retryAfterSeconds: 3 }, { errorRate: 0.6 }] });
    expect(store.decide("POST", "/v1/shapes").kind).toBe("error"); // 0.5 >= 0.4, 0.5 < 0.6
    roll = 0.3;
    expect(store.decide("POST", "/v1/shapes")).toEqual({
      kind: "throttle",
      latencyMs: 0,
      retryAfterSeconds: 3,
    });
    roll = 0.7;
    expect(store.decide("POST", "/v1/shapes").kind).toBe("none");
  });

  it("applies only rules whose method and path match; the lag is the largest match", () => {
    const store = new FaultStore(() => 0);
    store.set({
      rules: [
        { method: "GET", path: "/v1/shapes", listLagMs: 100 },
        { path: "/v1/*", listLagMs: 50 },
        { method: "DELETE", errorRate: 1 },
      ],
    });
    expect(store.lagMs("GET", "/v1/shapes")).toBe(100);
    expect(store.lagMs("GET", "/v1/watch")).toBe(50);
    expect(store.decide("GET", "/v1/shapes/x").kind).toBe("none");
    expect(store.decide("DELETE", "/v1/shapes/x").kind).toBe("error");
  });

  it("tells listeners when the rules change", () => {
    const store = new FaultStore();
    let calls = 0;
    const off = store.onChange(() => calls++);
    store.set({ rules: [{ outage: true }] });
    store.clear();
    off();
    store.clear();
    expect(calls).toBe(2);
  });
});

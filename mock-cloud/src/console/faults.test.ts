/**
 * The console's fault switches (static/faults.js): what they show for a set of rules, and that turning
 * one changes only its own effect, keeping the rules other tools set.
 */
import { describe, expect, it } from "vitest";
import { FaultConfig } from "../schemas.ts";
import { switchesOf, withSwitch, type Switches, type SwitchName } from "./static/faults.js";

describe("switchesOf", () => {
  const cases: { reason: string; config: FaultConfig; expected: Switches }[] = [
    {
      reason: "no rules: everything off",
      config: { rules: [] },
      expected: { outage: false, latencyMs: undefined, throttleRate: undefined },
    },
    {
      reason: "outage: false is no outage; effects the console has no switch for show nothing",
      config: { rules: [{ outage: false, errorRate: 0.5, listLagMs: 100 }] },
      expected: { outage: false, latencyMs: undefined, throttleRate: undefined },
    },
    {
      reason: "a scoped rule counts; the largest latency and rate win (as in the cloud)",
      config: {
        rules: [
          { method: "DELETE", outage: true },
          { latencyMs: 100 },
          { path: "/v1/*", latencyMs: 300, throttleRate: 0.2 },
          { throttleRate: 0.1 },
        ],
      },
      expected: { outage: true, latencyMs: 300, throttleRate: 0.2 },
    },
  ];
  it.each(cases)("$reason", ({ config, expected }) => {
    expect(switchesOf(config)).toEqual(expected);
  });
});

describe("withSwitch", () => {
  const cases: {
    reason: string;
    config: FaultConfig;
    name: SwitchName;
    value: number | true | undefined;
    expected: FaultConfig;
  }[] = [
    {
      reason: "on, from nothing: one cloud-wide rule",
      config: { rules: [] },
      name: "outage",
      value: true,
      expected: { rules: [{ outage: true }] },
    },
    {
      reason: "on again with another value: the old value is replaced, not added to",
      config: { rules: [{ latencyMs: 100 }] },
      name: "latency",
      value: 2000,
      expected: { rules: [{ latencyMs: 2000 }] },
    },
    {
      reason: "off: the effect leaves every rule; a rule with nothing left is dropped",
      config: { rules: [{ outage: true }, { method: "POST", outage: true, retryAfterSeconds: 5 }] },
      name: "outage",
      value: undefined,
      expected: { rules: [] },
    },
    {
      reason: "other tools' rules and other effects stay (even in the same rule)",
      config: {
        rules: [
          { method: "PATCH", path: "/v1/shapes/:id", errorRate: 0.3 },
          { path: "/v1/*", throttleRate: 0.1, retryAfterSeconds: 2, listLagMs: 3000 },
        ],
      },
      name: "throttling",
      value: undefined,
      expected: {
        rules: [
          { method: "PATCH", path: "/v1/shapes/:id", errorRate: 0.3 },
          { path: "/v1/*", retryAfterSeconds: 2, listLagMs: 3000 },
        ],
      },
    },
    {
      reason: "another switch's effect is untouched",
      config: { rules: [{ outage: true }, { latencyMs: 50 }] },
      name: "throttling",
      value: 0.5,
      expected: { rules: [{ outage: true }, { latencyMs: 50 }, { throttleRate: 0.5 }] },
    },
  ];
  it.each(cases)("$reason", ({ config, name, value, expected }) => {
    const before = structuredClone(config);
    const next = withSwitch(config, name, value);
    expect(next).toEqual(expected);
    expect(config).toEqual(before); // the input is not modified
    expect(FaultConfig.safeParse(next).success).toBe(true); // the cloud accepts what the switch sends
    expect(switchesOf(next)).toMatchObject(
      name === "outage"
        ? { outage: value === true }
        : name === "latency"
          ? { latencyMs: value }
          : { throttleRate: value },
    );
  });
});

/**
 * What the trials ask the cloud for: the plan's specs and changes, kept within the cloud's size limit per
 * type, so every Shape of a trial is one the cloud accepts and can converge.
 */
import { describe, expect, it } from "vitest";
import type { ShapeSpec } from "@shapes/controller";
import { maxSizeOf } from "@shapes/mock-cloud";
import type { SpecChange } from "./plan.ts";
import { accepted, changed } from "./workload.ts";

describe("the specs a trial asks for", () => {
  it.each<{ reason: string; spec: ShapeSpec; change?: SpecChange; want: ShapeSpec }>([
    {
      reason: "a triangle above the cloud's limit asks for the limit",
      spec: { type: "triangle", color: "red", size: 800 },
      want: { type: "triangle", color: "red", size: maxSizeOf("triangle") },
    },
    {
      reason: "a square keeps its size: no limit of its own below the schema's",
      spec: { type: "square", color: "red", size: 800 },
      want: { type: "square", color: "red", size: 800 },
    },
    {
      reason: "no size: nothing to keep within",
      spec: { type: "triangle", color: "blue" },
      want: { type: "triangle", color: "blue" },
    },
    {
      reason: "a change of type that would make a square of 800 a triangle: the limit",
      spec: { type: "square", color: "red", size: 800 },
      change: { field: "type", type: "triangle" },
      want: { type: "triangle", color: "red", size: maxSizeOf("triangle") },
    },
    {
      reason: "a change of size above a triangle's limit: the limit",
      spec: { type: "triangle", color: "red", size: 3 },
      change: { field: "size", size: 999 },
      want: { type: "triangle", color: "red", size: maxSizeOf("triangle") },
    },
    {
      reason: "a change the rule is not about passes as it is",
      spec: { type: "triangle", color: "red", size: 3 },
      change: { field: "color", color: "blue" },
      want: { type: "triangle", color: "blue", size: 3 },
    },
  ])("$reason", ({ spec, change, want }) => {
    expect(change ? changed(spec, change) : accepted(spec)).toEqual(want);
  });
});

/**
 * The workload's specs: deterministic, and every one a Shape the cloud accepts (within its size limit for
 * the type), so a run measures convergence, never a spec the cloud refuses for good.
 */
import { describe, expect, it } from "vitest";
import { maxSizeOf } from "@shapes/mock-cloud";
import { shapeSpec } from "./workload.ts";

describe("shapeSpec", () => {
  const specs = Array.from({ length: 3_000 }, (_, i) => shapeSpec(i));

  it("asks only for what the cloud accepts: each size within its type's limit", () => {
    for (const [i, spec] of specs.entries())
      expect(spec.size ?? 0, `shape ${i}: ${JSON.stringify(spec)}`).toBeLessThanOrEqual(
        maxSizeOf(spec.type ?? ""),
      );
    // Triangles with a size are there, and their sizes spread up to the limit.
    const triangles = specs.filter((s) => s.type === "triangle" && s.size !== undefined);
    expect(triangles.length).toBeGreaterThan(100);
    expect(Math.max(...triangles.map((s) => s.size ?? 0))).toBeGreaterThan(maxSizeOf("triangle") * 0.9);
  });

  it("is the same spec for the same index, run after run", () => {
    expect(shapeSpec(42)).toEqual(shapeSpec(42));
    expect(specs.filter((s) => s.size === undefined).length).toBe(1_000);
  });
});

/**
 * What the caches do to every object they store (freeze.ts): deep-freeze it, and share its strings through a
 * bounded pool. That sharing saves memory is measured, not asserted (a string's identity cannot be seen from
 * JavaScript): `npm run bench -- --heap-prof`, docs/benchmarks.md. Here: what is frozen, what the pool takes
 * and keeps, and that the values stay equal.
 */
import { describe, expect, test } from "vitest";
import { deepFreeze, StringPool } from "./freeze.ts";

const shape = (name: string) => ({
  apiVersion: "shapes.example.com/v1alpha1",
  kind: "Shape",
  metadata: { name, namespace: "default", finalizers: ["shapes.example.com/cloud-shape"] },
  status: { conditions: [{ type: "Ready", status: "True", reason: "CloudShapeInSync" }] },
});

describe("deepFreeze", () => {
  test("freezes everything reachable, in place, and keeps every value", () => {
    const obj = shape("a");
    expect(deepFreeze(obj, new StringPool())).toBe(obj);
    expect(obj).toEqual(shape("a"));
    for (const part of [obj, obj.metadata, obj.metadata.finalizers, obj.status.conditions[0]]) {
      expect(Object.isFrozen(part)).toBe(true);
    }
    expect(() => {
      (obj.metadata as { name: string }).name = "b";
    }).toThrow(TypeError);
  });

  test.each([
    {
      reason: "two objects: the strings they share are pooled once, each name once",
      objects: () => [shape("a"), shape("b")],
      // apiVersion, kind, namespace, finalizer, type, status, reason, and the two names.
      pooled: 9,
    },
    {
      reason: "an object frozen before keeps its own strings: nothing written, nothing pooled",
      objects: () => [Object.freeze({ kind: "Shape" })],
      pooled: 0,
    },
    {
      reason: "a string longer than maxLength is not pooled",
      objects: () => [{ message: "x".repeat(300), kind: "Shape" }],
      pooled: 1,
    },
  ])("$reason", ({ objects, pooled }) => {
    const strings = new StringPool({ maxLength: 256 });
    for (const obj of objects()) deepFreeze(obj, strings);
    expect(strings.size).toBe(pooled);
  });

  test("without a pool it only freezes (the no-pool callers: own writes' notes)", () => {
    const obj = deepFreeze(shape("a"));
    expect(Object.isFrozen(obj.metadata)).toBe(true);
  });
});

describe("StringPool", () => {
  test.each([
    { reason: "the same text twice is one entry", texts: ["Ready", "Ready"], maxEntries: 10, size: 1 },
    { reason: "full: emptied, then the new text kept", texts: ["a", "b", "c"], maxEntries: 2, size: 1 },
    { reason: "returns equal text", texts: ["True"], maxEntries: 10, size: 1 },
  ])("$reason", ({ texts, maxEntries, size }) => {
    const pool = new StringPool({ maxEntries });
    for (const text of texts) expect(pool.intern(text)).toBe(text);
    expect(pool.size).toBe(size);
  });
});

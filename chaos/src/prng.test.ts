import { describe, expect, it } from "vitest";
import { createRng, deriveSeed } from "./prng.ts";

describe("createRng", () => {
  it("gives the same sequence for the same seed, and another for another seed", () => {
    const draw = (seed: number) => Array.from({ length: 20 }, createRng(seed).next);
    // One generator per call: draw(seed) must not share state between calls.
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
  });

  it("keeps every draw in its range", () => {
    const rng = createRng(7);
    for (let i = 0; i < 10_000; i++) {
      const x = rng.next();
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
      const n = rng.int(-3, 3);
      expect(Number.isInteger(n) && n >= -3 && n <= 3).toBe(true);
    }
  });

  it("reaches both ends of an integer range and every list element", () => {
    const rng = createRng(1);
    const ints = new Set(Array.from({ length: 2_000 }, () => rng.int(0, 9)));
    expect([...ints].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const picks = new Set(Array.from({ length: 200 }, () => rng.pick(["a", "b", "c"])));
    expect(picks).toEqual(new Set(["a", "b", "c"]));
  });

  it("never picks a choice of weight 0, and follows the weights roughly", () => {
    const rng = createRng(9);
    const counts = { a: 0, b: 0, never: 0 };
    for (let i = 0; i < 10_000; i++) {
      counts[
        rng.weighted<keyof typeof counts>([
          ["a", 3],
          ["b", 1],
          ["never", 0],
        ])
      ] += 1;
    }
    expect(counts.never).toBe(0);
    expect(counts.a / counts.b).toBeGreaterThan(2.5);
    expect(counts.a / counts.b).toBeLessThan(3.5);
  });

  it.each([
    { seed: -1, reason: "negative" },
    { seed: 2 ** 32, reason: "beyond 32 bits" },
    { seed: 1.5, reason: "not an integer" },
  ])("refuses the seed $seed ($reason)", ({ seed }) => {
    expect(() => createRng(seed)).toThrow(/^cannot seed/);
  });

  it("refuses impossible draws with a clear message", () => {
    const rng = createRng(1);
    expect(() => rng.pick([])).toThrow(/^cannot pick/);
    expect(() => rng.int(3, 2)).toThrow(/^cannot draw/);
    expect(() => rng.weighted([["x", 0]])).toThrow(/^cannot pick/);
  });
});

describe("deriveSeed", () => {
  it("is a pure function of the seed and the parts, and tells parts apart", () => {
    expect(deriveSeed(1, 2)).toBe(deriveSeed(1, 2));
    const seeds = new Set([
      deriveSeed(1, 1),
      deriveSeed(1, 2),
      deriveSeed(2, 1),
      deriveSeed(1, 1, 1),
      deriveSeed(1),
    ]);
    expect(seeds.size).toBe(5);
    for (const s of seeds) expect(() => createRng(s)).not.toThrow();
  });
});

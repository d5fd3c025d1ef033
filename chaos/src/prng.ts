/**
 * A small seeded pseudo-random generator, so that a chaos run is reproducible: the same seed gives the
 * same trial plans (topology, faults, their timing and parameters, the workload's operations).
 *
 * The generator is sfc32 (Chris Doty-Humphrey's Small Fast Counter, 32-bit), seeded through splitmix32.
 * It is not cryptographic and does not need to be: it only has to be fast, well distributed and the same
 * on every machine (pure 32-bit integer arithmetic, no floating-point state).
 */

/** A source of reproducible random choices. */
export interface Rng {
  /** A float in [0, 1). */
  next: () => number;
  /** An integer in [min, max], both included. */
  int: (min: number, max: number) => number;
  /** A float in [min, max). */
  between: (min: number, max: number) => number;
  /** True with probability `p`. */
  chance: (p: number) => boolean;
  /** One element of a non-empty list. */
  pick: <T>(items: readonly T[]) => T;
  /** One element of a non-empty list, each with its (positive) weight. */
  weighted: <T>(choices: readonly (readonly [T, number])[]) => T;
}

/** splitmix32: turns any 32-bit integer into a well-mixed one (used to seed and to derive seeds). */
function splitmix32(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
  z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
  return (z ^ (z >>> 15)) >>> 0;
}

/**
 * A seed for one part of a run, derived from the run's seed and the part's numbers (e.g. the trial number),
 * so that trial 7 of seed 42 is the same whether or not trials 1-6 ran.
 */
export function deriveSeed(seed: number, ...parts: readonly number[]): number {
  let h = splitmix32(seed >>> 0);
  for (const part of parts) h = splitmix32((h ^ (part >>> 0)) >>> 0);
  return h;
}

/** A generator seeded with a 32-bit unsigned integer. */
export function createRng(seed: number): Rng {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new RangeError(`cannot seed the generator with ${seed}: it must be an integer from 0 to 2^32-1`);
  }
  let a = splitmix32(seed);
  let b = splitmix32(a);
  let c = splitmix32(b);
  let d = 1;
  const next = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  // Warm up: the first outputs of sfc32 still show the seed's structure.
  for (let i = 0; i < 12; i++) next();

  const rng: Rng = {
    next,
    int(min, max) {
      if (!(Number.isInteger(min) && Number.isInteger(max) && min <= max)) {
        throw new RangeError(`cannot draw an integer from [${min}, ${max}]`);
      }
      return min + Math.floor(next() * (max - min + 1));
    },
    between(min, max) {
      return min + next() * (max - min);
    },
    chance(p) {
      return next() < p;
    },
    pick(items) {
      if (items.length === 0) throw new RangeError("cannot pick from an empty list");
      return items[Math.floor(next() * items.length)] as (typeof items)[number];
    },
    weighted(choices) {
      const total = choices.reduce((sum, [, w]) => sum + w, 0);
      if (!(total > 0)) throw new RangeError("cannot pick from choices whose weights are not positive");
      let roll = next() * total;
      for (const [value, w] of choices) {
        roll -= w;
        if (roll < 0) return value;
      }
      return (choices[choices.length - 1] as readonly [(typeof choices)[number][0], number])[0];
    },
  };
  return rng;
}

/**
 * The statistics of the benchmark, small and exact: percentiles of a sample (per-Shape latencies), and the
 * summary of one figure over repeats (median, with the min–max spread). Nothing here knows about Shapes.
 */

/** One figure measured once per repeat: the median is what the tables show, min–max is the spread. */
export interface Summary {
  /** The median over repeats (the mean of the two middle values when the count is even). */
  median: number;
  min: number;
  max: number;
  /** How many repeats gave a value (a failed repeat gives none). */
  count: number;
}

/**
 * The `q`-quantile (0 ≤ q ≤ 1) of `values` by the nearest-rank method: the smallest value such that at
 * least a share `q` of the values are ≤ it. Always one of the values, never an interpolation, so "p99 of
 * 100 latencies" is the 99th smallest. q = 0 gives the minimum. Undefined for an empty list.
 */
export function quantile(values: readonly number[], q: number): number | undefined {
  if (!(q >= 0 && q <= 1)) throw new RangeError(`cannot take the quantile ${q}: it must be between 0 and 1`);
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1];
}

/** The median: the middle value, or the mean of the two middle values. Undefined for an empty list. */
export function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const upper = sorted[mid] as number;
  return sorted.length % 2 === 1 ? upper : ((sorted[mid - 1] as number) + upper) / 2;
}

/** p50, p99 and the maximum of a sample (e.g. per-Shape latencies), or undefined when it is empty. */
export interface Percentiles {
  p50: number;
  p99: number;
  max: number;
  count: number;
}

/** The percentiles of one sample. */
export function percentiles(values: readonly number[]): Percentiles | undefined {
  if (values.length === 0) return undefined;
  return {
    p50: quantile(values, 0.5) as number,
    p99: quantile(values, 0.99) as number,
    max: quantile(values, 1) as number,
    count: values.length,
  };
}

/**
 * Summarizes one figure over repeats. `undefined` entries (a repeat that could not measure it) are left
 * out; NaN and infinities are refused. Undefined when no repeat measured it.
 */
export function summarize(values: readonly (number | undefined)[]): Summary | undefined {
  const present = values.filter((v): v is number => v !== undefined);
  for (const v of present) {
    if (!Number.isFinite(v)) throw new RangeError(`cannot summarize ${v}: every value must be finite`);
  }
  if (present.length === 0) return undefined;
  return {
    median: median(present) as number,
    min: Math.min(...present),
    max: Math.max(...present),
    count: present.length,
  };
}

/**
 * `value / base`, the way the ablation columns compare to the default configuration. Undefined when either
 * is missing, or the base is 0 (a ratio to nothing says nothing; the table shows both values instead).
 */
export function ratio(value: number | undefined, base: number | undefined): number | undefined {
  if (value === undefined || base === undefined || base === 0) return undefined;
  return value / base;
}

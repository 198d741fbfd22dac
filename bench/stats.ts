/** The statistics every benchmark reports, defined once so that their figures compare. */

/** The nearest-rank percentile (`fraction` in 0–1) of unsorted values; NaN for none. */
export function percentile(values: ArrayLike<number>, fraction: number): number {
  return percentileOfSorted(Float64Array.from(values).sort(), fraction);
}

/** The nearest-rank percentile of values already sorted ascending; NaN for none. */
export function percentileOfSorted(sorted: ArrayLike<number>, fraction: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))];
}

/** The median (the upper one of an even count, as every benchmark here has always reported it). */
export const median = (values: ArrayLike<number>): number => Float64Array.from(values).sort()[Math.floor(values.length / 2)];

/** `value` rounded to `digits` decimals. */
export const round = (value: number, digits = 2): number => Math.round(value * 10 ** digits) / 10 ** digits;

/**
 * Credits charged for a call: `round(durationSeconds / 60 × creditsPerMinute, 2)`, half away from zero.
 *
 * Computed as seconds × rate × 100 / 60 and cleaned of binary floating-point noise before rounding, so that
 * exact halves round up as a person expects (61.5 s at 1 credit a minute is 1.025 → 1.03, where the naive
 * `Math.round(1.025 * 100) / 100` gives 1.02).
 */
export function creditsUsed(durationSeconds: number, creditsPerMinute: number): number {
  const hundredths = Number(((durationSeconds * creditsPerMinute * 100) / 60).toPrecision(12));
  return Math.round(hundredths) / 100;
}

/**
 * Credits charged for a call: `round(durationSeconds / 60 × creditsPerMinute, 2)`, half up, in exact integer
 * arithmetic, so that the same rule written in SQL (creditHundredthsSql, used by `GET /usage` to add up a year of
 * calls without a decimal operation per call) gives the very same cents as `GET /calls/{callId}`:
 * - the duration is counted in whole milliseconds (`floor(seconds × 1000 + 0.5)`: the same floating-point steps
 *   in JavaScript and in PostgreSQL's float8);
 * - the rate in ten-thousandths of a credit a minute (CREDITS_PER_MINUTE has at most 4 decimals, so this is exact);
 * - hundredths = milliseconds × rate units ÷ 6,000,000 (60,000 ms a minute × 10,000 units ÷ 100), rounded half up.
 * At most 86,400,000 ms × 10,000,000,000 units: well inside a bigint (and BigInt here).
 */
export const RATE_DECIMALS = 4;
const DIVISOR = 6_000_000n;

/** The rate as a whole number of 1/10,000 credits a minute. */
export const rateUnits = (creditsPerMinute: number) => Math.round(creditsPerMinute * 10 ** RATE_DECIMALS);

/** A duration in whole milliseconds, half up. */
export const durationMilliseconds = (seconds: number) => Math.floor(seconds * 1000 + 0.5);

export function creditsUsed(durationSeconds: number, creditsPerMinute: number): number {
  const product = BigInt(durationMilliseconds(durationSeconds)) * BigInt(rateUnits(creditsPerMinute));
  return Number((2n * product + DIVISOR) / (2n * DIVISOR)) / 100;
}

/** SQL of a call's duration in whole milliseconds (bigint), as durationMilliseconds computes it. */
export const durationMillisecondsSql = (seconds: string) => `floor(${seconds} * 1000 + 0.5)::bigint`;

/** SQL of a call's credits in hundredths (bigint), as creditsUsed computes them; `rateUnits` binds rateUnits(rate). */
export const creditHundredthsSql = (seconds: string, rateUnits: string) =>
  `(${durationMillisecondsSql(seconds)} * ${rateUnits} * 2 + ${DIVISOR}) / ${2n * DIVISOR}`;

import { FIRST_YEAR } from '../common/date-time';
import { RequestValidationException } from '../common/validation';
import type { UsageRange } from './usage.repository';

/** The longest range `GET /usage` answers, in days (both ends counted): a leap year. */
export const MAX_USAGE_DAYS = 366;
/** The range when none is given: the last 30 UTC days, today included. */
export const DEFAULT_USAGE_DAYS = 30;

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_MS = 86_400_000;

/** `YYYY-MM-DD`, a day that exists (no 2026-02-30), year 0001 to 9999: the years a call's callDate may have (date-time.ts). */
export function isCalendarDate(text: string): boolean {
  const match = DATE.exec(text);
  if (!match || Number(match[1]) < FIRST_YEAR) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
}

const dayNumber = (date: string) => Date.parse(`${date}T00:00:00Z`) / DAY_MS;
const dateOf = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

/**
 * The range asked for, its missing ends filled in: `to` defaults to today (UTC), `from` to 29 days before
 * `to`. `from` after `to`, or more than 366 days, is a 400 naming the parameter. The dates were checked.
 */
export function resolveUsageRange(query: { from?: string; to?: string }, now = new Date()): UsageRange {
  const to = query.to ?? now.toISOString().slice(0, 10);
  const from = query.from ?? dateOf(Math.max(dayNumber(to) - (DEFAULT_USAGE_DAYS - 1), dayNumber('0001-01-01')));
  const days = dayNumber(to) - dayNumber(from) + 1;
  if (days < 1) throw new RequestValidationException([{ field: 'from', message: `from (${from}) must not be after to (${to})` }]);
  if (days > MAX_USAGE_DAYS) {
    throw new RequestValidationException([
      { field: query.from ? 'from' : 'to', message: `the range may cover at most ${MAX_USAGE_DAYS} days; ${from} to ${to} is ${days}` },
    ]);
  }
  return { from, to };
}

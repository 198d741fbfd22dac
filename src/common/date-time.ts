import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { ValidateBy } from 'class-validator';

/**
 * RFC 3339 `date-time` (section 5.6): `2026-11-22T09:15:02.123+05:30`. The offset is required (`Z` or
 * `±hh:mm`), so the instant never depends on the server's time zone; `T` and `Z` may be lower case (RFC 3339
 * allows it). Every other ISO 8601 form (week and ordinal dates, the basic format, `±hh`, `±hhmm`, no
 * offset, 24:00) is refused: PostgreSQL reads some of them differently, or not at all.
 */
const RFC3339_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/**
 * The years of every date the API takes (a call's callDate, `GET /usage`'s days), in UTC: four-digit years, which
 * RFC 3339 and `YYYY-MM-DD` can write back, and not 0000, which PostgreSQL does not have (it would store 1 BC)
 * and `GET /usage` could never show. One range, so that every call accepted can be counted.
 */
export const FIRST_YEAR = 1;
export const LAST_YEAR = 9999;
const FIRST_INSTANT = new Date(0).setUTCFullYear(FIRST_YEAR, 0, 1);
const LAST_INSTANT = new Date(0).setUTCFullYear(LAST_YEAR + 1, 0, 1) - 1;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
const daysInMonth = (year: number, month: number) => (month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]);

/**
 * The instant an RFC 3339 date-time with an offset names, to the millisecond (further fraction digits are
 * dropped: rounding could carry into the next second, day or year); undefined for anything else, for a
 * leap second (a Date cannot hold one), and for an instant whose UTC year is not FIRST_YEAR–LAST_YEAR (0001–9999).
 */
export function parseRfc3339DateTime(text: string): Date | undefined {
  const match = RFC3339_DATE_TIME.exec(text);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
  const [fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = match.slice(7);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59 || Number(offsetHours) > 23 || Number(offsetMinutes) > 59) return undefined;
  const milliseconds = Number(fraction.slice(0, 3).padEnd(3, '0'));
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0–99 as 1900–1999.
  const local = new Date(0);
  local.setUTCFullYear(year, month - 1, day);
  local.setUTCHours(hour, minute, second, milliseconds);
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
  const instant = local.getTime() - offset;
  return instant >= FIRST_INSTANT && instant <= LAST_INSTANT ? new Date(instant) : undefined;
}

export const RFC3339_MESSAGE =
  'must be an RFC 3339 date-time with an offset (Z or ±hh:mm) in the years 0001–9999 (UTC), such as 2026-11-22T09:15:02.123+05:30';

/**
 * An RFC 3339 date-time with an offset, turned into the Date it names (parseRfc3339DateTime); anything else
 * is a 400 with RFC3339_MESSAGE.
 */
export const Rfc3339DateTime = () =>
  applyDecorators(
    Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? (parseRfc3339DateTime(value) ?? value) : value)),
    ValidateBy({
      name: 'isRfc3339DateTime',
      validator: {
        validate: (value) => value instanceof Date,
        defaultMessage: (args) => `${args?.property ?? 'value'} ${RFC3339_MESSAGE}`,
      },
    }),
  );

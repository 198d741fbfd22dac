import { types } from 'pg';

/** The driver's own parser of `timestamptz` text (postgres-date): the fallback, and the reference. */
const libraryParser: (text: string) => unknown = types.getTypeParser(types.builtins.TIMESTAMPTZ, 'text');

/** The number written by `count` ASCII digits of `text` from `start`, or -1 if one of them is not a digit. */
function digits(text: string, start: number, count: number): number {
  let value = 0;
  for (let index = start; index < start + count; index++) {
    const digit = text.charCodeAt(index) - 48; // NaN past the end
    if (!(digit >= 0 && digit <= 9)) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** Seconds per unit of an offset's optional `:MM` and `:SS` parts. */
const OFFSET_UNITS = [60, 1] as const;

/**
 * `timestamptz` text as PostgreSQL writes it (DateStyle ISO): `2026-11-22 09:15:02.123456+00`, the offset
 * `±HH`, `±HH:MM` or `±HH:MM:SS`. Read by character codes, it yields exactly postgres-date's Date (including
 * its milliseconds, `1000 × parseFloat(fraction)` truncated) without its three regular expressions and
 * their match arrays: `GET /agents` parses 100 of these per request, and parseDate was 6 % of its CPU
 * (BENCHMARKS.md, "Performance"). Anything else (years before 100 or after 9999, BC, infinity, another
 * DateStyle, a string cut short) goes to postgres-date.
 */
export function parseTimestamptz(text: string): unknown {
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  const shaped =
    text.charCodeAt(4) === 45 && text.charCodeAt(7) === 45 && text.charCodeAt(10) === 32 && text.charCodeAt(13) === 58 && text.charCodeAt(16) === 58;
  if (!shaped || year < 100 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return libraryParser(text);
  let index = 19;
  let milliseconds = 0;
  if (text.charCodeAt(index) === 46 /* . */) {
    const start = index;
    index++;
    while (index < text.length && digits(text, index, 1) >= 0) index++;
    milliseconds = 1000 * Number(text.slice(start, index));
  }
  const sign = text.charCodeAt(index) === 43 /* + */ ? 1 : text.charCodeAt(index) === 45 /* - */ ? -1 : 0;
  const offsetHours = digits(text, index + 1, 2);
  if (sign === 0 || offsetHours < 0) return libraryParser(text);
  index += 3;
  let offsetSeconds = offsetHours * 3600;
  for (const unit of OFFSET_UNITS) {
    if (index === text.length) break;
    const value = text.charCodeAt(index) === 58 /* : */ ? digits(text, index + 1, 2) : -1;
    if (value < 0) return libraryParser(text);
    offsetSeconds += value * unit;
    index += 3;
  }
  if (index !== text.length) return libraryParser(text);
  return new Date(Date.UTC(year, month - 1, day, hour, minute, second, milliseconds) - sign * offsetSeconds * 1000);
}

/** The pg `types` of the service's connections: the driver's parsers, with `parseTimestamptz` for `timestamptz`. */
export const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === types.builtins.TIMESTAMPTZ && (format ?? 'text') === 'text') return parseTimestamptz;
    return types.getTypeParser(oid, format);
  },
};

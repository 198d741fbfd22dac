import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { DataSource } from 'typeorm';
import { parseRfc3339DateTime } from '../src/common/date-time';
import { accountFingerprint, createTestContext, TestAccount, TestContext } from './helpers';

/**
 * `callDate` (POST /calls) is RFC 3339 with an explicit offset (contract section 6): every other form ISO 8601
 * allows is a 400, and an accepted value is stored as the exact instant it names (to the millisecond: the
 * API's precision; further fraction digits are dropped, never rounded into the next second).
 */
const ACCEPTED: [string, string][] = [
  ['2026-11-22T10:00:00Z', '2026-11-22T10:00:00.000Z'],
  ['2026-11-22T10:00:00.123Z', '2026-11-22T10:00:00.123Z'],
  ['2026-11-22T10:00:00.1Z', '2026-11-22T10:00:00.100Z'],
  ['2026-11-22T10:00:00.123+05:30', '2026-11-22T04:30:00.123Z'],
  ['2026-11-22T10:00:00-08:00', '2026-11-22T18:00:00.000Z'],
  ['2026-11-22T10:00:00-00:00', '2026-11-22T10:00:00.000Z'], // RFC 3339: UTC, local offset unknown
  ['2026-11-22T10:00:00+23:59', '2026-11-21T10:01:00.000Z'],
  ['2026-11-22t10:00:00z', '2026-11-22T10:00:00.000Z'], // RFC 3339 5.6: T and Z may be lower case
  ['2026-11-22T10:00:00.123456789Z', '2026-11-22T10:00:00.123Z'],
  [`2026-11-22T10:00:00.${'9'.repeat(1000)}Z`, '2026-11-22T10:00:00.999Z'],
  ['2026-01-01T00:30:00+01:00', '2025-12-31T23:30:00.000Z'],
  ['2024-02-29T12:00:00Z', '2024-02-29T12:00:00.000Z'],
  ['2000-02-29T12:00:00Z', '2000-02-29T12:00:00.000Z'],
  ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
  ['0001-01-01T00:01:00+00:01', '0001-01-01T00:00:00.000Z'],
  ['0099-06-15T12:00:00+02:00', '0099-06-15T10:00:00.000Z'],
  ['1969-12-31T23:59:59.999Z', '1969-12-31T23:59:59.999Z'],
  ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
  ['9999-12-31T23:59:59+01:00', '9999-12-31T22:59:59.000Z'],
];

const REFUSED: [string, unknown][] = [
  ['a week date', '2026-W47-1'],
  ['a week date and time', '2026-W47-1T10:00:00Z'],
  ['an ordinal date', '2026-326'],
  ['an ordinal date and time', '2026-326T10:00:00Z'],
  ['the basic format', '20261122T100000Z'],
  ['the basic format with an offset', '20261122T100000+0530'],
  ['a date only', '2026-11-22'],
  ['a year and month', '2026-11'],
  ['no offset', '2026-11-22T10:00:00'],
  ['no offset, with a fraction', '2026-11-22T10:00:00.123'],
  ['no seconds', '2026-11-22T10:00Z'],
  ['hours only', '2026-11-22T10Z'],
  ['a ±hh offset', '2026-11-22T10:00:00.123+05'],
  ['a ±hhmm offset', '2026-11-22T10:00:00+0530'],
  ['an offset of 24 hours', '2026-11-22T10:00:00+24:00'],
  ['an offset of 60 minutes', '2026-11-22T10:00:00+05:60'],
  ['an offset with seconds', '2026-11-22T10:00:00+05:30:00'],
  ['a leap second', '2016-12-31T23:59:60Z'],
  ['24:00', '2026-11-22T24:00:00Z'],
  ['minute 60', '2026-11-22T10:60:00Z'],
  ['February 30', '2026-02-30T10:00:00Z'],
  ['February 29 of a common year', '2025-02-29T10:00:00Z'],
  ['February 29 of 1900', '1900-02-29T10:00:00Z'],
  ['November 31', '2026-11-31T10:00:00Z'],
  ['month 13', '2026-13-01T10:00:00Z'],
  ['month 00', '2026-00-10T10:00:00Z'],
  ['day 00', '2026-11-00T10:00:00Z'],
  ['a space for T', '2026-11-22 10:00:00Z'],
  ['an expanded year', '+002026-11-22T10:00:00Z'],
  ['a negative year', '-0001-11-22T10:00:00Z'],
  ['a five-digit year', '20260-11-22T10:00:00Z'],
  ['a comma for the decimal point', '2026-11-22T10:00:00,5Z'],
  ['an empty fraction', '2026-11-22T10:00:00.Z'],
  ['a leading space', ' 2026-11-22T10:00:00Z'],
  ['a trailing newline', '2026-11-22T10:00:00Z\n'],
  ['non-ASCII digits', '２０２６-11-22T10:00:00Z'],
  // Years 0001–9999 in UTC, the days GET /usage can count: PostgreSQL has no year 0 (it would store 1 BC).
  ['year 0000', '0000-01-01T00:00:00Z'],
  ['the last instant of year 0000', '0000-12-31T23:59:59.999Z'],
  ['an instant in year 0000 in UTC', '0001-01-01T00:00:00+00:01'],
  ['an instant before year 0000 in UTC', '0000-01-01T00:00:00+00:01'],
  ['year 10000', '10000-01-01T00:00:00Z'],
  ['an instant after year 9999 in UTC', '9999-12-31T23:59:59-00:01'],
  ['a time zone name', '2026-11-22T10:00:00 Asia/Kolkata'],
  ['RFC 2822', 'Sun, 22 Nov 2026 10:00:00 +0000'],
  ['a number', 1_795_000_000_000],
  ['an empty string', ''],
  ['null', null],
  ['an object', { date: '2026-11-22T10:00:00Z' }],
];

describe('callDate: RFC 3339 with an explicit offset only', () => {
  let context: TestContext;
  let account: TestAccount;
  let dataSource: DataSource;

  beforeAll(async () => {
    context = await createTestContext();
    dataSource = context.app.get(DataSource);
    account = await context.createAccount();
  });
  afterAll(() => context.close());

  const storesExactly = async (callDate: string, instant: string) => {
    const created = await context.as(account).post('/calls').send({ name: 'dated', callDate }).expect(201);
    expect(created.body.callDate).toBe(instant);
    expect((await context.as(account).get(`/calls/${created.body.id}`).expect(200)).body.callDate).toBe(instant);
    const [row] = await dataSource.query(
      `SELECT (extract(epoch FROM call_date) * 1000)::float8 AS ms FROM calls WHERE account_id = $1 AND id = $2`,
      [account.id, created.body.id],
    );
    expect(row.ms).toBe(Date.parse(instant));
  };

  it.each(ACCEPTED)('stores %s as the instant %s', storesExactly);

  // The driver wrote a Date parameter in the process's local time with its offset in whole minutes: in a
  // zone whose offset once had seconds (local mean time: Asia/Kolkata +05:53:28 before 1854, Africa/Monrovia
  // −00:44:30 until 1972), old instants were stored up to a minute off. A Jest worker cannot change its own
  // time zone, so a child process records the calls.
  it.each(['Asia/Kolkata', 'Africa/Monrovia'])(
    'stores the same instants with the server in the time zone %s',
    async (zone) => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['-r', './scripts/register.js', 'test/support/store-call-dates.ts', JSON.stringify(ACCEPTED.map(([text]) => text))],
        {
          cwd: path.join(__dirname, '..'),
          env: { ...process.env, TZ: zone },
        },
      );
      const { timeZoneOffsetIn1850, results } = JSON.parse(stdout.trim().split('\n').pop()!);
      expect(timeZoneOffsetIn1850).not.toBe(0); // the child really ran in that zone
      expect(results).toEqual(ACCEPTED.map(([, instant]) => ({ status: 201, callDate: instant, storedMs: Date.parse(instant) })));
    },
    60_000,
  );

  it.each(REFUSED)('refuses %s with a 400 naming callDate, storing nothing', async (_, callDate) => {
    const before = await accountFingerprint(dataSource, account.id);
    const response = await context.as(account).post('/calls').send({ name: 'dated', callDate }).expect(400);
    expect(response.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: expect.stringContaining('callDate'),
      details: [{ field: 'callDate', message: expect.stringMatching(/RFC 3339 .* in the years 0001–9999 \(UTC\)/) }],
    });
    expect(await accountFingerprint(dataSource, account.id)).toBe(before);
  });

  it('parses exactly the accepted forms, to the same instants, and refuses the rest (a pure function, no time zone)', () => {
    for (const [text, instant] of ACCEPTED) expect(parseRfc3339DateTime(text)?.toISOString()).toBe(instant);
    for (const [, text] of REFUSED) if (typeof text === 'string') expect(parseRfc3339DateTime(text)).toBeUndefined();
  });
});

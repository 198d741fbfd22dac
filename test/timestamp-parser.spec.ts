import { types } from 'pg';
import { DataSource } from 'typeorm';
import { parseTimestamptz, pgTypes } from '../src/database/timestamp-parser';
import { createTestContext, TestContext } from './helpers';

const reference = types.getTypeParser(types.builtins.TIMESTAMPTZ, 'text');
/** A Date as its time value (an invalid Date is NaN, which toEqual matches), anything else as it is. */
const value = (parsed: unknown) => (parsed instanceof Date ? { time: parsed.getTime() } : parsed);
const same = (text: string) => expect([text, value(parseTimestamptz(text))]).toEqual([text, value(reference(text))]);

describe('parseTimestamptz', () => {
  it("gives postgres-date's result for every shape PostgreSQL writes, and for the ones it hands over", () => {
    for (const text of [
      '2026-11-22 09:15:02+00',
      '2026-11-22 09:15:02.1+00',
      '2026-11-22 09:15:02.123+00',
      '2026-11-22 09:15:02.579+00',
      '2026-11-22 09:15:02.999999+00',
      '2026-11-22 09:15:02.000001+05:30',
      '2026-02-28 23:59:59.5-03:30',
      '1999-12-31 23:59:59.999-12',
      '1883-11-18 12:03:57+00:53:28',
      '0099-01-01 00:00:00+00',
      '0001-01-01 00:00:00+00 BC',
      '10000-01-01 00:00:00+00',
      'infinity',
      '-infinity',
      '2026-11-22',
      '2026-11-22 09:15:02',
      '2026-11-22T09:15:02Z',
      '2026-11-22 09:15:02+0',
      '2026-11-22 09:15:02+00:3',
      '2026-11-22 09:15:02+00x',
      '2026-11-22 09:15:',
      '2026-11-22 09:15:0',
      '2026-11-22 09:15:02.',
      '2026-11-22 09:15:02.5',
      '',
    ]) {
      same(text);
    }
  });

  it('agrees with postgres-date on 20,000 random timestamps, fractions and offsets', () => {
    let state = 7;
    const random = (n: number) => ((state = (state * 1_103_515_245 + 12_345) % 2_147_483_648), state % n);
    const pad = (value: number, width: number) => String(value).padStart(width, '0');
    for (let index = 0; index < 20_000; index++) {
      const date = `${pad(100 + random(9_900), 4)}-${pad(1 + random(12), 2)}-${pad(1 + random(28), 2)}`;
      const time = `${pad(random(24), 2)}:${pad(random(60), 2)}:${pad(random(60), 2)}`;
      const fraction = random(3) === 0 ? '' : `.${pad(random(1_000_000), 6).slice(0, 1 + random(6))}`;
      const offset = `${random(2) ? '+' : '-'}${pad(random(15), 2)}${['', `:${pad(random(60), 2)}`, `:${pad(random(60), 2)}:${pad(random(60), 2)}`][random(3)]}`;
      same(`${date} ${time}${fraction}${offset}`);
    }
  });
});

describe('timestamptz from PostgreSQL', () => {
  let context: TestContext;
  beforeAll(async () => {
    context = await createTestContext();
  });
  afterAll(() => context.close());

  it('is read by parseTimestamptz on the service connections, as postgres-date reads it, in any session time zone', async () => {
    const dataSource = context.app.get(DataSource);
    expect((dataSource.options.extra as { types: unknown }).types).toBe(pgTypes);
    const runner = dataSource.createQueryRunner();
    try {
      for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Asia/Kathmandu', 'Europe/Amsterdam']) {
        await runner.query(`SET TIME ZONE '${zone}'`);
        const rows: { text: string; value: Date }[] = await runner.query(
          `SELECT t::text AS text, t AS value FROM (VALUES (now()), (timestamptz '2026-03-29 01:30:00.5+00'), (timestamptz '1900-01-01 00:00:00+00'),
             (timestamptz '2024-02-29 23:59:59.999999+00'), (timestamptz '0050-06-01 00:00:00+00'), (timestamptz 'infinity')) AS v(t)`,
        );
        for (const row of rows) {
          expect([zone, row.text, value(row.value)]).toEqual([zone, row.text, value(reference(row.text))]);
          same(row.text);
        }
      }
      await runner.query('RESET TIME ZONE');
    } finally {
      await runner.release();
    }
  });
});

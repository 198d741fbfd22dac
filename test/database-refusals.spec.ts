import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource, QueryRunner } from 'typeorm';
import { AllExceptionsFilter } from '../src/common/all-exceptions.filter';
import { accountFingerprint, createTestContext, TestAccount, TestContext } from './helpers';

/**
 * The safety net: a write PostgreSQL refuses because of a value (SQLSTATE class 22, data exception, or 23,
 * integrity constraint violation) is a 400 (409 for a unique violation) in the API's error shape, with a
 * generic message (PostgreSQL's own echo the values), whether the error comes through TypeORM
 * (QueryFailedError) or straight from pg (DatabaseError). Every error here is PostgreSQL's own.
 */
const MARKER = `marker-${randomUUID()}`;
const VALUE_TOO_LONG = 'x'.repeat(201) + MARKER;

/** [what, statement ($1 is the account id), SQLSTATE PostgreSQL answers, status] */
const REFUSALS: [string, string, unknown[], string, number][] = [
  ['a value too long for its column', 'INSERT INTO calls (account_id, name) VALUES ($1, $2)', [VALUE_TOO_LONG], '22001', 400],
  ['text that is no number', 'INSERT INTO calls (account_id, duration_seconds) VALUES ($1, $2)', [MARKER], '22P02', 400],
  ['an integer out of range', 'INSERT INTO calls (account_id, agent_id) VALUES ($1, $2)', ['2147483648'], '22003', 400],
  ['an impossible date', 'INSERT INTO calls (account_id, call_date) VALUES ($1, $2)', ['2026-02-30T10:00:00Z'], '22008', 400],
  ['a malformed timestamp', 'INSERT INTO calls (account_id, call_date) VALUES ($1, $2)', [`2026-W47-1 ${MARKER}`], '22007', 400],
  ['a NUL in JSON', 'INSERT INTO calls (account_id, feedback) VALUES ($1, $2::jsonb)', [`{"note": "\\u0000${MARKER}"}`], '22P05', 400],
  ['bytes that are not UTF-8', "INSERT INTO calls (account_id, name) VALUES ($1, convert_from('\\xff'::bytea, 'UTF8'))", [], '22021', 400],
  ['a NULL in a NOT NULL column', 'INSERT INTO calls (account_id, name) VALUES ($1, NULL)', [], '23502', 400],
  ['a missing referenced row', 'INSERT INTO calls (account_id, name) VALUES (-1 * $1, $2)', [MARKER], '23503', 400],
  ['a duplicate key', 'INSERT INTO calls (account_id, id) VALUES ($1, $2), ($1, $2)', [randomUUID()], '23505', 409],
  ['a failed check constraint', 'INSERT INTO refusal_check (account_id, label) VALUES ($1, $2)', [MARKER], '23514', 400],
];

/** A table of this session only, for the one constraint kind the schema does not have. */
const CHECK_TABLE = `CREATE TEMP TABLE IF NOT EXISTS refusal_check (account_id integer, label text CHECK (label NOT LIKE 'marker-%'))`;

describe('the safety net for values PostgreSQL refuses', () => {
  let context: TestContext;
  let account: TestAccount;
  let dataSource: DataSource;
  let runner: QueryRunner;
  let client: Client;
  const filter = new AllExceptionsFilter();

  beforeAll(async () => {
    context = await createTestContext();
    dataSource = context.app.get(DataSource);
    account = await context.createAccount();
    runner = dataSource.createQueryRunner();
    await runner.query(CHECK_TABLE);
    client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    await client.query(CHECK_TABLE);
  });
  afterAll(async () => {
    await runner.release();
    await client.end();
    await context.close();
  });

  /** What the statement throws (it must throw). */
  const refusalOf = async (run: () => Promise<unknown>) => {
    try {
      await run();
    } catch (error) {
      return error as { code?: string; constructor: { name: string } };
    }
    throw new Error('PostgreSQL accepted the statement');
  };

  describe.each([
    ['TypeORM (QueryFailedError)', (sql: string, values: unknown[]) => runner.query(sql, values), 'QueryFailedError'],
    ['pg (DatabaseError)', (sql: string, values: unknown[]) => client.query(sql, values), 'DatabaseError'],
  ])('through %s', (_, query, errorName) => {
    it.each(REFUSALS)(
      'answers %s with the status of its class, a generic message and no value',
      async (__, sql, values, sqlState, status) => {
        const error = await refusalOf(() => query(sql, [account.id, ...values]));
        expect(error.constructor.name).toBe(errorName);
        expect(error.code).toBe(sqlState);
        const body = filter.toErrorResponse(error, { id: 'req-1' } as never);
        expect(body).toEqual({
          statusCode: status,
          error: status === 409 ? 'Conflict' : 'Bad Request',
          message: status === 409 ? 'The request conflicts with data already stored' : 'A value in the request cannot be stored',
        });
      },
    );
  });

  it('leaves other database errors alone: a broken query is still a 500', async () => {
    const error = await refusalOf(() => client.query('SELECT no_such_column FROM calls'));
    expect(error.code).toBe('42703');
    expect(filter.toErrorResponse(error, { id: 'req-1' } as never).statusCode).toBe(500);
  });

  describe('through the API', () => {
    // A trigger stands for a rule the validation does not know: it refuses calls with these names,
    // raising PostgreSQL errors of each class (the message and detail carry the values, as PostgreSQL's do).
    const suffix = randomUUID().replace(/-/g, '');
    const refused: [string, string, number][] = [
      [`data-${MARKER}`, '22023', 400],
      [`unique-${MARKER}`, '23505', 409],
      [`check-${MARKER}`, '23514', 400],
    ];

    beforeAll(async () => {
      const cases = refused.map(
        ([name, code]) => `WHEN '${name}' THEN RAISE EXCEPTION 'refused %', NEW.name USING ERRCODE = '${code}', DETAIL = NEW.phone;`,
      );
      await dataSource.query(`CREATE FUNCTION refuse_${suffix}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN CASE NEW.name ${cases.join(' ')} ELSE END CASE; RETURN NEW; END $$`);
      await dataSource.query(`CREATE TRIGGER refuse_${suffix} BEFORE INSERT ON calls FOR EACH ROW EXECUTE FUNCTION refuse_${suffix}()`);
    });
    afterAll(async () => {
      await dataSource.query(`DROP TRIGGER refuse_${suffix} ON calls`);
      await dataSource.query(`DROP FUNCTION refuse_${suffix}()`);
    });

    it.each(refused)('answers a refused write (%s, SQLSTATE %s) with %i in the error shape, storing nothing', async (name, _, status) => {
      const before = await accountFingerprint(dataSource, account.id);
      const response = await context.as(account).post('/calls').send({ name, phone: '+91 98765 43210' }).expect(status);
      expect(response.body).toEqual({ statusCode: status, error: expect.any(String), message: expect.any(String) });
      expect(JSON.stringify(response.body)).not.toContain(MARKER);
      expect(JSON.stringify(response.body)).not.toContain('98765');
      expect(await accountFingerprint(dataSource, account.id)).toBe(before);
    });
  });
});

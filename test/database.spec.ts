import { Database } from '../src/database/database';
import { createTestContext, eventually, TestContext } from './helpers';

describe('Database', () => {
  let context: TestContext;
  beforeAll(async () => {
    context = await createTestContext();
  });
  afterAll(() => context.close());

  it('transaction runs afterCommit callbacks once the transaction committed, and never when it rolled back', async () => {
    const database = context.app.get(Database);
    const events: string[] = [];
    await database.transaction(async (sql) => {
      sql.afterCommit(() => events.push('after commit'));
      await sql.query('SELECT 1');
      events.push('in the transaction');
    });
    expect(events).toEqual(['in the transaction', 'after commit']);
    await expect(
      database.transaction(async (sql) => {
        sql.afterCommit(() => events.push('after a rollback'));
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await expect(
      database.transaction(async (sql) => {
        sql.afterCommit(() => events.push('after a failed commit'));
        // Deferred until COMMIT, which then fails.
        await sql.query('CREATE TEMPORARY TABLE parent (id int PRIMARY KEY) ON COMMIT DROP');
        await sql.query('CREATE TEMPORARY TABLE child (parent_id int REFERENCES parent DEFERRABLE INITIALLY DEFERRED) ON COMMIT DROP');
        await sql.query('INSERT INTO child VALUES (1)');
      }),
    ).rejects.toThrow();
    expect(events).toEqual(['in the transaction', 'after commit']);
  });

  it('transaction survives its connection being lost while its work runs: it fails, the process goes on, the pool serves the next', async () => {
    const database = context.app.get(Database);
    let transactionPid = 0;
    const lost = database.transaction(async (sql) => {
      [{ pid: transactionPid }] = await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // Between two statements (no query under way, as while a transaction's work awaits something else), the server ends the session.
      await database.query('SELECT pg_terminate_backend($1)', [transactionPid]);
      await eventually(async () =>
        (await database.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [transactionPid])).length ? undefined : true,
      );
      await sql.query('SELECT 1');
    });
    await expect(lost).rejects.toThrow(/connection error|terminat/i);
    const [{ pid }] = await database.transaction((sql) => sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'));
    expect(pid).not.toBe(transactionPid);
  });

  it('query, prepared, parses a statement once per connection, under one name per text, and answers as the unnamed query does', async () => {
    const database = context.app.get(Database);
    const doubled = `SELECT $1::int * 2 AS "value" /* ${Date.now()} */`;
    const tripled = doubled.replace('* 2', '* 3');
    const prepared = await database.transaction(async (sql) => {
      for (const value of [1, 2, 3]) {
        expect(await sql.query(doubled, [value], { prepared: true })).toEqual(await sql.query(doubled, [value]));
        expect(await sql.query(tripled, [value], { prepared: true })).toEqual([{ value: value * 3 }]);
      }
      // This connection's prepared statements (of these texts: it may have served others before).
      const ofThese = 'SELECT name, statement FROM pg_prepared_statements WHERE statement IN ($1, $2) ORDER BY statement';
      return sql.query<{ name: string; statement: string }>(ofThese, [doubled, tripled]);
    });
    expect(prepared).toEqual([
      { name: expect.stringMatching(/^stmt_[0-9a-f]{32}$/), statement: doubled },
      { name: expect.stringMatching(/^stmt_[0-9a-f]{32}$/), statement: tripled },
    ]);
    expect(prepared[0].name).not.toBe(prepared[1].name);
    // Through the pool too, on whichever connection: the same results.
    const values = await Promise.all([4, 5, 6, 7].map((value) => database.query<{ value: number }>(doubled, [value], { prepared: true })));
    expect(values).toEqual([[{ value: 8 }], [{ value: 10 }], [{ value: 12 }], [{ value: 14 }]]);
  });
});

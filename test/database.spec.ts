import { Database } from '../src/database/database';
import { createTestContext, TestContext } from './helpers';

describe('Database.transaction', () => {
  let context: TestContext;
  beforeAll(async () => {
    context = await createTestContext();
  });
  afterAll(() => context.close());

  it('runs afterCommit callbacks once the transaction committed, and never when it rolled back', async () => {
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
});

import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { MigrationInterface, QueryRunner } from 'typeorm';
import { StartupError } from '../src/common/startup-error';
import { loadConfig } from '../src/config/config';
import { createIndexConcurrently, runMigrations } from '../src/database/migrate';
import { queryOnce } from './helpers';

/** Settings with a statement timeout far shorter than the migrations below take. */
const settings = loadConfig({ DB_STATEMENT_TIMEOUT_MS: '100', DB_MIGRATION_LOCK_TIMEOUT_MS: '200' });

const sql = queryOnce;

/** A fresh database on the test server, for migrations that are not the application's. */
async function throwawayDatabase(): Promise<{ url: string; drop: () => Promise<unknown> }> {
  const name = `migrations_${randomBytes(6).toString('hex')}`;
  await sql(process.env.DATABASE_URL!, `CREATE DATABASE ${name}`);
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => sql(process.env.DATABASE_URL!, `DROP DATABASE ${name} WITH (FORCE)`) };
}

/** Polls until `condition` holds (each check is a query: no timing assumption), or `failed` settles first. */
async function until(condition: () => Promise<boolean>, failed: Promise<unknown>): Promise<void> {
  let settled = false;
  failed.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (!(await condition())) {
    if (settled) await failed.then(() => Promise.reject(new Error('finished before the condition held')));
    await sleep(20);
  }
}

/** Sessions of the database running `pattern` (or waiting on a lock for it) for longer than `ms`. */
const runningLongerThan = (url: string, pattern: string, ms: number, waitEvent?: string) => async () => {
  const rows = await sql(
    url,
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'active' AND query LIKE $1
        AND now() - query_start > make_interval(secs => $2::float8 / 1000) AND ($3::text IS NULL OR wait_event = $3)`,
    [pattern, ms, waitEvent ?? null],
  );
  return rows[0].n === 1;
};

class Sleep1700000000001 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('CREATE TABLE slept (id int)');
    await queryRunner.query('SELECT pg_sleep(0.5)'); // five times the statement timeout
  }
  async down(): Promise<void> {}
}

/** Runs until the test opens the gate (a row in `gate`): as long as the test needs, whatever the machine's speed. */
class Gate1700000000002 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DO $$ BEGIN WHILE NOT EXISTS (SELECT FROM gate) LOOP PERFORM pg_sleep(0.01); END LOOP; END $$');
  }
  async down(): Promise<void> {}
}

class AddColumn1700000000003 implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE busy ADD COLUMN added int');
  }
  async down(): Promise<void> {}
}

class IndexConcurrently1700000000004 implements MigrationInterface {
  transaction = false;
  async up(queryRunner: QueryRunner): Promise<void> {
    await createIndexConcurrently(queryRunner, 'IDX_big_value', 'ON "big" ("value")');
  }
  async down(): Promise<void> {}
}

describe('migrations on a big database', () => {
  let database: { url: string; drop: () => Promise<unknown> };
  beforeEach(async () => (database = await throwawayDatabase()));
  afterEach(() => database.drop());

  it('complete a migration that runs longer than the statement timeout', async () => {
    expect(await runMigrations(database.url, settings, { migrations: [Sleep1700000000001] })).toEqual(['Sleep1700000000001']);
    expect(await sql(database.url, 'SELECT name FROM migrations')).toEqual([{ name: 'Sleep1700000000001' }]);
  });

  it('let a second instance wait for the first one for longer than the statement timeout, and then find nothing to do', async () => {
    await sql(database.url, 'CREATE TABLE gate ()');
    const first = runMigrations(database.url, settings, { migrations: [Gate1700000000002] });
    await until(runningLongerThan(database.url, 'DO $$%', 0), first);
    const second = runMigrations(database.url, settings, { migrations: [Gate1700000000002] });
    // Both held up well past the statement timeout: the first in its migration, the second waiting for the lock.
    await until(runningLongerThan(database.url, 'DO $$%', 300), first);
    await until(runningLongerThan(database.url, 'SELECT pg_advisory_lock%', 300, 'advisory'), second);
    await sql(database.url, 'INSERT INTO gate DEFAULT VALUES');
    expect((await Promise.all([first, second])).sort()).toEqual([[], ['Gate1700000000002']]);
  });

  it('give up waiting behind application locks with one clear line, and apply the migration once they are released', async () => {
    await sql(database.url, 'CREATE TABLE busy (id int)');
    const application = new Client({ connectionString: database.url });
    await application.connect();
    try {
      await application.query('BEGIN; LOCK TABLE busy IN ACCESS SHARE MODE'); // a long read transaction
      const failure = await runMigrations(database.url, settings, {
        migrations: [AddColumn1700000000003],
        attempts: 2,
        retryDelayMs: 10,
      }).catch((error) => error);
      expect(failure).toBeInstanceOf(StartupError);
      expect(failure.message).toBe(
        'Migration AddColumn1700000000003 could not lock the tables it changes within 200 ms, 2 times: long transactions hold them. ' +
          'Start again when they are done, or raise DB_MIGRATION_LOCK_TIMEOUT_MS.',
      );
      await application.query('COMMIT');
      expect(await runMigrations(database.url, settings, { migrations: [AddColumn1700000000003] })).toEqual(['AddColumn1700000000003']);
    } finally {
      await application.end();
    }
  });

  it('build an index CONCURRENTLY in a migration with transaction = false, replacing one an interrupted build left invalid', async () => {
    await sql(database.url, 'CREATE TABLE big (value int); INSERT INTO big SELECT 1 FROM generate_series(1, 2)');
    // An interrupted concurrent build leaves an invalid index behind: here, a unique one that met a duplicate.
    await expect(sql(database.url, 'CREATE UNIQUE INDEX CONCURRENTLY "IDX_big_value" ON big (value)')).rejects.toThrow(
      /could not create unique index/,
    );
    expect(await runMigrations(database.url, settings, { migrations: [IndexConcurrently1700000000004] })).toEqual([
      'IndexConcurrently1700000000004',
    ]);
    const [index] = await sql(
      database.url,
      `SELECT indisvalid AS valid, indisunique AS "unique" FROM pg_index WHERE indexrelid = '"IDX_big_value"'::regclass`,
    );
    expect(index).toEqual({ valid: true, unique: false });
  });

  it('reports a failing migration in one line that names it', async () => {
    await sql(database.url, 'CREATE TABLE slept (id int)');
    const failure = await runMigrations(database.url, settings, { migrations: [Sleep1700000000001] }).catch((error) => error);
    expect(failure).toBeInstanceOf(StartupError);
    expect(failure.message).toBe('Migration Sleep1700000000001 failed: relation "slept" already exists');
  });
});

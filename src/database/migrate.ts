import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, Logger as TypeOrmLogger, MigrationInterface, QueryRunner } from 'typeorm';
import { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions';
import { StartupError } from '../common/startup-error';
import type { AppConfig } from '../config/config';
import { dataSourceOptions, DatabaseSettings } from './data-source-options';

/** Any constant: the advisory lock that lets only one process migrate at a time. */
const MIGRATION_LOCK = 73_211_947;
/** SQLSTATE lock_not_available: a statement gave up waiting for a lock (lock_timeout). */
const LOCK_NOT_AVAILABLE = '55P03';

export type MigrationSettings = DatabaseSettings & Pick<AppConfig, 'dbMigrationLockTimeoutMs'>;

export interface MigrationOptions {
  /** The migrations to apply (default: the application's). */
  migrations?: (new () => MigrationInterface)[];
  /** Runs of the pending migrations when one gave up waiting for a table lock, before failing (default 3). */
  attempts?: number;
  /** Pause between those runs (default 2 s). */
  retryDelayMs?: number;
}

/** TypeORM prints every failed migration to the console itself; runMigrations reports it once, in one line. */
const QUIET: TypeOrmLogger = { logQuery() {}, logQueryError() {}, logQuerySlow() {}, logSchemaBuild() {}, logMigration() {}, log() {} };

/**
 * The migration connections: no statement timeout (an index build on millions of calls takes minutes, not the
 * 10 s a request gets) and a lock timeout instead, so that a migration waiting behind application traffic gives
 * up and is retried rather than queueing every request behind its own lock request. Each migration runs in its
 * own transaction, unless it declares `transaction = false` (CREATE INDEX CONCURRENTLY cannot run in one).
 */
function migrationDataSourceOptions(
  url: string,
  settings: MigrationSettings,
  migrations?: MigrationOptions['migrations'],
): PostgresDataSourceOptions {
  const options = dataSourceOptions(url, settings);
  const { statement_timeout: _statementTimeout, query_timeout: _queryTimeout, ...extra } = options.extra as Record<string, unknown>;
  return {
    ...options,
    ...(migrations && { migrations }),
    logger: QUIET,
    poolSize: 2,
    // Set for the session at connection, whatever the server's or the database's defaults say.
    extra: { ...extra, options: `-c statement_timeout=0 -c lock_timeout=${settings.dbMigrationLockTimeoutMs}` },
  };
}

/** The database could not be reached at all: one line for the operator, never the password. */
function unreachable(url: string, error: unknown): StartupError {
  const { hostname, port, pathname } = new URL(url);
  return new StartupError(
    `Cannot connect to PostgreSQL at ${hostname}:${port || 5432}${pathname}: ${(error as Error).message}. Check that it is running and that DATABASE_URL is right.`,
    { cause: error },
  );
}

/** The first migration not recorded as applied: the one that failed. */
async function firstPending(dataSource: DataSource): Promise<string> {
  const rows = await dataSource.query<{ name: string }[]>('SELECT name FROM migrations').catch(() => []);
  const applied = new Set(rows.map((row) => row.name));
  const pending = dataSource.migrations
    .map((migration) => migration.name ?? migration.constructor.name)
    .filter((name) => !applied.has(name));
  return pending.sort((a, b) => Number(a.slice(-13)) - Number(b.slice(-13)))[0] ?? 'unknown'; // names end in their timestamp
}

/**
 * Applies pending migrations under an advisory lock, so that several instances starting together migrate once:
 * the others wait for the lock (on a session with no lock or statement timeout: as long as the first one takes)
 * and then find nothing to do. A migration that gives up waiting for a table lock is run again a few times;
 * a migration that fails is reported in one line (StartupError). Returns the names of the migrations applied.
 */
export async function runMigrations(url: string, settings: MigrationSettings, options: MigrationOptions = {}): Promise<string[]> {
  const { attempts = 3, retryDelayMs = 2_000 } = options;
  const dataSource = new DataSource(migrationDataSourceOptions(url, settings, options.migrations));
  await dataSource.initialize().catch((error) => Promise.reject(unreachable(url, error)));
  const lock = dataSource.createQueryRunner();
  try {
    await lock.connect();
    await lock.query('SET lock_timeout = 0');
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied: string[] = [];
    for (let attempt = 1; ; attempt++) {
      try {
        applied.push(...(await dataSource.runMigrations({ transaction: 'each' })).map((migration) => migration.name));
        break;
      } catch (error) {
        const name = await firstPending(dataSource);
        if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE) {
          throw new StartupError(`Migration ${name} failed: ${(error as Error).message}`, { cause: error });
        }
        if (attempt >= attempts) {
          throw new StartupError(
            `Migration ${name} could not lock the tables it changes within ${settings.dbMigrationLockTimeoutMs} ms, ${attempts} times: ` +
              'long transactions hold them. Start again when they are done, or raise DB_MIGRATION_LOCK_TIMEOUT_MS.',
            { cause: error },
          );
        }
        await sleep(retryDelayMs);
      }
    }
    await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    return applied;
  } finally {
    await lock.release();
    await dataSource.destroy();
  }
}

/**
 * Creates an index without blocking writes to the table (CREATE INDEX CONCURRENTLY), in a migration that
 * declares `transaction = false`. Such a migration is not atomic: if it is interrupted, it runs again at the
 * next start, so this skips an index that is already valid and drops one left invalid by an interrupted build.
 * The build waits for the transactions already running on the table with no lock timeout: it blocks nobody.
 * @param definition what follows `CREATE INDEX "<name>"`, e.g. `ON "calls" ("account_id", "created_at")`
 */
export async function createIndexConcurrently(queryRunner: QueryRunner, name: string, definition: string): Promise<void> {
  if (queryRunner.isTransactionActive)
    throw new Error(`Index ${name}: CREATE INDEX CONCURRENTLY needs a migration with transaction = false`);
  const [existing] = (await queryRunner.query('SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass($1)', [
    `"${name}"`,
  ])) as { valid: boolean }[];
  if (existing?.valid) return;
  if (existing) await queryRunner.query(`DROP INDEX CONCURRENTLY "${name}"`);
  await queryRunner.query('SET lock_timeout = 0');
  try {
    await queryRunner.query(`CREATE INDEX CONCURRENTLY "${name}" ${definition}`);
  } finally {
    await queryRunner.query('RESET lock_timeout');
  }
}

/** The SQL that would bring the migrated schema in line with the entities: empty when they agree. */
export async function pendingSchemaChanges(url: string, settings: DatabaseSettings): Promise<{ up: string[]; down: string[] }> {
  const dataSource = new DataSource(dataSourceOptions(url, settings));
  await dataSource.initialize();
  try {
    const sql = await dataSource.driver.createSchemaBuilder().log();
    return { up: sql.upQueries.map((q) => q.query), down: sql.downQueries.map((q) => q.query) };
  } finally {
    await dataSource.destroy();
  }
}

import { DataSource } from 'typeorm';
import { dataSourceOptions, DatabaseSettings } from './data-source-options';

/** Any constant: the advisory lock that lets only one process migrate at a time. */
const MIGRATION_LOCK = 73_211_947;

/**
 * Applies pending migrations, each run in one transaction, under an advisory lock so that several
 * instances starting together migrate once. Returns the names of the migrations applied.
 */
export async function runMigrations(url: string, settings: DatabaseSettings): Promise<string[]> {
  const options = dataSourceOptions(url, settings);
  // Migrations are not requests: rewriting a large table or building an index on it takes what it takes (the
  // request timeouts, 10 s by default, would stop the service from starting on a database of a million calls).
  const dataSource = new DataSource({ ...options, poolSize: 2, extra: { ...options.extra, statement_timeout: 0, query_timeout: 0 } });
  await dataSource.initialize();
  const lock = dataSource.createQueryRunner();
  try {
    await lock.connect();
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await dataSource.runMigrations({ transaction: 'all' });
    await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    return applied.map((migration) => migration.name);
  } finally {
    await lock.release();
    await dataSource.destroy();
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

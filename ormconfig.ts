/**
 * The TypeORM DataSource for TypeORM's own CLI: `npm run typeorm -- migration:show` (or `migration:run`,
 * `migration:revert`, `query "SELECT 1"`). It resolves the database as the service does: DATABASE_URL, or
 * the embedded PostgreSQL under DATA_DIR, started if it is not running (and then left running; `npm start`
 * attaches to it). New migrations are best written with `npm run migration:generate -- Name`, which diffs
 * against a throwaway database instead of yours.
 */
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig } from './src/config/config';
import { dataSourceOptions } from './src/database/data-source-options';
import { openDatabase } from './src/database/open-database';

export default (async () => {
  const config = loadConfig();
  const database = await openDatabase(config);
  return new DataSource(dataSourceOptions(database.url, config));
})();

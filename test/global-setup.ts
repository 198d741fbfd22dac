import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres';
import { prepareJobSchemas } from './support/job-schemas';
import { BASE_DATABASE_URL, createWorkerDatabases } from './worker-databases';

/**
 * One real PostgreSQL for the whole run: the one in DATABASE_URL, or an embedded one in a throwaway data
 * directory, migrated, then copied into one database per worker (test/worker-databases.ts), which
 * test/worker-database.setup.ts gives each worker as its DATABASE_URL. Tests never truncate: each creates its
 * own accounts.
 */
export default async function globalSetup(globalConfig: { maxWorkers: number }): Promise<void> {
  // Files the app writes (local recordings, their signing secret) go to a throwaway directory, not ./.data.
  if (!process.env.DATA_DIR) {
    process.env.DATA_DIR = mkdtempSync(path.join(tmpdir(), 'voice-agent-test-data-'));
    (globalThis as { testDataDir?: string }).testDataDir = process.env.DATA_DIR;
  }
  if (!process.env.DATABASE_URL) {
    const postgres = await startThrowawayPostgres();
    (globalThis as { testPostgres?: unknown }).testPostgres = postgres;
    process.env.DATABASE_URL = postgres.url;
  }
  await runMigrations(process.env.DATABASE_URL, loadConfig());
  await prepareJobSchemas(process.env.DATABASE_URL);
  await createWorkerDatabases(process.env.DATABASE_URL, Math.max(1, globalConfig.maxWorkers));
  process.env[BASE_DATABASE_URL] = process.env.DATABASE_URL;
}

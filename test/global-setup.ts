import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres';

/**
 * One real PostgreSQL for the whole run: the one in DATABASE_URL, or an embedded one in a throwaway data
 * directory. Tests never truncate: each creates its own accounts. Workers inherit DATABASE_URL.
 */
export default async function globalSetup(): Promise<void> {
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
}

import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from '../src/database/throwaway-postgres';

/**
 * One real PostgreSQL for the whole run: the one in DATABASE_URL, or an embedded one in a throwaway data
 * directory. Tests never truncate: each creates its own accounts. Workers inherit DATABASE_URL.
 */
export default async function globalSetup(): Promise<void> {
  if (!process.env.DATABASE_URL) {
    const postgres = await startThrowawayPostgres();
    (globalThis as { testPostgres?: unknown }).testPostgres = postgres;
    process.env.DATABASE_URL = postgres.url;
  }
  await runMigrations(process.env.DATABASE_URL, loadConfig());
}

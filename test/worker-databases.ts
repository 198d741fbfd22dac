import { Client } from 'pg';

/**
 * One database per Jest worker, each a copy of the migrated one (CREATE DATABASE … TEMPLATE). Accounts keep
 * tests apart within a database, but some work spans every account by design (the conversations' idle sweep,
 * which a test context with a 2-second idle time runs every minute): with a database per worker, a test file
 * only ever shares its database with the files before and after it in the same worker, never with one running
 * at the same time.
 */
export const BASE_DATABASE_URL = 'TEST_BASE_DATABASE_URL';

const workerDatabaseName = (base: URL, workerId: string) => `${base.pathname.slice(1) || 'postgres'}_worker_${workerId}`;

/** The URL of a worker's database (JEST_WORKER_ID, from 1). */
export function workerDatabaseUrl(baseUrl: string, workerId: string): string {
  const url = new URL(baseUrl);
  url.pathname = `/${workerDatabaseName(new URL(baseUrl), workerId)}`;
  return url.toString();
}

/** Creates the databases of workers 1…count afresh from the one at `baseUrl`, which no one may be connected to. */
export async function createWorkerDatabases(baseUrl: string, count: number): Promise<void> {
  const base = new URL(baseUrl);
  const admin = new URL(baseUrl);
  admin.pathname = '/template1';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const template = base.pathname.slice(1) || 'postgres';
    for (let worker = 1; worker <= count; worker++) {
      const name = workerDatabaseName(base, String(worker));
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
    }
  } finally {
    await client.end();
  }
}

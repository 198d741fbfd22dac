import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/**
 * The job queues' schemas of the tests' applications, used again. Installing pg-boss in a new schema costs the
 * database about 0.3 s of CPU; an application that starts on one already installed, as a service restarting does,
 * about 0.04 s. A test context takes a free schema of its database (or a new name), emptied, and gives it back once
 * closed: the next context's jobs run with that context's own settings.
 */
const FREE_SCHEMAS = 'test_support.free_job_schemas';

/** Makes the list of free schemas in the database that the workers' databases are copied from. */
export async function prepareJobSchemas(databaseUrl: string): Promise<void> {
  await withClient(databaseUrl, (client) =>
    client.query(`CREATE SCHEMA IF NOT EXISTS test_support; CREATE TABLE IF NOT EXISTS ${FREE_SCHEMAS} (name text PRIMARY KEY)`),
  );
}

/**
 * A free job queue schema of the database's, emptied of the jobs, schedules and maintenance times of the context that
 * had it (left there until now for that context's test to look at), or a new one's name.
 */
export async function takeJobSchema(databaseUrl: string): Promise<string> {
  return withClient(databaseUrl, async (client) => {
    await client.query('BEGIN');
    const { rows } = await client.query<{ name: string }>(
      `DELETE FROM ${FREE_SCHEMAS} WHERE name = (SELECT name FROM ${FREE_SCHEMAS} LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING name`,
    );
    const schema = rows[0]?.name;
    if (schema) {
      // DELETE, as they hold a few rows: TRUNCATE would make each queue's partition and its indexes anew (0.2 s).
      await client.query(
        `DELETE FROM ${schema}.job; DELETE FROM ${schema}.archive; DELETE FROM ${schema}.schedule; DELETE FROM ${schema}.subscription;
         UPDATE ${schema}.version SET maintained_on = NULL, cron_on = NULL, monitored_on = NULL`,
      );
    }
    await client.query('COMMIT');
    return schema ?? `jobs_${randomBytes(6).toString('hex')}`;
  });
}

/** Gives back the schema of a closed application; one it never installed (it failed first) is left alone. */
export async function giveBackJobSchema(databaseUrl: string, schema: string): Promise<void> {
  await withClient(databaseUrl, (client) =>
    client.query(
      `INSERT INTO ${FREE_SCHEMAS} SELECT $1::text WHERE EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = $1::text AND table_name = 'version')`,
      [schema],
    ),
  );
}

async function withClient<T>(databaseUrl: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

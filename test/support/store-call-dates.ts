/**
 * Run by test/call-date.spec.ts in a child process started with another TZ (a Jest worker cannot change its
 * own time zone): records a call for each callDate given as JSON in argv[2] through the API, and prints, for
 * each, the callDate the API reads back and the instant PostgreSQL holds (epoch milliseconds).
 */
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { createTestContext } from '../helpers';

async function main(): Promise<void> {
  const callDates: string[] = JSON.parse(process.argv[2]);
  const context = await createTestContext();
  try {
    const account = await context.createAccount();
    const dataSource = context.app.get(DataSource);
    const results = [];
    for (const callDate of callDates) {
      const created = await context.as(account).post('/calls').send({ callDate });
      const read = await context.as(account).get(`/calls/${created.body.id}`);
      const [row] = await dataSource.query(
        `SELECT (extract(epoch FROM call_date) * 1000)::float8 AS ms FROM calls WHERE account_id = $1 AND id = $2`,
        [account.id, created.body.id],
      );
      results.push({ status: created.status, callDate: read.body.callDate, storedMs: row?.ms });
    }
    process.stdout.write(`${JSON.stringify({ timeZoneOffsetIn1850: new Date('1850-01-01T00:00:00Z').getTimezoneOffset(), results })}\n`);
  } finally {
    await context.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

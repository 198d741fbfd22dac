/**
 * `node -r ./scripts/register.js scripts/auth-timing.ts`
 * Do unknown and revoked API keys take the same time to refuse? (A malformed one is refused before any database
 * work, so it is faster: its shape is public anyway.) Sends interleaved rounds of
 * requests with each kind of key to the real application (in process, throwaway PostgreSQL) and prints the
 * median and p90 latency per kind, which docs/benchmarks.md ("Reliability") reports.
 */
import 'reflect-metadata';
import request from 'supertest';
import { createApp } from '../src/app';
import { generateApiKey } from '../src/auth/api-key-token';
import { AccountsService } from '../src/auth/accounts.service';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from './throwaway-postgres';
import { percentile } from '../bench/stats';

const ROUNDS = Number(process.env.ROUNDS ?? 2000);

async function main(): Promise<void> {
  const postgres = await startThrowawayPostgres();
  const config = loadConfig({ LOG_LEVEL: 'silent', RATE_LIMIT: '0', UNAUTHENTICATED_RATE_LIMIT: '0' });
  try {
    await runMigrations(postgres.url, config);
    const app = await createApp(config, postgres.url);
    const server = app.getHttpServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { account, key } = await app.get(AccountsService).create('Timing');
    await app.get(ApiKeysService).revoke(account.id, key.key.id);
    const keys = { unknown: generateApiKey().apiKey, malformed: 'not-a-key-at-all', revoked: key.apiKey };
    const timings: Record<string, number[]> = { unknown: [], malformed: [], revoked: [] };
    const agent = request.agent(server);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [kind, apiKey] of Object.entries(keys)) {
        const started = process.hrtime.bigint();
        const response = await agent.get('/agents').set('X-Api-Key', apiKey);
        const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
        if (response.status !== 401 || response.body.message !== 'Invalid API key') throw new Error(`${kind}: ${response.status}`);
        if (round >= ROUNDS / 10) timings[kind].push(elapsed); // the first tenth warms up
      }
    }
    const rows = Object.entries(timings).map(([kind, values]) => ({
      kind,
      requests: values.length,
      medianMs: Number(percentile(values, 0.5).toFixed(3)),
      p90Ms: Number(percentile(values, 0.9).toFixed(3)),
    }));
    console.table(rows);
    console.log(JSON.stringify(rows));
    await app.close();
  } finally {
    await postgres.destroy();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

/**
 * What guessing API keys costs the service, A/B of two builds (issue 45: a blocked address no longer locks valid
 * keys out, and guessing must cost no more than before):
 *   npm run bench:key-guessing -- --a <build A main.js> --b <build B main.js> \
 *     [--rounds 4] [--seconds 5] [--connections 16] [--keys 10000]
 * Both builds run at once on one throwaway PostgreSQL holding one account with `--keys` keys, behind a trusted
 * proxy (TRUST_PROXY=1: each request names its address in X-Forwarded-For), and are loaded in turn, alternating
 * which goes first. Scenarios, each with a made-up key per request:
 * - guess-fresh: every request from an address of its own, so never over the limit: each key is looked up;
 * - guess-blocked: every request from one address over its limit: refused before the database.
 * Per scenario and build: CPU ms per request (the service's), requests/s, and the database transactions per
 * 1,000 requests (pg_stat_database, the other build idle; its background work is part of the count). Then, once
 * per build: a valid key from the blocked address (200 for B, 429 for A), and the start-up load of the prefixes.
 */
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import autocannon from 'autocannon';
import { Client } from 'pg';
import { generateApiKey } from '../src/auth/api-key-token';
import { runMigrations } from '../src/database/migrate';
import { loadConfig } from '../src/config/config';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres';
import { RunningServer, startService } from './servers';
import { median } from './stats';

const arg = (name: string, fallback?: string) => {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : fallback;
};
const log = (line: string) => process.stderr.write(`[key-guessing] ${line}\n`);
const BLOCKED_ADDRESS = '192.0.2.7'; // a documentation address (RFC 5737), outside the range of freshAddress
const LIMIT = 60;

/**
 * An address of its own for each request, in the benchmarking range 198.18.0.0/15 (RFC 2544; 131,072 addresses, each
 * used at most a few times a run). Not IPv6: the limit counts an IPv6 client by its /64.
 */
const freshAddress = (n: number) => `198.${18 + ((n >>> 16) & 1)}.${(n >>> 8) & 255}.${n & 255}`;

interface Figures {
  cpuMsPerRequest: number;
  requestsPerSecond: number;
  transactionsPer1000: number;
  statuses: Record<string, number>;
}

/** The database's transactions so far, once the backends have reported theirs (an idle backend does within ~1 s). */
async function transactions(client: Client): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const [row] = (await client.query(`SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`))
    .rows as { n: string }[];
  return Number(row.n);
}

async function load(server: RunningServer, client: Client, scenario: string, seconds: number, connections: number): Promise<Figures> {
  let n = randomBytes(4).readUInt32BE();
  const headersOf = () => ({
    'x-api-key': generateApiKey().apiKey,
    'x-forwarded-for': scenario === 'guess-fresh' ? freshAddress(n++) : BLOCKED_ADDRESS,
  });
  const run = (duration: number) =>
    autocannon({
      url: server.baseUrl,
      connections,
      duration,
      requests: [{ method: 'GET', path: '/agents', setupRequest: (request: autocannon.Request) => ({ ...request, headers: headersOf() }) }],
    });
  await run(2); // warm-up (and, for guess-blocked, the address is over its limit from its 61st request)
  const cpuBefore = server.cpuSeconds();
  const xactBefore = await transactions(client);
  const result = await run(seconds);
  const cpu = server.cpuSeconds() - cpuBefore;
  const xacts = (await transactions(client)) - xactBefore - 1; // less this bench's own query
  const total = result.requests.total;
  return {
    cpuMsPerRequest: (cpu * 1000) / total,
    requestsPerSecond: total / seconds,
    transactionsPer1000: (xacts * 1000) / total,
    statuses: Object.fromEntries(Object.entries(result.statusCodeStats).map(([status, { count }]) => [status, count])),
  };
}

async function main(): Promise<void> {
  const builds = { a: arg('a')!, b: arg('b')! };
  const rounds = Number(arg('rounds', '4'));
  const seconds = Number(arg('seconds', '5'));
  const connections = Number(arg('connections', '16'));
  const keyCount = Number(arg('keys', '10000'));
  const postgres = await startThrowawayPostgres();
  const servers: RunningServer[] = [];
  const client = new Client({ connectionString: postgres.url });
  try {
    await runMigrations(postgres.url, loadConfig({}));
    await client.connect();
    const [{ id: accountId }] = (await client.query(`INSERT INTO accounts (name) VALUES ('Guessed') RETURNING id`)).rows as {
      id: number;
    }[];
    const keys = Array.from({ length: keyCount }, () => generateApiKey());
    await client.query(
      `INSERT INTO api_keys (account_id, name, scopes, prefix, key_hash) SELECT $1, 'bench', '{read,write}', p, h FROM unnest($2::text[], $3::text[]) AS k(p, h)`,
      [accountId, keys.map((key) => key.prefix), keys.map((key) => key.keyHash)],
    );
    const started = performance.now();
    await client.query(`SELECT prefix FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`);
    log(`${keyCount} keys; the prefixes' load at start-up: ${(performance.now() - started).toFixed(1)} ms (this client)`);
    for (const [name, script] of Object.entries(builds)) {
      servers.push(
        await startService({
          name,
          script,
          env: {
            DATABASE_URL: postgres.url,
            LOG_LEVEL: 'warn',
            RATE_LIMIT: '100000000',
            UNAUTHENTICATED_RATE_LIMIT: String(LIMIT),
            TRUST_PROXY: '1',
          },
          readyPath: '/health',
          logFile: path.join(os.tmpdir(), `key-guessing-${name}.log`),
        }),
      );
    }
    const results: Record<string, Record<string, Figures[]>> = {};
    for (const scenario of ['guess-fresh', 'guess-blocked']) {
      results[scenario] = { a: [], b: [] };
      for (let round = 0; round < rounds; round++) {
        for (const server of round % 2 === 0 ? servers : [...servers].reverse()) {
          results[scenario][server.name].push(await load(server, client, scenario, seconds, connections));
        }
      }
      const summary = (name: string) => {
        const figures = results[scenario][name];
        const statuses = Object.entries(figures.at(-1)!.statuses)
          .map(([status, count]) => `${status}×${count}`)
          .join(' ');
        return `${median(figures.map((f) => f.cpuMsPerRequest)).toFixed(3)} ms CPU/req, ${Math.round(median(figures.map((f) => f.requestsPerSecond)))} req/s, ${median(figures.map((f) => f.transactionsPer1000)).toFixed(1)} db xacts/1000 req (last round: ${statuses})`;
      };
      log(`${scenario}: a ${summary('a')} | b ${summary('b')}`);
    }
    for (const server of servers) {
      const valid = keys[keys.length - 1].apiKey; // never used: not in any cache
      const response = await fetch(`${server.baseUrl}/agents`, { headers: { 'x-api-key': valid, 'x-forwarded-for': BLOCKED_ADDRESS } });
      log(`${server.name}: a valid key, first used from the blocked address: ${response.status}`);
    }
    process.stdout.write(`${JSON.stringify({ keys: keyCount, rounds, seconds, connections, results }, null, 2)}\n`);
  } finally {
    for (const server of servers) await server.stop();
    await client.end().catch(() => undefined);
    await postgres.destroy();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});

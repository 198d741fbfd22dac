/**
 * The benchmark's database: an embedded PostgreSQL in its own directory under /tmp (never the repository's
 * .data), seeded once by scripts/seed.ts and reused by later runs of the same size.
 *
 * Seeding drops the calls table's hand-written indexes, runs the seed generator, and builds them again in
 * bulk (much faster than maintaining a trigram GIN index row by row), then VACUUM ANALYZE. The seed gives
 * each account 3–5 agents; the hot account is topped up to the requested number of agents.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { loadConfig } from '../src/config/config';
import { EmbeddedPostgres } from '../src/database/embedded-postgres';
import { runMigrations } from '../src/database/migrate';
import { startOnFreePort } from '../scripts/throwaway-postgres';

export interface DataShape {
  accounts: number;
  calls: number;
  /** Calls of the hot account (the first one the seed creates). */
  hotCalls: number;
  hotAgents: number;
  randomSeed: number;
}

/** What the runner needs to know about the seeded data; stored beside the cluster. */
export interface Manifest {
  shape: DataShape;
  hotAccountId: number;
  hotApiKey: string;
  seededAt: string;
  seedSeconds: number;
}

export interface BenchDatabase {
  url: string;
  dataDir: string;
  manifest: Manifest;
  stop(): Promise<void>;
}

/** Bumped when the seeded cluster must be made anew (2: clusters get LC_CTYPE C.UTF-8 for pg_trgm; 3: the name search key index). */
const MANIFEST_VERSION = 3;
const ROOT = path.resolve(__dirname, '..');

export function defaultDataDir(shape: DataShape): string {
  return path.join(os.tmpdir(), 'voice-agent-bench', `v${MANIFEST_VERSION}-${shape.calls}-calls-${shape.accounts}-accounts`);
}

function readManifest(file: string, shape: DataShape): Manifest | null {
  if (!fs.existsSync(file)) return null;
  const manifest: Manifest = JSON.parse(fs.readFileSync(file, 'utf8'));
  return JSON.stringify(manifest.shape) === JSON.stringify(shape) ? manifest : null;
}

async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url, application_name: 'voice-agent-bench' });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Runs scripts/seed.ts against the database; returns its JSON summary (the last line of its stdout). */
function runSeed(
  url: string,
  shape: DataShape,
  log: (line: string) => void,
): Promise<{ accounts: { accountId: number; apiKey: string; calls: number }[] }> {
  const args = [
    '-r',
    './scripts/register.js',
    'scripts/seed.ts',
    '--accounts',
    String(shape.accounts),
    '--calls',
    String(shape.calls),
    '--hot-share',
    String(shape.hotCalls / shape.calls),
    '--random-seed',
    String(shape.randomSeed),
  ];
  log(`seeding: node ${args.slice(2).join(' ')}`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`seed exited with ${code}`));
      const last = stdout.trim().split('\n').pop() ?? '';
      resolve(JSON.parse(last));
    });
  });
}

const AGENT_VOICES = ['shubh', 'anushka', 'manisha', 'vidya', 'arya', 'abhilash', 'karun', 'hitesh'];

async function seed(url: string, shape: DataShape, log: (line: string) => void): Promise<Omit<Manifest, 'shape' | 'seededAt'>> {
  const started = Date.now();
  await runMigrations(url, loadConfig({}));
  const indexes = await withClient(url, async (client) => {
    const { rows } = await client.query<{ indexname: string; indexdef: string }>(
      `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'calls' AND indexname LIKE 'IDX_calls_%'`,
    );
    for (const { indexname } of rows) await client.query(`DROP INDEX "${indexname}"`);
    return rows;
  });
  const summary = await runSeed(url, shape, log);
  const hot = summary.accounts[0];
  await withClient(url, async (client) => {
    log(`building ${indexes.length} indexes: ${indexes.map((index) => index.indexname).join(', ')}`);
    await client.query(`SET maintenance_work_mem = '512MB'`);
    for (const { indexdef } of indexes) await client.query(indexdef);
    const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM agents WHERE account_id = $1', [hot.accountId]);
    const missing = Math.max(0, shape.hotAgents - rows[0].n);
    await client.query(
      `INSERT INTO agents (account_id, name, description, model, voice, language, system_prompt)
       SELECT $1, 'Campaign agent ' || n, 'Outbound campaign ' || n, 'gpt-4.1', ($3::text[])[1 + n % 8], 'en-IN', 'You are a polite sales assistant.'
       FROM generate_series(1, $2::int) AS n`,
      [hot.accountId, missing, AGENT_VOICES],
    );
    log('VACUUM ANALYZE');
    await client.query('VACUUM ANALYZE');
  });
  return { hotAccountId: hot.accountId, hotApiKey: hot.apiKey, seedSeconds: Math.round((Date.now() - started) / 1000) };
}

/** Starts (or attaches to) the benchmark's PostgreSQL and seeds it unless a previous run already did. */
export async function openBenchDatabase(shape: DataShape, dataDir: string, log: (line: string) => void): Promise<BenchDatabase> {
  const manifestFile = path.join(dataDir, 'manifest.json');
  let manifest = readManifest(manifestFile, shape);
  if (!manifest && fs.existsSync(dataDir)) {
    // A half-seeded or differently shaped cluster: start again from nothing.
    log(`discarding ${dataDir} (no manifest for this shape)`);
    const stale = await startOnFreePort({ dataDir, log });
    await stale.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  fs.mkdirSync(dataDir, { recursive: true });
  fs.chmodSync(dataDir, 0o755); // the postgres system user must reach the cluster inside
  const server: EmbeddedPostgres = await startOnFreePort({ dataDir, log });
  if (manifest) {
    log(`reusing the seeded database in ${dataDir} (seeded ${manifest.seededAt})`);
  } else {
    manifest = { shape, seededAt: new Date().toISOString(), ...(await seed(server.url, shape, log)) };
    fs.writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
  }
  return { url: server.url, dataDir, manifest, stop: () => server.stop() };
}

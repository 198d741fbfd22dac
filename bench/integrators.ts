/**
 * `npm run bench:integrators`: the calls-for-integrators routes (contract section 12) on seeded data, against
 * the service compiled as `npm start` runs it, for docs/benchmarks.md "Calls for integrators".
 *
 * - Export: `GET /calls/export` (CSV and NDJSON) of an account holding 1,000,000 calls (a database of its own,
 *   seeded once under /tmp): rows per second, and the service's RSS growth sampled every 25 ms.
 * - Paging: the hot account's 100,000 calls of `npm run bench`'s database (the same one, reused) with limit=1000,
 *   following the Link headers: each page's HTTP time, and EXPLAIN ANALYZE of each page's very SQL
 *   (listCallsStatement with the page's cursor).
 * - Usage: `GET /usage` over 366 days of the hot account, per day and per agent: HTTP times and EXPLAIN ANALYZE.
 *
 * Options: --rounds N (default 3), --only export,paging,usage. Writes bench/results/<date>-integrators.json and
 * prints Markdown. Other work on the machine skews every figure: the load average is recorded with each phase.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { request as httpRequest } from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { listCallsStatement } from '../src/calls/calls.repository';
import { decodeListCursor } from '../src/calls/list-cursor';
import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { usageByAgentStatement, usageByDayStatement } from '../src/usage/usage.repository';
import { BenchDatabase, DataShape, defaultDataDir, openBenchDatabase } from './bench-database';
import { buildService, RunningServer, startService } from './servers';
import { median, percentile, round as roundTo } from './stats';

/** `npm run bench`'s full data (bench/run.ts): its database is reused as it is. */
const PAGING_SHAPE: DataShape = { accounts: 1000, calls: 1_000_000, hotCalls: 100_000, hotAgents: 50, randomSeed: 20261122 };
/** One account of a million calls, for the export. */
const EXPORT_SHAPE: DataShape = { accounts: 1, calls: 1_000_000, hotCalls: 1_000_000, hotAgents: 50, randomSeed: 20261122 };

const log = (line: string) => process.stderr.write(`[bench:integrators] ${line}\n`);
const round1 = (value: number) => roundTo(value, 1);
const round2 = (value: number) => roundTo(value);
const load = () => os.loadavg().map(round2);

function option(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : undefined;
}
const ROUNDS = Number(option('rounds') ?? 3);
const ONLY = option('only')?.split(',') ?? ['export', 'paging', 'usage'];

/** The database of a shape, migrated to the code under test (the first time, that rewrites the calls table). */
async function openMigrated(shape: DataShape): Promise<BenchDatabase> {
  const database = await openBenchDatabase(shape, defaultDataDir(shape), log);
  const started = Date.now();
  const applied = await runMigrations(database.url, loadConfig({}));
  if (applied.length) {
    log(`migrated (${applied.join(', ')}) in ${round1((Date.now() - started) / 1000)} s; VACUUM ANALYZE`);
    await withClient(database.url, (client) => client.query('VACUUM ANALYZE calls'));
  }
  return database;
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

function serviceOn(main: string, database: BenchDatabase): Promise<RunningServer> {
  return startService({
    name: 'service',
    script: main,
    env: { DATABASE_URL: database.url, LOG_LEVEL: 'warn', RATE_LIMIT: '0' },
    readyPath: '/health',
    logFile: path.join(database.dataDir, 'service-integrators.log'),
  });
}

// ---------------------------------------------------------------- export

/** A GET read to its end and dropped: bytes and line feeds counted. */
function download(url: string, apiKey: string): Promise<{ status: number; bytes: number; lineFeeds: number }> {
  return new Promise((resolve, reject) => {
    httpRequest(url, { headers: { 'X-Api-Key': apiKey } }, (response) => {
      let bytes = 0;
      let lineFeeds = 0;
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        for (let index = chunk.indexOf(10); index >= 0; index = chunk.indexOf(10, index + 1)) lineFeeds++;
      });
      response.on('end', () => resolve({ status: response.statusCode!, bytes, lineFeeds }));
      response.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

async function benchExport(main: string) {
  const database = await openMigrated(EXPORT_SHAPE);
  const service = await serviceOn(main, database);
  try {
    const { hotApiKey } = database.manifest;
    const expected = await withClient(database.url, async (client) =>
      Number((await client.query('SELECT count(*) AS n FROM calls WHERE NOT is_test')).rows[0].n),
    );
    // Warm-up: the code paths, and the start RSS after them.
    await download(`${service.baseUrl}/calls/export?days=1`, hotApiKey);
    const runs = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const format of ['csv', 'ndjson'] as const) {
        const loadBefore = load();
        const startRssMiB = service.rssMiB();
        const samples: number[] = [];
        const timer = setInterval(() => samples.push(service.rssMiB()), 25);
        const started = process.hrtime.bigint();
        const cpuBefore = service.cpuSeconds();
        const result = await download(`${service.baseUrl}/calls/export?format=${format}`, hotApiKey).finally(() => clearInterval(timer));
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        const cpuSeconds = service.cpuSeconds() - cpuBefore;
        // Flat means not growing with the count: the peak of the second half against the first's.
        const half = Math.floor(samples.length / 2);
        const peakRssMiB = Math.max(startRssMiB, ...samples);
        const firstHalfPeakMiB = Math.max(startRssMiB, ...samples.slice(0, half));
        const secondHalfPeakMiB = Math.max(startRssMiB, ...samples.slice(half));
        const rows = format === 'csv' ? result.lineFeeds - 1 : result.lineFeeds;
        if (result.status !== 200 || rows !== expected)
          throw new Error(`export ${format}: status ${result.status}, ${rows} rows (expected ${expected})`);
        const run = {
          format,
          round,
          rows,
          seconds: round2(seconds),
          rowsPerSecond: Math.round(rows / seconds),
          MiB: round1(result.bytes / 2 ** 20),
          serviceCpuMicrosecondsPerRow: round1((cpuSeconds * 1e6) / rows),
          startRssMiB,
          peakRssMiB,
          rssGrowthMiB: round1(peakRssMiB - startRssMiB),
          rssGrowthFirstHalfMiB: round1(firstHalfPeakMiB - startRssMiB),
          rssGrowthSecondHalfMiB: round1(secondHalfPeakMiB - startRssMiB),
          load: loadBefore,
          loadAfter: load(),
        };
        log(
          `export ${format} #${round}: ${run.rowsPerSecond} rows/s, ${run.seconds} s, service CPU ${run.serviceCpuMicrosecondsPerRow} µs/row, ` +
            `RSS +${run.rssGrowthMiB} MiB (first half +${run.rssGrowthFirstHalfMiB}, second +${run.rssGrowthSecondHalfMiB}; load ${loadBefore.join(' ')})`,
        );
        runs.push(run);
      }
    }
    return { calls: expected, runs };
  } finally {
    await service.stop();
    await database.stop();
  }
}

// ---------------------------------------------------------------- paging and usage

/** The statement's execution time, measured by the server (TIMING OFF: no clock reads per row, which inflate large scans). */
async function explainMs(client: Client, sql: string, values: unknown[]): Promise<number> {
  const { rows } = await client.query(`EXPLAIN (ANALYZE, TIMING OFF) ${sql}`, values);
  const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
  return Number(/Execution Time: ([\d.]+) ms/.exec(plan)![1]);
}

async function explainPlan(client: Client, sql: string, values: unknown[]): Promise<string> {
  const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`, values);
  return rows.map((row) => row['QUERY PLAN']).join('\n');
}

async function timedGet(url: string, apiKey: string): Promise<{ ms: number; body: unknown[]; link: string | null }> {
  const started = performance.now();
  const response = await fetch(url, { headers: { 'X-Api-Key': apiKey } });
  const body = (await response.json()) as unknown[];
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}`);
  return { ms: performance.now() - started, body, link: response.headers.get('link') };
}

async function benchPaging(service: RunningServer, database: BenchDatabase) {
  const { hotApiKey, hotAccountId } = database.manifest;
  const walks: { httpMs: number[]; rows: number; cursors: (string | undefined)[] }[] = [];
  for (let round = 0; round <= ROUNDS; round++) {
    // Round 0 warms the cache and is not kept.
    const httpMs: number[] = [];
    const cursors: (string | undefined)[] = [undefined];
    let rows = 0;
    let url: string | null = `${service.baseUrl}/calls?limit=1000`;
    while (url) {
      const page: { ms: number; body: unknown[]; link: string | null } = await timedGet(url, hotApiKey);
      httpMs.push(page.ms);
      rows += page.body.length;
      const next: string | null = page.link ? new URL(/^<([^>]+)>/.exec(page.link)![1]).search : null;
      url = next ? `${service.baseUrl}/calls${next}` : null;
      if (next) cursors.push(new URLSearchParams(next).get('before')!);
    }
    if (round > 0) walks.push({ httpMs, rows, cursors });
  }
  const cursors = walks[0].cursors;
  const dbMs: number[][] = cursors.map(() => []);
  await withClient(database.url, async (client) => {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, cursor] of cursors.entries()) {
        const [sql, values] = listCallsStatement(hotAccountId, {}, 1000, cursor ? decodeListCursor(cursor) : undefined);
        dbMs[index].push(await explainMs(client, sql, values));
      }
    }
  });
  const pageDb = dbMs.map(median);
  const pageHttp = cursors.map((_, index) => median(walks.map((walk) => walk.httpMs[index])));
  const [firstSql, firstValues] = listCallsStatement(hotAccountId, {}, 1000);
  const [lastSql, lastValues] = listCallsStatement(hotAccountId, {}, 1000, decodeListCursor(cursors.at(-1)!));
  const plans = await withClient(database.url, async (client) => ({
    first: await explainPlan(client, firstSql, firstValues),
    last: await explainPlan(client, lastSql, lastValues),
  }));
  return {
    pages: cursors.length,
    rows: walks[0].rows,
    database: {
      firstMs: pageDb[0],
      lastMs: pageDb.at(-1)!,
      lastFullMs: pageDb.at(-2)!,
      medianMs: median(pageDb),
      maxMs: Math.max(...pageDb),
      perPageMs: pageDb,
    },
    http: {
      firstMs: round2(pageHttp[0]),
      lastMs: round2(pageHttp.at(-1)!),
      medianMs: round2(median(pageHttp)),
      maxMs: round2(Math.max(...pageHttp)),
    },
    plans,
  };
}

/** GET /usage's times, in milliseconds, for one groupBy. */
interface UsageTimes {
  requests: number;
  httpMedianMs: number;
  httpP95Ms: number;
  httpMaxMs: number;
}

async function benchUsage(service: RunningServer, database: BenchDatabase) {
  const { hotApiKey, hotAccountId } = database.manifest;
  const to = new Date().toISOString().slice(0, 10);
  const from = new Date(Date.parse(`${to}T00:00:00Z`) - 365 * 86_400_000).toISOString().slice(0, 10);
  const calls = await withClient(database.url, async (client) =>
    Number(
      (
        await client.query(
          `SELECT count(*) AS n FROM calls WHERE account_id = $1 AND NOT is_test AND call_date >= $2 AND call_date < $3::date + 1`,
          [hotAccountId, from, to],
        )
      ).rows[0].n,
    ),
  );
  const results: { from: string; to: string; days: number; calls: number } & Partial<Record<'day' | 'agent', UsageTimes>> = {
    from,
    to,
    days: 366,
    calls,
  };
  for (const groupBy of ['day', 'agent'] as const) {
    const url = `${service.baseUrl}/usage?from=${from}&to=${to}&groupBy=${groupBy}`;
    for (let i = 0; i < 3; i++) await timedGet(url, hotApiKey);
    const times: number[] = [];
    for (let i = 0; i < 20 * ROUNDS; i++) times.push((await timedGet(url, hotApiKey)).ms);
    results[groupBy] = {
      requests: times.length,
      httpMedianMs: round2(median(times)),
      httpP95Ms: round2(percentile(times, 0.95)),
      httpMaxMs: round2(Math.max(...times)),
    };
  }
  // The database's share: the very statements the API runs, under EXPLAIN ANALYZE.
  const queries = await withClient(database.url, async (client) => {
    const statements = {
      byDay: usageByDayStatement(hotAccountId, { from, to }, 1),
      byAgent: usageByAgentStatement(hotAccountId, { from, to }, 1),
    };
    const figures: Record<string, { medianMs: number; maxMs: number; plan: string }> = {};
    for (const [name, [sql, values]] of Object.entries(statements)) {
      const times: number[] = [];
      for (let i = 0; i < 5 * ROUNDS; i++) times.push(await explainMs(client, sql, values));
      figures[name] = { medianMs: median(times), maxMs: Math.max(...times), plan: await explainPlan(client, sql, values) };
    }
    return figures;
  });
  return { ...results, database: queries };
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const started = Date.now();
  log('compiling the service (tsc, as npm start does)');
  const serviceMain = buildService();
  const result: Record<string, unknown> & Figures = {
    date: new Date().toISOString(),
    commit: execFileSync('git', ['rev-parse', 'HEAD'], { cwd: path.join(__dirname, '..'), encoding: 'utf8' }).trim(),
    machine: { cores: os.cpus().length, cpuModel: os.cpus()[0]?.model, node: process.version },
    rounds: ROUNDS,
  };
  if (ONLY.includes('export')) result.export = { loadBefore: load(), ...(await benchExport(serviceMain)), loadAfter: load() };
  if (ONLY.includes('paging') || ONLY.includes('usage')) {
    const database = await openMigrated(PAGING_SHAPE);
    const service = await serviceOn(serviceMain, database);
    try {
      if (ONLY.includes('paging')) result.paging = { loadBefore: load(), ...(await benchPaging(service, database)), loadAfter: load() };
      if (ONLY.includes('usage')) result.usage = { loadBefore: load(), ...(await benchUsage(service, database)), loadAfter: load() };
    } finally {
      await service.stop();
      await database.stop();
    }
  }
  result.seconds = Math.round((Date.now() - started) / 1000);
  const stamp = new Date().toISOString();
  const file = path.join(__dirname, 'results', `${stamp.slice(0, 10)}-${stamp.slice(11, 16).replace(':', '')}-integrators.json`);
  fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  log(`wrote ${path.relative(process.cwd(), file)}`);
  process.stdout.write(`${summary(result)}\n`);
}

/** The load averages before and after a part of the run. */
type Loaded<T> = T & { loadBefore: number[]; loadAfter: number[] };

/** What each part of the run measured (the parts run). */
interface Figures {
  export?: Loaded<Awaited<ReturnType<typeof benchExport>>>;
  paging?: Loaded<Awaited<ReturnType<typeof benchPaging>>>;
  usage?: Loaded<Awaited<ReturnType<typeof benchUsage>>>;
}

/** The figures against the targets, as Markdown. */
function summary(result: Figures): string {
  const lines = ['| Target | Measured | Met |', '|---|---|---|'];
  if (result.export) {
    const runs = result.export.runs;
    for (const format of ['csv', 'ndjson']) {
      const mine = runs.filter((run) => run.format === format);
      const slowest = Math.min(...mine.map((run) => run.rowsPerSecond));
      const growth = Math.max(...mine.map((run) => run.rssGrowthMiB));
      lines.push(
        `| Export ${format} of ${result.export.calls.toLocaleString('en')} calls ≥ 50,000 rows/s | ${mine.map((run) => run.rowsPerSecond.toLocaleString('en')).join(', ')} rows/s | ${slowest >= 50_000 ? 'yes' : 'NO'} |`,
      );
      lines.push(
        `| Export ${format}: RSS growth < 64 MiB | ${mine.map((run) => run.rssGrowthMiB).join(', ')} MiB | ${growth < 64 ? 'yes' : 'NO'} |`,
      );
    }
  }
  if (result.paging) {
    const { database, http, pages, rows } = result.paging;
    lines.push(
      `| Paging ${rows.toLocaleString('en')} calls, ${pages} pages of 1,000: every page's database time < 5 ms | max ${database.maxMs} ms, median ${database.medianMs} ms | ${database.maxMs < 5 ? 'yes' : 'NO'} |`,
    );
    lines.push(
      `| Last page as fast as the first | database: first ${database.firstMs} ms, last full ${database.lastFullMs} ms, last ${database.lastMs} ms; HTTP: first ${http.firstMs} ms, last ${http.lastMs} ms | ${database.lastFullMs <= Math.max(database.firstMs * 1.5, database.firstMs + 0.5) ? 'yes' : 'NO'} |`,
    );
  }
  if (result.usage) {
    for (const groupBy of ['day', 'agent'] as const) {
      const figures = result.usage[groupBy]!;
      const db = result.usage.database[groupBy === 'day' ? 'byDay' : 'byAgent'];
      lines.push(
        `| GET /usage 366 days (${result.usage.calls.toLocaleString('en')} calls), groupBy=${groupBy} < 50 ms | HTTP median ${figures.httpMedianMs} ms, p95 ${figures.httpP95Ms} ms, max ${figures.httpMaxMs} ms; database median ${db.medianMs} ms | ${figures.httpP95Ms < 50 ? 'yes' : 'NO'} |`,
      );
    }
  }
  return lines.join('\n');
}

main().catch((error: Error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});

/**
 * `npm run bench [-- --quick]`: the service against a raw node:http + pg baseline, on the same data.
 *
 * 1. Seeds (or reuses) an embedded PostgreSQL under /tmp: 1,000,000 calls over 1,000 accounts, the hot
 *    account holding 100,000 and 50 agents (--quick: 100,000 calls over 100 accounts, 10,000 hot).
 * 2. Starts the service and the baseline as two processes on loopback against it, checks that they give
 *    the same JSON for every scenario, then loads one at a time with autocannon from this process:
 *    per scenario a warm-up, then a measured window on the same connections, at 64 connections and
 *    (reads) at 4 connections; the CPU time each server process used per request comes from /proc.
 * 3. EXPLAIN ANALYZE of every scenario's SQL (warm cache), the service's RSS under load, and the cost of
 *    the API-key check per request (baseline: GET /bench/auth against GET /bench/noop).
 * 4. Writes bench/results/<date>[-quick].json and prints a Markdown table and the targets.
 *
 * --quick: 10 s runs (2 s warm-up + 8 s measured) at 64 connections only, the two searches as one scenario,
 * no stack-floor or key-check micro-benchmark: about 2.5 minutes (plus about 20 s the first time, to seed).
 * Full: per scenario and server, three rounds of warm-up (at least 3 s and 10 responses per connection) + 8 s
 * measured, alternating between the servers (three, because with two a scenario's ratio moved between runs on
 * the shared machine; the figures pool every round).
 *
 * Options: --quick, --seconds N (measured window), --warmup N, --rounds N, --connections N, --low-connections N,
 * --only a,b (scenario names), --skip-low-load, --profile (the service runs with --cpu-prof; the profile
 * lands in bench/results/profiles), --data-dir DIR.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { BenchDatabase, DataShape, defaultDataDir, openBenchDatabase } from './bench-database';
import { LoadFigures, LoadSample, runLoad, summarize } from './load';
import { AgentsRepository } from '../src/agents/agents.repository';
import { CallsRepository } from '../src/calls/calls.repository';
import { Database } from '../src/database/database';
import { AUTH_SQL } from './queries';
import { BENCH_AGENT_PREFIX, FLOOR_SCENARIO, loadSamples, readScenarios, Scenario, WRITE_SCENARIO } from './scenarios';
import { buildService, RunningServer, sampleRss, startServer, startService } from './servers';
import { hashApiKey } from '../src/auth/api-key-token';
import { median } from './stats';

interface Options {
  quick: boolean;
  seconds: number;
  warmup: number;
  /** Measured windows per server and scenario, alternating between the two servers. */
  rounds: number;
  connections: number;
  lowConnections: number;
  only: string[] | null;
  lowLoad: boolean;
  profile: boolean;
  dataDir: string | null;
  /** Extra Node options for the service (experiments: `--service-node-args "--trace-gc"`). */
  serviceNodeArgs: string[];
}

const FULL: DataShape = { accounts: 1000, calls: 1_000_000, hotCalls: 100_000, hotAgents: 50, randomSeed: 20261122 };
const QUICK: DataShape = { accounts: 100, calls: 100_000, hotCalls: 10_000, hotAgents: 50, randomSeed: 20261122 };
const RESULTS_DIR = path.join(__dirname, 'results');

function parseOptions(argv: string[]): Options {
  const flag = (name: string) => argv.includes(`--${name}`);
  const value = (name: string) => {
    const index = argv.indexOf(`--${name}`);
    return index >= 0 ? argv[index + 1] : undefined;
  };
  const number = (name: string, fallback: number) => {
    const raw = value(name);
    if (raw === undefined) return fallback;
    const parsed = Number(raw);
    if (!Number.isFinite(parsed) || parsed <= 0) throw new Error(`--${name} must be a positive number`);
    return parsed;
  };
  const quick = flag('quick');
  return {
    quick,
    seconds: number('seconds', 8),
    warmup: number('warmup', quick ? 2 : 3),
    rounds: number('rounds', quick ? 1 : 3),
    connections: number('connections', 64),
    lowConnections: number('low-connections', 4),
    only: value('only')?.split(',') ?? null,
    lowLoad: !flag('skip-low-load') && !quick,
    profile: flag('profile'),
    dataDir: value('data-dir') ?? null,
    serviceNodeArgs: value('service-node-args')?.split(' ').filter(Boolean) ?? [],
  };
}

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;

// ---------------------------------------------------------------- machine

async function machine(client: Client) {
  const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
  const cpus = os.cpus();
  return {
    cores: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    postgres: rows[0].server_version,
    os: `${os.type()} ${os.release()}`,
  };
}

// ---------------------------------------------------------------- same JSON from both

/** Headers whose value differs between any two responses (the clock, the request's own id). */
const PER_RESPONSE_HEADERS = new Set(['date', 'x-request-id']);

interface Answer {
  status: number;
  /** The header lines in the order sent, the per-response values masked. */
  headers: string[];
  body: string;
}

/** One GET with node:http, which keeps the headers in the order they were sent. */
function fetchAnswer(server: RunningServer, apiKey: string, urlPath: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    http
      .get(`${server.baseUrl}${urlPath}`, { headers: { 'x-api-key': apiKey }, agent: false }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const headers: string[] = [];
          for (let i = 0; i < response.rawHeaders.length; i += 2) {
            const name = response.rawHeaders[i].toLowerCase();
            headers.push(`${name}: ${PER_RESPONSE_HEADERS.has(name) ? '…' : response.rawHeaders[i + 1]}`);
          }
          resolve({ status: response.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString('utf8') });
        });
        response.on('error', reject);
      })
      .on('error', reject);
  });
}

/**
 * A few requests of every read scenario to both servers: the same status, the same headers in the same order
 * (but for the date and the request id) and byte-identical bodies. Unless the baseline runs without the
 * service's duties (`BASELINE_DUTIES=off`): then the bodies only.
 */
async function checkSameAnswers(
  scenarios: Scenario[],
  service: RunningServer,
  baseline: RunningServer,
  apiKey: string,
  compareHeaders: boolean,
) {
  const checks: { scenario: string; requests: number; identical: boolean; headersCompared: boolean }[] = [];
  for (const scenario of scenarios) {
    const next = scenario.paths!();
    let identical = true;
    for (let i = 0; i < 5; i++) {
      const urlPath = next();
      const [a, b] = await Promise.all([fetchAnswer(service, apiKey, urlPath), fetchAnswer(baseline, apiKey, urlPath)]);
      const sameHeaders = !compareHeaders || a.headers.join('\n') === b.headers.join('\n');
      if (a.status !== 200 || a.status !== b.status || a.body !== b.body || !sameHeaders) {
        identical = false;
        log(`DIFFERENT answers for ${urlPath}: service ${a.status} ${a.body.slice(0, 300)} / baseline ${b.status} ${b.body.slice(0, 300)}`);
        if (!sameHeaders) log(`  service headers: ${a.headers.join(' | ')}\n  baseline headers: ${b.headers.join(' | ')}`);
      }
    }
    checks.push({ scenario: scenario.name, requests: 5, identical, headersCompared: compareHeaders });
  }
  for (const server of [service, baseline]) {
    const response = await fetch(`${server.baseUrl}/agents`, { headers: { 'x-api-key': 'vak_not-a-key-not-a-key-not-a-key-' } });
    if (response.status !== 401) throw new Error(`${server.name} answered ${response.status} to an unknown key`);
  }
  return checks;
}

// ---------------------------------------------------------------- EXPLAIN ANALYZE

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function walk(node: PlanNode, visit: (node: PlanNode) => void): void {
  visit(node);
  for (const child of node.Plans ?? []) walk(child, visit);
}

interface SqlQuery {
  text: string;
  values: unknown[];
}

/** The statement a repository method runs (the service's own SQL), captured instead of run. */
async function statementOf(run: (database: Database) => Promise<unknown>): Promise<SqlQuery> {
  let captured: SqlQuery | undefined;
  const capture = { query: async (text: string, values: unknown[] = []) => ((captured = { text, values: [...values] }), []) };
  await run(capture as unknown as Database);
  return captured!;
}

/** The SQL a scenario's request runs in the service (and in the baseline, which calls the same repositories). */
function sqlOf(scenario: Scenario, accountId: number, urlPath: string): Promise<SqlQuery> {
  if (scenario.name === 'get-by-id') return statementOf((database) => new CallsRepository(database).get(accountId, urlPath.split('/')[2]));
  if (scenario.name === 'agents-list') return statementOf((database) => new AgentsRepository(database).list(accountId));
  const query = new URLSearchParams(urlPath.split('?')[1] ?? '');
  const number = (name: string) => (query.get(name) ? Number(query.get(name)) : undefined);
  const filters = {
    search: query.get('search') || undefined,
    status: query.get('status') || undefined,
    callStatus: query.get('callStatus') || undefined,
    agentId: number('agentId'),
    days: number('days') || undefined,
  };
  return statementOf((database) => new CallsRepository(database).list(accountId, filters, number('limit') ?? 200));
}

/** Runs per query (after a warming run): the median is kept, so that one scheduling hiccup of the shared machine is not taken for the query's time. */
const EXPLAIN_RUNS = 3;

async function explain(client: Client, query: SqlQuery) {
  await client.query(query.text, query.values); // warm the cache
  const runs = [];
  for (let i = 0; i < EXPLAIN_RUNS; i++) {
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${query.text}`, query.values);
    runs.push(rows[0]['QUERY PLAN'][0] as { Plan: PlanNode; 'Execution Time': number; 'Planning Time': number });
  }
  const result = runs.sort((a, b) => a['Execution Time'] - b['Execution Time'])[Math.floor(EXPLAIN_RUNS / 2)];
  const nodes: string[] = [];
  const indexes = new Set<string>();
  walk(result.Plan, (node) => {
    nodes.push(node['Node Type']);
    if (node['Index Name']) indexes.add(node['Index Name']);
  });
  return { executionMs: result['Execution Time'], planningMs: result['Planning Time'], nodes, indexes: [...indexes] };
}

/** Queries EXPLAINed per scenario: every sampled search term (there are 200) once. */
const EXPLAIN_SAMPLES = 200;

/** The database's time for a statement over its samples (EXPLAIN ANALYZE); a scenario's has its slow samples and scans too. */
interface ExplainFigures {
  samples: number;
  medianMs: number;
  maxMs: number;
  slowerThan20Ms?: number;
  planningMedianMs?: number;
  sequentialScan?: boolean;
  nodes: string[];
  indexes: string[];
}

async function explainScenarios(client: Client, scenarios: Scenario[], accountId: number, apiKey: string) {
  const figures: Record<string, ExplainFigures> = {};
  for (const scenario of scenarios) {
    const next = scenario.paths!();
    const samples = [];
    for (let i = 0; i < EXPLAIN_SAMPLES; i++) samples.push(await explain(client, await sqlOf(scenario, accountId, next())));
    const times = samples.map((sample) => sample.executionMs).sort((a, b) => a - b);
    figures[scenario.name] = {
      samples: samples.length,
      medianMs: median(times),
      maxMs: times[times.length - 1],
      slowerThan20Ms: times.filter((time) => time >= 20).length,
      planningMedianMs: median(samples.map((sample) => sample.planningMs)),
      sequentialScan: samples.some((sample) => sample.nodes.includes('Seq Scan')),
      nodes: [...new Set(samples.flatMap((sample) => sample.nodes))],
      indexes: [...new Set(samples.flatMap((sample) => sample.indexes))],
    };
  }
  const auth = [];
  for (let i = 0; i < 20; i++) auth.push(await explain(client, { text: AUTH_SQL, values: [hashApiKey(apiKey)] }));
  const authTimes = auth.map((sample) => sample.executionMs).sort((a, b) => a - b);
  figures.auth = { samples: auth.length, medianMs: authTimes[10], maxMs: authTimes[19], indexes: auth[0].indexes, nodes: auth[0].nodes };
  return figures;
}

// ---------------------------------------------------------------- load

/** The load figures, plus the server process's CPU time per request (user + system, from /proc). */
type ServerFigures = LoadFigures & { cpuMsPerRequest: number; rss?: { peakMiB: number; meanMiB: number } };

interface ScenarioResult {
  scenario: string;
  description: string;
  read: boolean;
  connections: number;
  service: ServerFigures;
  baseline: ServerFigures;
  throughputRatio: number;
  p99Ratio: number;
}

async function measure(
  scenario: Scenario,
  servers: { service: RunningServer; baseline: RunningServer },
  apiKey: string,
  options: Options,
  connections: number,
): Promise<ScenarioResult> {
  const samples = { service: [] as LoadSample[], baseline: [] as LoadSample[] };
  const cpu = { service: 0, baseline: 0 };
  const rssPeaks: number[] = [];
  const rssMeans: number[] = [];
  for (let round = 0; round < options.rounds; round++) {
    // Alternate which server goes first, so that a change in the machine's background load hits both.
    const order = round % 2 === 0 ? (['service', 'baseline'] as const) : (['baseline', 'service'] as const);
    for (const which of order) {
      const server = servers[which];
      let cpuAtStart = 0;
      let stopRss: (() => { peakMiB: number; meanMiB: number }) | null = null;
      const sample = await runLoad({ baseUrl: server.baseUrl, apiKey }, scenario, {
        connections,
        warmupSeconds: options.warmup,
        seconds: options.seconds,
        agentPrefix: BENCH_AGENT_PREFIX,
        onMeasure: (phase) => {
          if (phase === 'start') {
            cpuAtStart = server.cpuSeconds();
            if (which === 'service') stopRss = sampleRss(server);
            return;
          }
          cpu[which] += server.cpuSeconds() - cpuAtStart;
          const rss = stopRss?.();
          if (rss) {
            rssPeaks.push(rss.peakMiB);
            rssMeans.push(rss.meanMiB);
          }
        },
      });
      samples[which].push(sample);
    }
  }
  const figures = (which: 'service' | 'baseline'): ServerFigures => {
    const summary = summarize(connections, samples[which]);
    const cpuMsPerRequest = Math.round((cpu[which] * 1e6) / Math.max(1, summary.requests)) / 1000;
    log(
      `${scenario.name.padEnd(20)} c=${String(connections).padStart(2)} ${which.padEnd(8)} ${String(summary.requestsPerSecond).padStart(8)} req/s  ` +
        `p50 ${summary.p50Ms} ms  p99 ${summary.p99Ms} ms  cpu ${cpuMsPerRequest} ms/req${summary.non2xx || summary.errors ? `  NON-2XX ${summary.non2xx} ERRORS ${summary.errors}` : ''}`,
    );
    return { ...summary, cpuMsPerRequest };
  };
  const service: ServerFigures = {
    ...figures('service'),
    rss: { peakMiB: Math.max(...rssPeaks), meanMiB: Math.round((rssMeans.reduce((a, b) => a + b, 0) / rssMeans.length) * 10) / 10 },
  };
  const baseline = figures('baseline');
  return {
    scenario: scenario.name,
    description: scenario.description,
    read: scenario.read,
    connections,
    service,
    baseline,
    throughputRatio: ratio(service.requestsPerSecond, baseline.requestsPerSecond),
    p99Ratio: ratio(service.p99Ms, baseline.p99Ms),
  };
}

/** Per-request cost of the key check on the baseline: time per request with it minus without it, at saturation. */
async function authCost(baseline: RunningServer, apiKey: string, options: Options) {
  const run = async (urlPath: string) => {
    const scenario: Scenario = { name: urlPath, description: urlPath, read: true, paths: () => () => urlPath };
    const load = { connections: options.connections, warmupSeconds: options.warmup, seconds: options.seconds / 2, agentPrefix: '' };
    return summarize(options.connections, [await runLoad({ baseUrl: baseline.baseUrl, apiKey }, scenario, load)]);
  };
  const noop = await run('/bench/noop');
  const auth = await run('/bench/auth');
  return {
    noopRequestsPerSecond: noop.requestsPerSecond,
    authRequestsPerSecond: auth.requestsPerSecond,
    microsecondsPerRequest: Math.round(1e6 / auth.requestsPerSecond - 1e6 / noop.requestsPerSecond),
  };
}

// ---------------------------------------------------------------- report

function markdownTable(results: ScenarioResult[]): string {
  const lines = [
    '| Scenario | Conn. | Service req/s | Baseline req/s | Ratio | Service p50 / p99 ms | Baseline p50 / p99 ms | p99 ratio | CPU ms/req service / baseline |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of results) {
    lines.push(
      `| ${r.description} | ${r.connections} | ${r.service.requestsPerSecond} | ${r.baseline.requestsPerSecond} | ${r.throughputRatio} | ` +
        `${r.service.p50Ms} / ${r.service.p99Ms} | ${r.baseline.p50Ms} / ${r.baseline.p99Ms} | ${r.p99Ratio} | ${r.service.cpuMsPerRequest} / ${r.baseline.cpuMsPerRequest} |`,
    );
  }
  return lines.join('\n');
}

function targets(results: ScenarioResult[], explained: Record<string, ExplainFigures>, rssPeak: number) {
  const checks: { target: string; pass: boolean; value: string }[] = [];
  for (const r of results.filter((result) => result.read)) {
    checks.push({
      target: `${r.scenario} @${r.connections}: throughput ≥ 0.8 × baseline`,
      pass: r.throughputRatio >= 0.8,
      value: String(r.throughputRatio),
    });
    checks.push({ target: `${r.scenario} @${r.connections}: p99 ≤ 1.25 × baseline`, pass: r.p99Ratio <= 1.25, value: String(r.p99Ratio) });
  }
  for (const r of results.filter((result) => result.scenario === WRITE_SCENARIO.name)) {
    checks.push({
      target: `${r.scenario} @${r.connections}: throughput ≥ 0.7 × baseline`,
      pass: r.throughputRatio >= 0.7,
      value: String(r.throughputRatio),
    });
  }
  if (explained.list)
    checks.push({
      target: 'GET /calls database time < 3 ms',
      pass: explained.list.maxMs < 3,
      value: `median ${explained.list.medianMs} ms, max ${explained.list.maxMs} ms`,
    });
  for (const name of ['search-name', 'search-phone', 'search']) {
    const figures = explained[name];
    if (!figures) continue;
    checks.push({ target: `${name}: no sequential scan`, pass: !figures.sequentialScan, value: figures.nodes.join(', ') });
    checks.push({
      target: `${name}: database time < 20 ms`,
      pass: figures.maxMs < 20,
      value: `median ${figures.medianMs} ms, max ${figures.maxMs} ms, ${figures.slowerThan20Ms} of ${figures.samples} terms ≥ 20 ms`,
    });
  }
  checks.push({ target: 'service RSS under load < 300 MiB', pass: rssPeak < 300, value: `${rssPeak} MiB` });
  return checks;
}

// ---------------------------------------------------------------- main

/** The commit measured, and the source files changed since (uncommitted work changes the figures). */
function codeVersion(): { commit: string; uncommittedSourceFiles: string[] } {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: path.join(__dirname, '..'), encoding: 'utf8' }).trim();
  try {
    return {
      commit: git('rev-parse', 'HEAD'),
      uncommittedSourceFiles: git('status', '--porcelain', '--', 'src').split('\n').filter(Boolean),
    };
  } catch {
    return { commit: 'unknown', uncommittedSourceFiles: [] };
  }
}

/** The agents the write scenario created: gone, so that GET /agents keeps listing the same 50. */
async function deleteBenchAgents(client: Client, accountId: number): Promise<void> {
  await client.query('DELETE FROM agents WHERE account_id = $1 AND name = $2', [accountId, BENCH_AGENT_PREFIX]);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const started = Date.now();
  const shape = options.quick ? QUICK : FULL;
  const database: BenchDatabase = await openBenchDatabase(shape, options.dataDir ?? defaultDataDir(shape), log);
  const client = new Client({ connectionString: database.url, application_name: 'voice-agent-bench' });
  await client.connect();
  const { hotAccountId, hotApiKey } = database.manifest;
  const servers: RunningServer[] = [];
  // Ctrl-C: stop both servers (and the database if this run started it) before leaving.
  const interrupted = () =>
    void Promise.all(servers.map((server) => server.stop())).finally(() => database.stop().finally(() => process.exit(130)));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    await deleteBenchAgents(client, hotAccountId);
    const samples = await loadSamples(client, hotAccountId);
    const all = [...readScenarios(samples, { mergeSearch: options.quick }), WRITE_SCENARIO, ...(options.quick ? [] : [FLOOR_SCENARIO])];
    const scenarios = all.filter((scenario) => !options.only || options.only.includes(scenario.name));
    const reads = scenarios.filter((scenario) => scenario.read);
    const loadBefore = os.loadavg();

    const profileDir = path.join(RESULTS_DIR, 'profiles');
    if (options.profile) fs.mkdirSync(profileDir, { recursive: true });
    // --profile: both servers write a .cpuprofile (service-<time>, baseline-<time>) to compare their flame graphs.
    const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15);
    const profileArgs = (name: string) =>
      options.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}-${stamp}.cpuprofile`] : [];
    // One public address for both, so that the next page's Link is the same text from either.
    const env = { DATABASE_URL: database.url, PUBLIC_BASE_URL: 'http://localhost:3000' };
    // The baseline does the service's duties per response (its log line, headers, rate limit) unless told not to.
    const baselineDuties = process.env.BASELINE_DUTIES !== 'off';
    log('compiling the service (tsc, as npm start does)');
    const serviceMain = buildService();
    const service = await startService({
      name: 'service',
      script: serviceMain,
      // Production settings, with the per-account rate limit counting as always, but out of reach: the
      // benchmark sends thousands of requests a second with one key.
      env: { ...env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', RATE_LIMIT: '100000000' },
      readyPath: '/health',
      nodeArgs: [...options.serviceNodeArgs, ...profileArgs('service')],
      logFile: path.join(database.dataDir, 'service.log'),
    });
    servers.push(service);
    const baseline = await startServer({
      name: 'baseline',
      script: 'bench/baseline-server.ts',
      typescript: true,
      env: { ...env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', RATE_LIMIT: '100000000' },
      readyPath: '/bench/noop',
      nodeArgs: profileArgs('baseline'),
      logFile: path.join(database.dataDir, 'baseline.log'),
    });
    servers.push(baseline);
    log(`service ${service.baseUrl} (pid ${service.pid}), baseline ${baseline.baseUrl} (pid ${baseline.pid})`);

    const sameAnswers = await checkSameAnswers(
      scenarios.filter((scenario) => scenario.paths),
      service,
      baseline,
      hotApiKey,
      baselineDuties,
    );
    const explained = await explainScenarios(client, reads, hotAccountId, hotApiKey);
    const idleRssMiB = service.rssMiB();

    const results: ScenarioResult[] = [];
    for (const scenario of scenarios) {
      results.push(await measure(scenario, { service, baseline }, hotApiKey, options, options.connections));
      if (!scenario.read) await deleteBenchAgents(client, hotAccountId);
    }
    if (options.lowLoad) {
      for (const scenario of reads)
        results.push(await measure(scenario, { service, baseline }, hotApiKey, options, options.lowConnections));
    }
    const auth = options.only || options.quick ? null : await authCost(baseline, hotApiKey, options);
    const rssPeak = Math.max(...results.map((result) => result.service.rss?.peakMiB ?? 0));
    const checks = targets(results, explained, rssPeak);

    const report = {
      date: new Date().toISOString(),
      mode: options.quick ? 'quick' : 'full',
      code: codeVersion(),
      options,
      machine: {
        ...(await machine(client)),
        loadAverageBefore: loadBefore.map((v) => Math.round(v * 100) / 100),
        loadAverageAfter: os.loadavg().map((v) => Math.round(v * 100) / 100),
      },
      data: {
        ...shape,
        seededAt: database.manifest.seededAt,
        seedSeconds: database.manifest.seedSeconds,
        samples: { callIds: samples.callIds.length, nameTerms: samples.nameTerms.length, phoneTerms: samples.phoneTerms.length },
      },
      baseline: { duties: baselineDuties },
      sameAnswers,
      scenarios: results,
      databaseTime: explained,
      serviceRss: { idleMiB: idleRssMiB, peakUnderLoadMiB: rssPeak },
      apiKeyAuth: { ...auth, databaseMedianMs: explained.auth.medianMs },
      targets: checks,
      seconds: Math.round((Date.now() - started) / 1000),
    };
    fs.mkdirSync(RESULTS_DIR, { recursive: true });
    const file = path.join(
      RESULTS_DIR,
      `${report.date.slice(0, 10)}${options.quick ? '-quick' : ''}${options.only ? '-partial' : ''}.json`,
    );
    fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);

    process.stdout.write(`\n${markdownTable(results)}\n\n`);
    for (const check of checks) process.stdout.write(`${check.pass ? 'PASS' : 'FAIL'}  ${check.target}: ${check.value}\n`);
    process.stdout.write(`\nResults: ${path.relative(process.cwd(), file)} (${report.seconds} s)\n`);
  } finally {
    for (const server of servers.reverse()) await server.stop();
    await deleteBenchAgents(client, hotAccountId).catch(() => undefined);
    await client.end();
    await database.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

/**
 * Webhooks benchmark (`npm run bench:webhooks`): two service instances (compiled by tsc, as `npm start` runs
 * them) on a throwaway embedded PostgreSQL, one serving the API (JOB_WORKERS=false), the other working the
 * queues; a receiver that answers 204 at once in its own process; the load generated from this process; all
 * on loopback, all removed at the end. Three measurements (issue 16):
 *
 * 1. Delivery throughput: a backlog of events (written straight into the outbox, as the calls' transactions
 *    leave them) relayed to their deliveries and drained to the receiver; the rate between its first and last
 *    request.
 * 2. The outbox's cost on `POST /calls`: an account with no webhook; one with a subscribed webhook, its
 *    deliveries made meanwhile on the same cores; the same with the worker paused during the run (the outbox
 *    write alone). Alternated; throughput, and CPU per call of the services and PostgreSQL (steadier than
 *    throughput on shared cores).
 * 3. Latency from the commit to the receiver's first byte at 100 events per second: `POST /calls` paced at
 *    100/s; each event timed from the moment its POST was sent (an upper bound of the commit) to the
 *    arrival of its delivery's headers at the receiver.
 *
 * Prints the figures, and writes bench/results/webhooks-<date>.json with them and the machine's load.
 * Options: --backlog 10000 --seconds 15 --rounds 3 --rate 100 --latency-seconds 30 --connections 32;
 * --only throughput|cost|latency (no file written); --profile.
 */
import { ChildProcess, execFileSync, fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import autocannon from 'autocannon'; // typed in scripts/autocannon.d.ts
import { Client } from 'pg';
import PgBoss from 'pg-boss';
import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres';
import { buildService, RunningServer, startService } from './servers';
import { median, percentileOfSorted, round } from './stats';

const ROOT = path.resolve(__dirname, '..');

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
}

const log = (line: string) => process.stderr.write(`[bench:webhooks] ${line}\n`);
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const loadAverage = () => os.loadavg().map((value) => round(value, 2));

const CALL = {
  name: 'Priya Sharma',
  phone: '+91-98765-43210',
  status: 'qualified',
  callStatus: 'completed',
  channel: 'phone',
  durationSeconds: 95,
  transcript: [
    { speaker: 'agent', text: 'नमस्ते! मैं आपकी कैसे मदद कर सकती हूँ?' },
    { speaker: 'user', text: 'मुझे 2BHK फ्लैट चाहिए, पुणे में।' },
    { speaker: 'agent', text: 'ज़रूर। आपका बजट क्या है?' },
    { speaker: 'user', text: 'लगभग 80 लाख।' },
  ],
  extractedData: { city: 'Pune', budget: '80 lakh' },
};

const CLOCK_TICKS_PER_SECOND = 100;

/** /proc/<pid>/stat fields after the command name: [ppid, utime, stime, cutime, cstime]. */
function procStat(pid: number): { ppid: number; own: number; children: number } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      ppid: Number(fields[1]),
      own: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND,
      children: (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS_PER_SECOND,
    };
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds used so far by the service process and by PostgreSQL (the postmaster, its live processes, and
 * the processes it has reaped): what a request costs the machine, whatever else runs on it (throughput on
 * these shared cores moves with the other users' load; CPU per request much less).
 */
function cpuMeter(servicePids: number[], postmasterPid: number): () => { service: number; postgres: number } {
  return () => {
    const postmaster = procStat(postmasterPid)!;
    let postgres = postmaster.own + postmaster.children;
    for (const entry of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = procStat(Number(entry));
      if (stat?.ppid === postmasterPid) postgres += stat.own;
    }
    return { service: servicePids.reduce((sum, pid) => sum + procStat(pid)!.own, 0), postgres };
  };
}

interface ReceiverReport {
  count: number;
  first: number | null;
  last: number | null;
  calls?: [string | null, number][];
}

/** The receiver process, and its IPC. */
class ReceiverProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {}

  static async start(): Promise<ReceiverProcess> {
    const child = fork(path.join(__dirname, 'webhook-receiver-process.ts'), [], { cwd: ROOT, execArgv: ['-r', './scripts/register.js'] });
    const { port } = await new Promise<{ port: number }>((resolve) => child.once('message', resolve));
    return new ReceiverProcess(child, port);
  }

  private ask<T>(message: object): Promise<T> {
    return new Promise((resolve) => {
      this.child.once('message', resolve);
      this.child.send(message);
    });
  }

  reset = () => this.ask<void>({ command: 'reset' });
  report = (withCalls = false) => this.ask<ReceiverReport>({ command: 'report', withCalls });

  async waitFor(count: number, timeoutMs = 300_000): Promise<ReceiverReport> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const report = await this.report();
      if (report.count >= count) return report;
      if (Date.now() > deadline) throw new Error(`the receiver got ${report.count} deliveries, expected ${count}`);
      await sleep(100);
    }
  }

  stop(): void {
    this.child.disconnect();
  }
}

/** The API's answer, its body taken for a `T` (the benchmark reads a few fields of what it created). */
async function api<T = unknown>(
  baseUrl: string,
  apiKey: string,
  method: string,
  urlPath: string,
  body?: object,
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${baseUrl}${urlPath}`, {
    method,
    headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' },
    body: body && JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

function createAccount(env: Record<string, string>, name: string): { accountId: number; apiKey: string } {
  const output = execFileSync(process.execPath, ['-r', './scripts/register.js', 'src/cli/cli.ts', 'account:create', '--name', name], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return JSON.parse(output.trim().split('\n').at(-1)!);
}

/** 1. A backlog of `size` events written at once to the outbox, relayed and delivered to the receiver: deliveries per second. */
async function deliveryThroughput(
  databaseUrl: string,
  baseUrl: string,
  receiver: ReceiverProcess,
  account: { accountId: number; apiKey: string },
  size: number,
) {
  const webhook = (
    await api<{ id: number }>(baseUrl, account.apiKey, 'POST', '/webhooks', {
      url: `http://127.0.0.1:${receiver.port}/hooks`,
      events: ['call.created'],
    })
  ).body;
  const call =
    (await api<{ id: number }[]>(baseUrl, account.apiKey, 'GET', '/calls?limit=1')).body[0] ??
    (await api<{ id: number }>(baseUrl, account.apiKey, 'POST', '/calls', { ...CALL, isTest: true })).body;
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  const boss = new PgBoss({ connectionString: databaseUrl, schema: 'pgboss', supervise: false, schedule: false, migrate: false });
  await boss.start();
  try {
    await receiver.reset();
    // The outbox as the calls' transactions leave it, then one relay job.
    await client.query(
      `INSERT INTO webhook_outbox (account_id, event_id, type, call_id, body, created_at)
       SELECT $1, id, 'call.created', $2, '{"id":"evt_' || replace(id::text, '-', '') || '","type":"call.created","createdAt":"' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '","data":' || $3 || '}', now()
         FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, $4)) AS ids`,
      [account.accountId, call.id, JSON.stringify(call), size],
    );
    const queuedAt = now();
    await boss.send('webhooks.relay', {});
    await client.query(`SELECT pg_notify('job_queued', 'webhooks.relay')`);
    const report = await receiver.waitFor(size);
    const seconds = (report.last! - report.first!) / 1000;
    const result = {
      deliveries: size,
      secondsFirstToLast: round(seconds, 2),
      deliveriesPerSecond: Math.round((size - 1) / seconds),
      secondsFromQueuedToLast: round((report.last! - queuedAt) / 1000, 2),
    };
    const { rows: statuses } = await client.query(
      `SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE account_id = $1 GROUP BY status`,
      [account.accountId],
    );
    await api(baseUrl, account.apiKey, 'DELETE', `/webhooks/${webhook.id}`);
    log(`delivery throughput: ${JSON.stringify(result)}; statuses ${JSON.stringify(statuses)}`);
    return result;
  } finally {
    await boss.stop({ graceful: false, wait: true });
    await client.end();
  }
}

/** POST /calls for `seconds` with autocannon; returns 201s per second. */
async function postCalls(
  baseUrl: string,
  apiKey: string,
  seconds: number,
  connections: number,
): Promise<{ created: number; perSecond: number }> {
  const result = await autocannon({
    url: `${baseUrl}/calls`,
    method: 'POST',
    connections,
    duration: seconds,
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify(CALL),
  });
  if (result.non2xx || result.errors) throw new Error(`POST /calls: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { created: result['2xx'], perSecond: Math.round(result['2xx'] / result.duration) };
}

/** Waits until the receiver got `count` deliveries and the account has no pending one; returns when that was. */
async function drained(client: Client, receiver: ReceiverProcess, count: number, accountId: number): Promise<number> {
  // The receiver first (no query while deliveries are still coming), then the database to be sure.
  await receiver.waitFor(count);
  for (;;) {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE account_id = $1 AND status = 'pending'`,
      [accountId],
    );
    if (rows[0].n === 0) return now();
    await sleep(250);
  }
}

type Variant = 'without' | 'with' | 'deferred';

/**
 * 2. POST /calls (to the API instance) with no webhook; with one subscribed webhook, its deliveries made
 * meanwhile by the worker instance on the same two cores; and the same with the worker instance paused
 * (SIGSTOP) during the run, so that what is measured is the outbox write alone. Alternated; after each run
 * with a webhook the deliveries are drained (the worker resumed) before the next.
 */
async function outboxCost(
  databaseUrl: string,
  cpu: ReturnType<typeof cpuMeter>,
  baseUrl: string,
  receiver: ReceiverProcess,
  worker: { pid: number },
  plain: { apiKey: string },
  subscribed: { accountId: number; apiKey: string },
  seconds: number,
  rounds: number,
  connections: number,
) {
  const webhook = (
    await api<{ id: number }>(baseUrl, subscribed.apiKey, 'POST', '/webhooks', {
      url: `http://127.0.0.1:${receiver.port}/hooks`,
      events: ['call.created'],
    })
  ).body;
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  // Warm-up of both paths (JIT, pool, the receiver's connections).
  await postCalls(baseUrl, plain.apiKey, 5, connections);
  await receiver.reset();
  const warm = await postCalls(baseUrl, subscribed.apiKey, 5, connections);
  await drained(client, receiver, warm.created, subscribed.accountId);
  const results: Record<Variant, number[]> = { without: [], with: [], deferred: [] };
  /** CPU milliseconds (service + PostgreSQL) per call created during the run; and until its deliveries drained. */
  const cpuPerCall: Record<Variant, number[]> = { without: [], with: [], deferred: [] };
  const cpuPerCallDrained: Record<Variant, number[]> = { without: [], with: [], deferred: [] };
  const drainSeconds: Record<'with' | 'deferred', number[]> = { with: [], deferred: [] };
  const orders: Variant[][] = [
    ['without', 'with', 'deferred'],
    ['deferred', 'without', 'with'],
    ['with', 'deferred', 'without'],
  ];
  for (let index = 0; index < rounds; index++) {
    for (const variant of orders[index % orders.length]) {
      // Each run starts from a vacuumed, checkpointed database: the clean-up of the rows a run wrote (autovacuum,
      // the next checkpoint's writes) is not billed to the run after it.
      await client.query('VACUUM (ANALYZE)');
      await client.query('CHECKPOINT');
      const before = cpu();
      let created: number;
      let afterRun: ReturnType<typeof cpu>;
      if (variant === 'without') {
        const run = await postCalls(baseUrl, plain.apiKey, seconds, connections);
        afterRun = cpu();
        results.without.push(run.perSecond);
        created = run.created;
      } else {
        await receiver.reset();
        if (variant === 'deferred') process.kill(worker.pid, 'SIGSTOP');
        const run = await postCalls(baseUrl, subscribed.apiKey, seconds, connections);
        afterRun = cpu();
        const endedAt = now();
        if (variant === 'deferred') process.kill(worker.pid, 'SIGCONT');
        results[variant].push(run.perSecond);
        created = run.created;
        drainSeconds[variant].push(round(((await drained(client, receiver, run.created, subscribed.accountId)) - endedAt) / 1000, 1));
      }
      const afterDrain = cpu();
      const perCall = (from: typeof before, to: typeof before) =>
        round(((to.service - from.service + to.postgres - from.postgres) * 1000) / created, 3);
      cpuPerCall[variant].push(perCall(before, afterRun));
      cpuPerCallDrained[variant].push(perCall(before, afterDrain));
      log(
        `POST /calls, ${variant}: ${results[variant].at(-1)}/s; CPU per call ${cpuPerCall[variant].at(-1)} ms during the run ` +
          `(service ${round(((afterRun.service - before.service) * 1000) / created, 3)}, PostgreSQL ${round(((afterRun.postgres - before.postgres) * 1000) / created, 3)}), ` +
          `${cpuPerCallDrained[variant].at(-1)} ms with the drain`,
      );
    }
  }
  await client.end();
  await api(baseUrl, subscribed.apiKey, 'DELETE', `/webhooks/${webhook.id}`);
  const result = {
    connections,
    seconds,
    withoutWebhookPerSecond: results.without,
    withWebhookAnsweringPerSecond: results.with,
    withWebhookDeliveriesDeferredPerSecond: results.deferred,
    deliveriesDrainedSecondsAfterRun: drainSeconds,
    ratioAnswering: round(median(results.with) / median(results.without), 3),
    ratioDeferred: round(median(results.deferred) / median(results.without), 3),
    cpuMsPerCallDuringRun: cpuPerCall,
    cpuMsPerCallUntilDrained: cpuPerCallDrained,
    /**
     * The throughput ratios that CPU-bound cores give, from CPU per call (steadier than throughput on shared
     * cores): with the deliveries' own work counted (until drained); and the outbox write alone (during the
     * run, while the worker is paused).
     */
    cpuRatioAnswering: round(median(cpuPerCall.without) / median(cpuPerCallDrained.with), 3),
    cpuRatioOutboxWrite: round(median(cpuPerCall.without) / median(cpuPerCall.deferred), 3),
  };
  log(`outbox cost: ${JSON.stringify(result)}`);
  return result;
}

/** 3. POST /calls paced at `rate` per second for `seconds`; each event's latency from its POST to its delivery. */
async function latency(baseUrl: string, receiver: ReceiverProcess, account: { apiKey: string }, rate: number, seconds: number) {
  const webhook = (
    await api<{ id: number }>(baseUrl, account.apiKey, 'POST', '/webhooks', {
      url: `http://127.0.0.1:${receiver.port}/hooks`,
      events: ['call.created'],
    })
  ).body;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const body = JSON.stringify(CALL);
  const sentAt = new Map<string, number>();
  const post = () =>
    new Promise<void>((resolve, reject) => {
      const started = now();
      const request = http.request(
        `${baseUrl}/calls`,
        { method: 'POST', agent, headers: { 'x-api-key': account.apiKey, 'content-type': 'application/json' } },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            if (response.statusCode !== 201) return reject(new Error(`POST /calls answered ${response.statusCode}`));
            sentAt.set(JSON.parse(Buffer.concat(chunks).toString('utf8')).id, started);
            resolve();
          });
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  await receiver.reset();
  const total = rate * seconds;
  const start = now();
  const posts: Promise<void>[] = [];
  for (let index = 0; index < total; index++) {
    const due = start + (index * 1000) / rate;
    const wait = due - now();
    if (wait > 1) await sleep(wait);
    posts.push(post());
  }
  await Promise.all(posts);
  const report = await receiver.waitFor(total);
  const { calls } = await receiver.report(true);
  const latencies = calls!
    .filter(([id]) => id && sentAt.has(id))
    .map(([id, arrivedAt]) => arrivedAt - sentAt.get(id!)!)
    .sort((a, b) => a - b);
  const percentile = (fraction: number) => round(percentileOfSorted(latencies, fraction), 1);
  agent.destroy();
  await api(baseUrl, account.apiKey, 'DELETE', `/webhooks/${webhook.id}`);
  const result = {
    ratePerSecond: rate,
    seconds,
    events: latencies.length,
    achievedRatePerSecond: round(total / ((report.last! - start) / 1000), 1),
    p50Ms: percentile(0.5),
    p90Ms: percentile(0.9),
    p99Ms: percentile(0.99),
    maxMs: round(latencies.at(-1)!, 1),
  };
  log(`latency: ${JSON.stringify(result)}`);
  return result;
}

async function main(): Promise<void> {
  const backlog = option('backlog', 10_000);
  const seconds = option('seconds', 15);
  const rounds = option('rounds', 3);
  const rate = option('rate', 100);
  const latencySeconds = option('latency-seconds', 30);
  const connections = option('connections', 32);
  const loadAtStart = loadAverage();
  log(`load average at start: ${loadAtStart.join(' ')}`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'webhooks-bench-'));
  const main = buildService();
  const postgres = await startThrowawayPostgres();
  let receiver: ReceiverProcess | undefined;
  let service: RunningServer | undefined;
  let worker: RunningServer | undefined;
  try {
    const env = { DATABASE_URL: postgres.url, LOG_LEVEL: 'warn' };
    await runMigrations(postgres.url, loadConfig({}));
    const accounts = ['throughput', 'plain', 'subscribed', 'latency'].map((name) => createAccount(env, `Bench ${name}`));
    receiver = await ReceiverProcess.start();
    // Two instances, as deployed to scale deliveries apart from the API: one serves the API and only queues
    // jobs (JOB_WORKERS=false), the other works the queues. Same database, same two cores.
    const serverSpec = (name: string, jobWorkers: boolean) => ({
      name,
      script: main,
      env: {
        ...env,
        RATE_LIMIT: '0',
        DATA_DIR: path.join(work, 'data'),
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
        JOB_WORKERS: String(jobWorkers),
      },
      readyPath: '/health',
      logFile: path.join(work, `${name}.log`),
      // --profile: CPU profiles, written to /tmp/webhooks-bench-profile at exit.
      nodeArgs: process.argv.includes('--profile') ? ['--cpu-prof', '--cpu-prof-dir=/tmp/webhooks-bench-profile'] : [],
    });
    service = await startService(serverSpec('api', false));
    worker = await startService(serverSpec('worker', true));
    // --only cost (or throughput, latency): one measurement, for experiments; results are written only for all three.
    const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
    const throughput =
      !only || only === 'throughput' ? await deliveryThroughput(postgres.url, service.baseUrl, receiver, accounts[0], backlog) : undefined;
    const postmasterPid = Number(fs.readFileSync(path.join(postgres.dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const cpu = cpuMeter([service.pid, worker.pid], postmasterPid);
    const cost =
      !only || only === 'cost'
        ? await outboxCost(postgres.url, cpu, service.baseUrl, receiver, worker, accounts[1], accounts[2], seconds, rounds, connections)
        : undefined;
    const latencyResult =
      !only || only === 'latency' ? await latency(service.baseUrl, receiver, accounts[3], rate, latencySeconds) : undefined;
    if (!throughput || !cost || !latencyResult) return;
    const loadAtEnd = loadAverage();
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const results = {
      date: new Date().toISOString(),
      commit,
      machine: { cpus: os.cpus().length, loadAverageAtStart: loadAtStart, loadAverageAtEnd: loadAtEnd },
      deliveryThroughput: { ...throughput, target: '>= 500/s', met: throughput.deliveriesPerSecond >= 500 },
      outboxCostOnPostCalls: { ...cost, target: '>= 0.9' },
      commitToFirstByteLatency: { ...latencyResult, target: 'p99 < 1000 ms', met: latencyResult.p99Ms < 1000 },
    };
    const file = path.join(
      ROOT,
      'bench',
      'results',
      `webhooks-${results.date
        .slice(0, 16)
        .replace(/[-:T]/g, '')
        .replace(/^(\d{8})/, '$1-')}.json`,
    );
    fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    log(`load average at end: ${loadAtEnd.join(' ')}; wrote ${path.relative(ROOT, file)}`);
    process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  } finally {
    receiver?.stop();
    await service?.stop();
    await worker?.stop();
    await postgres.destroy();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

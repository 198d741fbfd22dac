/**
 * Recordings benchmark (`npm run bench:recordings`): moving a 100 MiB recording through the service
 * (local storage driver) compared with a bare Node server doing plain fs streams, in the same run, on loopback.
 *
 * - Download: one client, then 20 clients at once; MiB/s and the server's peak RSS growth (sampled every 25 ms).
 * - Upload: the same, with PUT /calls/{callId}/recording (each client to its own call).
 * - The signed playback URL (local driver), one client.
 *
 * Both servers run as their own processes (the service compiled by tsc, as `npm start` runs it) against a
 * throwaway embedded PostgreSQL and throwaway data directories, all removed at the end. Each scenario runs
 * 3 rounds alternating between the servers. Prints a Markdown table on stdout, progress on stderr.
 * Options: --size-mib 100 --clients 20.
 */
import { execFileSync } from 'node:child_process';
import { createReadStream, createWriteStream, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres';
import { buildService, RunningServer, startServer, startService } from './servers';
import { median, round } from './stats';

const ROOT = path.resolve(__dirname, '..');
const MiB = 1024 * 1024;

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
}

const log = (line: string) => process.stderr.write(`[bench:recordings] ${line}\n`);

/** A GET whose body is read and dropped; resolves with the bytes received. */
function download(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    httpRequest(url, { headers }, (response) => {
      if (response.statusCode !== 200) reject(new Error(`GET ${url} answered ${response.statusCode}`));
      let bytes = 0;
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.on('end', () => resolve(bytes));
      response.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

/** A PUT streaming the file as the body. */
function upload(url: string, file: string, headers: Record<string, string> = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'PUT', headers: { 'Content-Type': 'audio/mpeg', ...headers } }, (response) => {
      response.resume();
      response.on('end', () => (response.statusCode === 204 ? resolve() : reject(new Error(`PUT ${url} answered ${response.statusCode}`))));
    });
    request.on('error', reject);
    pipeline(createReadStream(file), request).catch(reject);
  });
}

/** Samples the server's RSS every 25 ms while `work` runs; returns the wall time and the peak. */
async function measured<T>(
  server: RunningServer,
  work: () => Promise<T>,
): Promise<{ seconds: number; peakRssMiB: number; startRssMiB: number }> {
  const startRssMiB = server.rssMiB();
  let peakRssMiB = startRssMiB;
  const timer = setInterval(() => (peakRssMiB = Math.max(peakRssMiB, server.rssMiB())), 25);
  const started = process.hrtime.bigint();
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, peakRssMiB: Math.max(peakRssMiB, server.rssMiB()), startRssMiB };
}

const round1 = (value: number) => round(value, 1);

type Measured = Awaited<ReturnType<typeof measured>>;

interface Target {
  server: RunningServer;
  downloadUrl: () => Promise<string>;
  downloadHeaders: Record<string, string>;
  uploadUrl: (client: number) => string;
  uploadHeaders: Record<string, string>;
}

interface Row {
  what: string;
  /** Median MiB/s over the rounds, per server. */
  service: number;
  baseline: number;
  /** Largest RSS growth (peak − start) over the rounds, and the start it grew from, per server. */
  serviceRss: { start: number; growth: number };
  baselineRss: { start: number; growth: number };
}

const ROUNDS = 3;

/**
 * Runs one scenario ROUNDS times on each server, alternating which goes first, so that drift in the machine's
 * load (it is shared) weighs on both alike. Throughput: the median round; memory: the worst round.
 */
async function scenario(
  what: string,
  transferredMiB: number,
  targets: [Target, Target],
  run: (target: Target) => Promise<unknown>,
): Promise<Row> {
  const results: Measured[][] = [[], []];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const index of order) results[index].push(await measured(targets[index].server, () => run(targets[index])));
  }
  const speed = (runs: Measured[]) => round1(transferredMiB / median(runs.map((result) => result.seconds)));
  const rss = (runs: Measured[]) => {
    const worst = runs.reduce((a, b) => (b.peakRssMiB - b.startRssMiB > a.peakRssMiB - a.startRssMiB ? b : a));
    return { start: worst.startRssMiB, growth: round1(worst.peakRssMiB - worst.startRssMiB) };
  };
  const row = { what, service: speed(results[0]), baseline: speed(results[1]), serviceRss: rss(results[0]), baselineRss: rss(results[1]) };
  log(
    `${what}: service ${row.service} MiB/s (RSS +${row.serviceRss.growth}), baseline ${row.baseline} MiB/s (RSS +${row.baselineRss.growth})`,
  );
  return row;
}

async function runScenarios(targets: [Target, Target], file: string, sizeMiB: number, clients: number): Promise<Row[]> {
  for (const target of targets) {
    await download(await target.downloadUrl(), target.downloadHeaders); // warm-up
    await upload(target.uploadUrl(0), file, target.uploadHeaders);
  }
  const downloadAll = async (target: Target) => {
    const url = await target.downloadUrl();
    await Promise.all(Array.from({ length: clients }, () => download(url, target.downloadHeaders)));
  };
  return [
    await scenario(`download ${sizeMiB} MiB, 1 client`, sizeMiB, targets, async (target) =>
      download(await target.downloadUrl(), target.downloadHeaders),
    ),
    await scenario(`download ${sizeMiB} MiB, ${clients} clients at once`, sizeMiB * clients, targets, downloadAll),
    await scenario(`upload ${sizeMiB} MiB, 1 client`, sizeMiB, targets, (target) =>
      upload(target.uploadUrl(0), file, target.uploadHeaders),
    ),
    await scenario(`upload ${sizeMiB} MiB, ${clients} clients at once`, sizeMiB * clients, targets, (target) =>
      Promise.all(Array.from({ length: clients }, (_, client) => upload(target.uploadUrl(client), file, target.uploadHeaders))),
    ),
  ];
}

async function writeRandomFile(file: string, sizeMiB: number): Promise<void> {
  const { randomBytes } = await import('node:crypto');
  await pipeline(
    (function* () {
      for (let index = 0; index < sizeMiB; index++) yield randomBytes(MiB);
    })(),
    createWriteStream(file),
  );
}

async function jsonRequest(url: string, method: string, apiKey: string, body?: object): Promise<{ id: string; url: string }> {
  const response = await fetch(url, {
    method,
    headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' },
    body: body && JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${url} answered ${response.status}`);
  return response.json() as Promise<{ id: string; url: string }>;
}

async function main(): Promise<void> {
  const sizeMiB = option('size-mib', 100);
  const clients = option('clients', 20);
  const work = mkdtempSync(path.join(os.tmpdir(), 'voice-agent-bench-recordings-'));
  const file = path.join(work, 'recording.mp3');
  const servers: RunningServer[] = [];
  const postgres = await startThrowawayPostgres();
  try {
    log(`writing a ${sizeMiB} MiB file; building the service`);
    await writeRandomFile(file, sizeMiB);
    const main = buildService();
    await runMigrations(postgres.url, loadConfig({}));
    const env = { DATABASE_URL: postgres.url, LOG_LEVEL: 'warn' };
    const created = execFileSync(process.execPath, ['-r', './scripts/register.js', 'src/cli/cli.ts', 'account:create', '--name', 'Bench'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    const { apiKey } = JSON.parse(created.trim().split('\n').at(-1)!);

    const service = await startService({
      name: 'service',
      script: main,
      env: { ...env, DATA_DIR: path.join(work, 'service-data') },
      readyPath: '/health',
      logFile: path.join(work, 'service.log'),
    });
    servers.push(service);
    const uploadDir = path.join(work, 'baseline-uploads');
    mkdirSync(uploadDir);
    const baseline = await startServer({
      name: 'baseline',
      script: 'bench/recordings-baseline-server.ts',
      typescript: true,
      env: { FILE: file, UPLOAD_DIR: uploadDir },
      readyPath: '/health',
      logFile: path.join(work, 'baseline.log'),
    });
    servers.push(baseline);

    const calls: string[] = [];
    for (let client = 0; client < clients; client++)
      calls.push((await jsonRequest(`${service.baseUrl}/calls`, 'POST', apiKey, { name: `Bench caller ${client}` })).id);
    await upload(`${service.baseUrl}/calls/${calls[0]}/recording`, file, { 'X-Api-Key': apiKey });
    const playbackUrl = async () => (await jsonRequest(`${service.baseUrl}/calls/${calls[0]}/recording`, 'GET', apiKey)).url;
    const serviceTarget: Target = {
      server: service,
      downloadUrl: async () => `${service.baseUrl}/calls/${calls[0]}/recording/download`,
      downloadHeaders: { 'X-Api-Key': apiKey },
      uploadUrl: (client) => `${service.baseUrl}/calls/${calls[client]}/recording`,
      uploadHeaders: { 'X-Api-Key': apiKey },
    };
    const baselineTarget: Target = {
      server: baseline,
      downloadUrl: async () => `${baseline.baseUrl}/file`,
      downloadHeaders: {},
      uploadUrl: () => `${baseline.baseUrl}/file`,
      uploadHeaders: {},
    };
    const rows = await runScenarios([serviceTarget, baselineTarget], file, sizeMiB, clients);
    // The signed playback URL (what a browser's <audio> fetches) against the same baseline.
    rows.push(
      await scenario(
        `signed playback URL, ${sizeMiB} MiB, 1 client`,
        sizeMiB,
        [{ ...serviceTarget, downloadUrl: playbackUrl, downloadHeaders: {} }, baselineTarget],
        async (target) => download(await target.downloadUrl(), target.downloadHeaders),
      ),
    );

    const cpus = os.cpus();
    const rss = (value: { start: number; growth: number }) => `+${value.growth} MiB (from ${value.start})`;
    process.stdout.write(
      [
        `Machine: ${cpus.length} × ${cpus[0]?.model.trim()}, ${round1(os.totalmem() / 1024 ** 3)} GiB memory, Node ${process.version}, ${os.platform()} ${os.release()}, load average at the end ${os.loadavg().map(round1).join(' / ')}`,
        '',
        `| Scenario (median of ${ROUNDS} alternating rounds) | Service MiB/s | Baseline MiB/s | Service / baseline | Service RSS growth, worst round | Baseline RSS growth, worst round |`,
        '|---|---|---|---|---|---|',
        ...rows.map(
          (row) =>
            `| ${row.what} | ${row.service} | ${row.baseline} | ${Math.round((row.service / row.baseline) * 100)} % | ${rss(row.serviceRss)} | ${rss(row.baselineRss)} |`,
        ),
        '',
      ].join('\n'),
    );
  } finally {
    for (const server of servers) await server.stop();
    await postgres.destroy();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.stack : error}\n`);
  process.exit(1);
});

/**
 * Recordings benchmark (`npm run bench:recordings`): moving a 100 MiB recording through the service
 * (local storage driver) compared with a bare Node server doing plain fs streams, in the same run, on loopback.
 *
 * - Download: one client (median of 3), then 20 clients at once; MiB/s and the server's peak RSS growth.
 * - Upload: the same, with PUT /calls/{callId}/recording (each client to its own call).
 *
 * Both servers run as their own processes (the service compiled by tsc, as `npm start` runs it) against a
 * throwaway embedded PostgreSQL and throwaway data directories, all removed at the end. Prints a Markdown table.
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
import { startThrowawayPostgres } from '../src/database/throwaway-postgres';
import { buildService, RunningServer, startServer } from './servers';

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
async function measured<T>(server: RunningServer, work: () => Promise<T>): Promise<{ seconds: number; peakRssMiB: number; startRssMiB: number }> {
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

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (value: number) => Math.round(value * 10) / 10;

type Measured = Awaited<ReturnType<typeof measured>>;

/** The run whose time is the median of the runs. */
const medianRun = (runs: Measured[]) => runs.find((result) => result.seconds === median(runs.map((run) => run.seconds)))!;

interface Target {
  server: RunningServer;
  downloadUrl: () => Promise<string>;
  downloadHeaders: Record<string, string>;
  uploadUrl: (client: number) => string;
  uploadHeaders: Record<string, string>;
}

interface Row {
  what: string;
  server: string;
  mibPerSecond: number;
  rssStart: number;
  rssPeak: number;
}

async function runScenarios(target: Target, file: string, sizeMiB: number, clients: number): Promise<Row[]> {
  const rows: Row[] = [];
  const row = (what: string, transferredMiB: number, result: Measured) => {
    rows.push({ what, server: target.server.name, mibPerSecond: round(transferredMiB / result.seconds), rssStart: result.startRssMiB, rssPeak: result.peakRssMiB });
    log(`${target.server.name}: ${what}: ${round(transferredMiB / result.seconds)} MiB/s, RSS ${result.startRssMiB} → ${result.peakRssMiB} MiB`);
  };

  await download(await target.downloadUrl(), target.downloadHeaders); // warm-up
  const downloads: Measured[] = [];
  for (let run = 0; run < 3; run++) downloads.push(await measured(target.server, async () => download(await target.downloadUrl(), target.downloadHeaders)));
  row(`download ${sizeMiB} MiB, 1 client (median of 3)`, sizeMiB, medianRun(downloads));
  row(
    `download ${sizeMiB} MiB, ${clients} clients at once`,
    sizeMiB * clients,
    await measured(target.server, async () => {
      const url = await target.downloadUrl();
      await Promise.all(Array.from({ length: clients }, () => download(url, target.downloadHeaders)));
    }),
  );

  await upload(target.uploadUrl(0), file, target.uploadHeaders); // warm-up
  const uploads: Measured[] = [];
  for (let run = 0; run < 3; run++) uploads.push(await measured(target.server, () => upload(target.uploadUrl(0), file, target.uploadHeaders)));
  row(`upload ${sizeMiB} MiB, 1 client (median of 3)`, sizeMiB, medianRun(uploads));
  row(
    `upload ${sizeMiB} MiB, ${clients} clients at once`,
    sizeMiB * clients,
    await measured(target.server, () => Promise.all(Array.from({ length: clients }, (_, client) => upload(target.uploadUrl(client), file, target.uploadHeaders)))),
  );
  return rows;
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
  const response = await fetch(url, { method, headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
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

    const service = await startServer({
      name: 'service',
      script: main,
      typescript: false,
      env: { ...env, DATA_DIR: path.join(work, 'service-data') },
      readyPath: '/health',
      logFile: path.join(work, 'service.log'),
    });
    servers.push(service);
    const calls: string[] = [];
    for (let client = 0; client < clients; client++) calls.push((await jsonRequest(`${service.baseUrl}/calls`, 'POST', apiKey, { name: `Bench caller ${client}` })).id);
    await upload(`${service.baseUrl}/calls/${calls[0]}/recording`, file, { 'X-Api-Key': apiKey });
    const serviceRows = await runScenarios(
      {
        server: service,
        downloadUrl: async () => `${service.baseUrl}/calls/${calls[0]}/recording/download`,
        downloadHeaders: { 'X-Api-Key': apiKey },
        uploadUrl: (client) => `${service.baseUrl}/calls/${calls[client]}/recording`,
        uploadHeaders: { 'X-Api-Key': apiKey },
      },
      file,
      sizeMiB,
      clients,
    );
    // The signed playback URL (what a browser's <audio> fetches), one client and all at once.
    const playbackUrl = async () => (await jsonRequest(`${service.baseUrl}/calls/${calls[0]}/recording`, 'GET', apiKey)).url;
    const playback = await measured(service, async () => download(await playbackUrl()));
    serviceRows.push({ what: `signed playback URL, ${sizeMiB} MiB, 1 client`, server: 'service', mibPerSecond: round(sizeMiB / playback.seconds), rssStart: playback.startRssMiB, rssPeak: playback.peakRssMiB });
    await service.stop();
    servers.pop();

    const uploadDir = path.join(work, 'baseline-uploads');
    mkdirSync(uploadDir);
    const baseline = await startServer({
      name: 'baseline (plain fs streams)',
      script: 'bench/recordings-baseline-server.ts',
      typescript: true,
      env: { FILE: file, UPLOAD_DIR: uploadDir },
      readyPath: '/health',
      logFile: path.join(work, 'baseline.log'),
    });
    servers.push(baseline);
    const baselineRows = await runScenarios(
      { server: baseline, downloadUrl: async () => `${baseline.baseUrl}/file`, downloadHeaders: {}, uploadUrl: () => `${baseline.baseUrl}/file`, uploadHeaders: {} },
      file,
      sizeMiB,
      clients,
    );

    const cpus = os.cpus();
    process.stdout.write(
      [
        `Machine: ${cpus.length} × ${cpus[0]?.model.trim()}, ${round(os.totalmem() / 1024 ** 3)} GiB memory, Node ${process.version}, ${os.platform()} ${os.release()}`,
        '',
        '| Scenario | Service MiB/s | Baseline MiB/s | Service / baseline | Service RSS before → peak (growth) | Baseline RSS before → peak (growth) |',
        '|---|---|---|---|---|---|',
        ...serviceRows.map((row) => {
          const base = baselineRows.find((candidate) => candidate.what === row.what);
          const growth = (r: Row) => `${r.rssStart} → ${r.rssPeak} MiB (+${round(r.rssPeak - r.rssStart)})`;
          return `| ${row.what} | ${row.mibPerSecond} | ${base?.mibPerSecond ?? '–'} | ${base ? `${Math.round((row.mibPerSecond / base.mibPerSecond) * 100)} %` : '–'} | ${growth(row)} | ${base ? growth(base) : '–'} |`;
        }),
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

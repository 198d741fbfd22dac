/**
 * File sources benchmark (`node -r ./scripts/register.js bench/knowledge-files.ts`, contract section 16):
 * - a 100-page text PDF (about 3,000 characters a page, made by pdfkit) uploaded and read until its source is
 *   `ready`, three times: the target is under 5 s from the upload's first byte to `ready`;
 * - GET /calls/{id} latency idle, then while ten such PDFs are uploaded at once and read: the target is a p99
 *   within 1.5 × idle while they are read (after their uploads were answered); the uploads' moments and the
 *   whole are reported too.
 *
 * The service runs compiled by tsc, as `npm start` runs it (its worker thread too), with its default
 * KNOWLEDGE_EXTRACTION_WORKERS, against a throwaway embedded PostgreSQL. Latency is measured at a steady
 * RATE requests a second (open loop: each request is sent on time whatever the others' latency, on kept-alive
 * connections), the load of a busy dashboard rather than a saturating one, which on a small machine would
 * measure the competition for its cores instead. Whether sources are ready is read from the database, so that
 * polling costs the service nothing. Writes bench/results/<date>-knowledge-files.json; progress on stderr.
 * Options: --pages 100 --uploads 10 --rate 100.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { textPdf } from '../scripts/knowledge-fixtures';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres';
import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { textGenerator } from './knowledge-text';
import { buildService, RunningServer, startService } from './servers';
import { median, percentile, round } from './stats';
import { numberOption } from './options';

const ROOT = path.resolve(__dirname, '..');
const TARGET_READY_MS = 5_000;
const TARGET_P99_RATIO = 1.5;
const IDLE_SECONDS = 10;

const log = (line: string) => process.stderr.write(`[bench:knowledge-files] ${line}\n`);

/** A text PDF of `pages` pages of customer-service prose; page 57 (or the last) holds `marker`. */
async function handbook(pages: number, marker: string): Promise<Buffer> {
  const text = textGenerator(20261127);
  return textPdf(
    Array.from({ length: pages }, (_, page) => {
      const paragraphs = text.passage('latin', 3000).split('\n\n');
      return page === Math.min(56, pages - 1) ? [...paragraphs, marker] : paragraphs;
    }),
  );
}

const BOUNDARY = 'benchknowledgefiles';

/** Uploads the PDF as a multipart form; the created source's id. */
function upload(baseUrl: string, apiKey: string, kbId: number, pdf: Buffer, name: string): Promise<number> {
  const body = Buffer.concat([
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/pdf\r\n\r\n`,
    ),
    pdf,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      `${baseUrl}/knowledge-bases/${kbId}/sources`,
      {
        method: 'POST',
        headers: { 'X-Api-Key': apiKey, 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}`, 'Content-Length': body.length },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if (response.statusCode !== 201) reject(new Error(`upload answered ${response.statusCode}: ${text}`));
          else resolve((JSON.parse(text) as { id: number }).id);
        });
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

async function json<T>(url: string, apiKey: string, init: { method?: string; body?: object } = {}): Promise<T> {
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' },
    body: init.body && JSON.stringify(init.body),
  });
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url} answered ${response.status}`);
  return (await response.json()) as T;
}

/** Polls the database until no source of the knowledge base is pending; the statuses by source id. */
async function whenSettled(database: Client, kbId: number, count: number): Promise<Map<number, string>> {
  for (;;) {
    const { rows } = await database.query<{ id: number; status: string }>(
      `SELECT id, status FROM knowledge_base_sources WHERE knowledge_base_id = $1`,
      [kbId],
    );
    if (rows.length >= count && rows.every((row) => row.status !== 'pending')) return new Map(rows.map((row) => [row.id, row.status]));
    await sleep(20);
  }
}

/** Latencies (ms) of GET `url` sent `rate` times a second, each on time (open loop), until `until` resolves. */
/** One GET: when it was sent (performance.now()) and how long its answer took, in ms. */
interface Sample {
  at: number;
  ms: number;
}

async function latencies(url: string, apiKey: string, rate: number, until: Promise<unknown>): Promise<Sample[]> {
  const agent = new Agent({ keepAlive: true });
  const samples: Sample[] = [];
  const inFlight: Promise<void>[] = [];
  let done = false;
  void until.then(() => (done = true));
  const get = () =>
    new Promise<void>((resolve, reject) => {
      const at = performance.now();
      const started = process.hrtime.bigint();
      httpRequest(url, { agent, headers: { 'X-Api-Key': apiKey } }, (response) => {
        response.resume();
        response.on('end', () => {
          if (response.statusCode !== 200) return reject(new Error(`GET ${url} answered ${response.statusCode}`));
          samples.push({ at, ms: Number(process.hrtime.bigint() - started) / 1e6 });
          resolve();
        });
      })
        .on('error', reject)
        .end();
    });
  const start = performance.now();
  for (let sent = 0; !done; sent++) {
    inFlight.push(get());
    const next = start + ((sent + 1) * 1000) / rate;
    await sleep(Math.max(0, next - performance.now()));
  }
  await Promise.all(inFlight);
  agent.destroy();
  return samples;
}

const summary = (samples: Sample[]) => {
  const ms = samples.map((sample) => sample.ms);
  return { requests: ms.length, p50Ms: round(percentile(ms, 0.5)), p99Ms: round(percentile(ms, 0.99)), maxMs: round(Math.max(...ms)) };
};

async function main(): Promise<void> {
  const pages = numberOption('pages', 100);
  const uploads = numberOption('uploads', 10);
  const rate = numberOption('rate', 100);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'voice-agent-bench-knowledge-files-'));
  const postgres = await startThrowawayPostgres();
  let service: RunningServer | undefined;
  let database: Client | undefined;
  try {
    const marker = 'The lighthouse café serves cardamom tea to every customer who brings a library card.';
    log(`writing a ${pages}-page PDF; building the service`);
    const pdf = await handbook(pages, marker);
    const mainScript = buildService();
    await runMigrations(postgres.url, loadConfig({}));
    const env = { DATABASE_URL: postgres.url, LOG_LEVEL: 'warn', RATE_LIMIT: '0' };
    const created = execFileSync(process.execPath, ['-r', './scripts/register.js', 'src/cli/cli.ts', 'account:create', '--name', 'Bench'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    const { apiKey } = JSON.parse(created.trim().split('\n').at(-1)!) as { apiKey: string };
    database = new Client({ connectionString: postgres.url });
    await database.connect();
    service = await startService({
      name: 'service',
      script: mainScript,
      env: { ...env, DATA_DIR: path.join(work, 'data') },
      readyPath: '/health',
      logFile: path.join(work, 'service.log'),
    });
    const { baseUrl } = service;
    const knowledgeBase = () =>
      json<{ id: number }>(`${baseUrl}/knowledge-bases`, apiKey, { method: 'POST', body: {} }).then(({ id }) => id);

    // One PDF at a time, from the upload's first byte to `ready`.
    const readyMs: number[] = [];
    for (let round = 0; round < 3; round++) {
      const kbId = await knowledgeBase();
      const started = performance.now();
      const sourceId = await upload(baseUrl, apiKey, kbId, pdf, `handbook-${round}.pdf`);
      const statuses = await whenSettled(database, kbId, 1);
      readyMs.push(Math.round(performance.now() - started));
      if (statuses.get(sourceId) !== 'ready') throw new Error(`the handbook ended ${statuses.get(sourceId)}`);
      log(`${pages}-page PDF ready in ${readyMs.at(-1)} ms`);
      if (round === 0) {
        const found = await json<{ text: string }[]>(`${baseUrl}/knowledge-bases/${kbId}/search?q=lighthouse%20cardamom%20library`, apiKey);
        if (!found[0]?.text.includes(marker)) throw new Error('the sentence of page 57 was not found');
      }
    }

    // GET /calls/{id}, idle, then while `uploads` PDFs are read.
    const call = await json<{ id: string }>(`${baseUrl}/calls`, apiKey, { method: 'POST', body: { name: 'Bench caller' } });
    const callUrl = `${baseUrl}/calls/${call.id}`;
    await latencies(callUrl, apiKey, rate, sleep(2_000)); // warm-up
    const idle = await latencies(callUrl, apiKey, rate, sleep(IDLE_SECONDS * 1000));
    log(`idle: ${JSON.stringify(summary(idle))}`);
    const kbId = await knowledgeBase();
    const cpuBefore = service.cpuSeconds();
    const loadStarted = performance.now();
    let uploadedAt = Infinity;
    const settled = (async () => {
      await Promise.all(Array.from({ length: uploads }, (_, index) => upload(baseUrl, apiKey, kbId, pdf, `load-${index}.pdf`)));
      uploadedAt = performance.now();
      return whenSettled(database, kbId, uploads);
    })();
    const loaded = await latencies(callUrl, apiKey, rate, settled);
    const statuses = await settled;
    const loadMs = Math.round(performance.now() - loadStarted);
    if ([...statuses.values()].some((status) => status !== 'ready'))
      throw new Error(`not every upload became ready: ${[...statuses.values()].join(', ')}`);
    // The uploads (ten bodies sent at once, by this process too) and the reading that follows, apart: the target is the reading's.
    const uploading = loaded.filter((sample) => sample.at < uploadedAt);
    const reading = loaded.filter((sample) => sample.at >= uploadedAt);
    log(`while ${uploads} PDFs were uploaded (${Math.round(uploadedAt - loadStarted)} ms): ${JSON.stringify(summary(uploading))}`);
    log(`then while they were read (${Math.round(loadMs - (uploadedAt - loadStarted))} ms): ${JSON.stringify(summary(reading))}`);

    const idleP99 = percentile(
      idle.map((sample) => sample.ms),
      0.99,
    );
    const ratio = round(
      percentile(
        reading.map((sample) => sample.ms),
        0.99,
      ) / idleP99,
    );
    const result = {
      benchmark: 'knowledge-files',
      date: new Date().toISOString(),
      commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim(),
      machine: {
        node: process.version,
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model,
        memoryGiB: round(os.totalmem() / 2 ** 30, 1),
      },
      service: { build: 'tsc (as npm start)', extractionWorkers: loadConfig({}).knowledgeFiles.extractionWorkers },
      pdf: { pages, bytes: pdf.length },
      readyMs: { rounds: readyMs, median: median(readyMs), target: TARGET_READY_MS, met: median(readyMs) < TARGET_READY_MS },
      callLatency: {
        requestsPerSecond: rate,
        idle: summary(idle),
        whileUploadingAndReading: {
          uploads,
          durationMs: loadMs,
          serviceCpuSeconds: round(service.cpuSeconds() - cpuBefore),
          ...summary(loaded),
        },
        whileUploading: { durationMs: Math.round(uploadedAt - loadStarted), ...summary(uploading) },
        whileReading: { durationMs: Math.round(loadMs - (uploadedAt - loadStarted)), ...summary(reading) },
        wholeP99Ratio: round(
          percentile(
            loaded.map((sample) => sample.ms),
            0.99,
          ) / idleP99,
        ),
        p99Ratio: ratio,
        target: TARGET_P99_RATIO,
        met: ratio <= TARGET_P99_RATIO,
      },
    };
    const file = path.join(ROOT, 'bench', 'results', `${result.date.slice(0, 10)}-knowledge-files.json`);
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    log(`wrote ${path.relative(ROOT, file)}`);
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await database?.end();
    await service?.stop();
    await postgres.destroy();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

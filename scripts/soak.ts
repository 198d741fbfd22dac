/**
 * `npm run soak [-- --seconds 60 --connections 128]`
 * Runs the built service on a throwaway embedded PostgreSQL and drives it from this process with autocannon:
 * a mix of reads and writes at 128 connections for 60 s, after a 30 s warm-up at the same load, long enough for
 * V8 to grow its heap to the load's working size, a climb that is not a leak (docs/experiments.md,
 * "Reliability"). Passes when there are zero errors
 * and zero unexpected statuses, and the service's RSS is flat (under 10% growth between the first and the last
 * 10 seconds of the measured minute).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import autocannon from 'autocannon'; // typed in scripts/autocannon.d.ts
import { DataSource } from 'typeorm';
import { standaloneAuthServices } from '../src/auth/accounts.service';
import { Database } from '../src/database/database';
import { loadConfig } from '../src/config/config';
import { V8_FLAGS } from '../src/v8-flags';
import { dataSourceOptions } from '../src/database/data-source-options';
import { runMigrations } from '../src/database/migrate';
import { StartedService, startService } from './service-process';
import { startThrowawayPostgres } from './throwaway-postgres';

const ROOT = path.join(__dirname, '..');

function flag(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
}

function rssMiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

async function main(): Promise<void> {
  const seconds = flag('seconds', 60);
  const connections = flag('connections', 128);
  const entry = path.join(ROOT, 'dist', 'src', 'main.js');
  if (!fs.existsSync(entry)) throw new Error('Build first: npm run build');
  const config = loadConfig({});
  const postgres = await startThrowawayPostgres();
  let service: StartedService | undefined;
  try {
    await runMigrations(postgres.url, config);
    const dataSource = await new DataSource(dataSourceOptions(postgres.url, config)).initialize();
    const { accounts } = standaloneAuthServices(Database.of(dataSource));
    const reader = (await accounts.create('Soak reader')).key.apiKey;
    const writer = (await accounts.create('Soak writer')).key.apiKey;
    await dataSource.destroy();

    service = await startService({
      entry,
      nodeArgs: V8_FLAGS,
      env: { DATABASE_URL: postgres.url, LOG_LEVEL: 'warn', RATE_LIMIT: '0' },
      stderr: 'inherit',
    });
    const base = service.baseUrl;
    const json = (apiKey: string, method: string, url: string, body?: object) => ({
      method,
      path: url,
      headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
    // Fixed data to read, and one agent the writer keeps patching.
    const post = (apiKey: string, url: string, body: object) =>
      fetch(`${base}${url}`, {
        method: 'POST',
        headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<{ id: string }>);
    const readAgent = await post(reader, '/agents', { name: 'Reader agent' });
    const call = await post(reader, '/calls', {
      name: 'Soak caller',
      phone: '+91-98765-43210',
      agentId: readAgent.id,
      durationSeconds: 120,
      transcript: [{ speaker: 'agent', text: 'नमस्ते' }],
    });
    for (let i = 0; i < 50; i++)
      await post(reader, '/calls', { name: `Caller ${i}`, phone: `98765${String(i).padStart(5, '0')}`, durationSeconds: i });
    const patched = await post(writer, '/agents', { name: 'Patched' });
    const kb = await post(reader, '/knowledge-bases', { name: 'Soak KB' });

    const requests = [
      json(reader, 'GET', '/agents'),
      json(reader, 'GET', '/calls?limit=50'),
      json(reader, 'GET', `/calls/${call.id}`),
      json(reader, 'GET', '/calls?search=caller&limit=20'),
      json(reader, 'GET', `/knowledge-bases/${kb.id}`),
      json(writer, 'PATCH', `/agents/${patched.id}`, { description: 'patched under load' }),
      json(writer, 'POST', '/calls', { name: 'Written under load', durationSeconds: 30, transcript: [{ speaker: 'user', text: 'hello' }] }),
      json(reader, 'GET', '/health'),
    ];

    const warmUp = await autocannon({ url: base, connections, duration: flag('warmup', 30), requests });
    if (warmUp.errors + warmUp.non2xx > 0) throw new Error(`warm-up: ${warmUp.errors} errors, ${warmUp.non2xx} non-2xx`);
    const samples: { at: number; rss: number }[] = [];
    const started = Date.now();
    const sampler = setInterval(() => samples.push({ at: (Date.now() - started) / 1000, rss: rssMiB(service!.pid) }), 1000);
    const result = await autocannon({ url: base, connections, duration: seconds, requests });
    clearInterval(sampler);

    const average = (list: number[]) => list.reduce((sum, value) => sum + value, 0) / Math.max(1, list.length);
    const first = average(samples.filter((s) => s.at <= 10).map((s) => s.rss));
    const last = average(samples.filter((s) => s.at > seconds - 10).map((s) => s.rss));
    const growth = ((last - first) / first) * 100;
    const unexpected = Object.entries(result.statusCodeStats).filter(([status]) => !['200', '201'].includes(status));
    const report = {
      seconds,
      connections,
      requests: result.requests.total,
      requestsPerSecond: Math.round(result.requests.average),
      latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
      errors: result.errors,
      timeouts: result.timeouts,
      statuses: Object.fromEntries(Object.entries(result.statusCodeStats).map(([status, { count }]) => [status, count])),
      rssMiB: { first10s: Math.round(first), last10s: Math.round(last), peak: Math.round(Math.max(...samples.map((s) => s.rss))) },
      rssEvery10sMiB: Array.from({ length: Math.ceil(seconds / 10) }, (_, i) =>
        Math.round(average(samples.filter((s) => s.at > i * 10 && s.at <= (i + 1) * 10).map((s) => s.rss))),
      ),
      rssGrowthPercent: Number(growth.toFixed(1)),
    };
    console.log(JSON.stringify(report, null, 2));
    const failures = [
      result.errors + result.timeouts > 0 && `${result.errors} errors and ${result.timeouts} timeouts`,
      unexpected.length > 0 && `unexpected statuses: ${unexpected.map(([status, { count }]) => `${status}×${count}`).join(', ')}`,
      growth >= 10 && `RSS grew ${growth.toFixed(1)}%`,
    ].filter(Boolean);
    if (failures.length) {
      console.error(`SOAK FAILED: ${failures.join('; ')}`);
      process.exitCode = 1;
    } else {
      console.log('Soak passed: zero errors, zero unexpected statuses, RSS flat.');
    }
  } finally {
    await service?.stop();
    await postgres.destroy();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

/**
 * A/B of two builds of the service, CPU time per request (the steady figure on a shared machine):
 *   node -r ./scripts/register.js bench/ab.ts --a dist/ab-a/src/main.js --b dist/ab-b/src/main.js \
 *     --only get-by-id,agents-list,agents-create-patch [--rounds 4] [--seconds 5] [--connections 16] [--profile DIR] \
 *     [--out bench/results/<name>.json]
 * Both run at once against the bench database (seeded by `npm run bench`), loaded in turn, alternating which
 * goes first; per scenario the median of the rounds is printed, with each server's RSS peak under that load.
 * With --profile DIR each server writes a V8 CPU profile into DIR/a and DIR/b when it stops, and DIR/windows.json
 * holds the measured windows (for bench/profile-summary.ts: CPU per response by package and function). With --out
 * FILE every round's figures (CPU per request, requests a second, p99) go to FILE as JSON, with the load average.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { defaultDataDir, openBenchDatabase } from './bench-database';
import { runLoad } from './load';
import { BENCH_AGENT_PREFIX, loadSamples, readScenarios, WRITE_SCENARIO } from './scenarios';
import type { MeasuredWindow } from './profile-summary';
import { RunningServer, startService } from './servers';
import { median, percentile, round } from './stats';

const SHAPE = { accounts: 1000, calls: 1_000_000, hotCalls: 100_000, hotAgents: 50, randomSeed: 20261122 };
const arg = (name: string, fallback?: string) => {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : fallback;
};

async function main(): Promise<void> {
  const builds = { a: arg('a')!, b: arg('b')! };
  const rounds = Number(arg('rounds', '4'));
  const seconds = Number(arg('seconds', '5'));
  const connections = Number(arg('connections', '16'));
  const only = arg('only', 'get-by-id,agents-list,agents-create-patch')!.split(',');
  const profileDir = arg('profile');
  const out = arg('out');
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    builds,
    rounds,
    seconds,
    connections,
    loadAverage: { start: os.loadavg().map((value) => round(value)), end: [] as number[] },
    scenarios: {} as Record<
      string,
      Record<string, { cpuMsPerRequest: number[]; requestsPerSecond: number[]; p99Ms: number[]; rssPeakMiB: number }>
    >,
  };
  const log = (line: string) => process.stderr.write(`[ab] ${line}\n`);
  const database = await openBenchDatabase(SHAPE, defaultDataDir(SHAPE), log);
  const client = new Client({ connectionString: database.url });
  await client.connect();
  const { hotAccountId, hotApiKey } = database.manifest;
  const cleanUp = () => client.query('DELETE FROM agents WHERE account_id = $1 AND name = $2', [hotAccountId, BENCH_AGENT_PREFIX]);
  const servers: RunningServer[] = [];
  const windows: MeasuredWindow[] = [];
  const monotonicUs = () => Number(process.hrtime.bigint() / 1000n); // the clock of V8's CPU profiles
  try {
    await cleanUp();
    const samples = await loadSamples(client, hotAccountId);
    const scenarios = [...readScenarios(samples), WRITE_SCENARIO].filter((scenario) => only.includes(scenario.name));
    for (const [name, script] of Object.entries(builds)) {
      servers.push(
        await startService({
          name,
          script,
          nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profileDir, name)}`] : [],
          env: { DATABASE_URL: database.url, LOG_LEVEL: 'info', RATE_LIMIT: '100000000', EXPERIMENT: process.env.EXPERIMENT ?? '' },
          readyPath: '/health',
          logFile: path.join(os.tmpdir(), `ab-${name}.log`),
        }),
      );
    }
    for (const scenario of scenarios) {
      const cpu: Record<string, number[]> = { a: [], b: [] };
      const rps: Record<string, number[]> = { a: [], b: [] };
      const p99: Record<string, number[]> = { a: [], b: [] };
      const rssPeak: Record<string, number> = { a: 0, b: 0 };
      for (let round = 0; round < rounds; round++) {
        for (const server of round % 2 === 0 ? servers : [...servers].reverse()) {
          let start = 0;
          let used = 0;
          let startUs = 0;
          let endUs = 0;
          const rssSampler = setInterval(() => (rssPeak[server.name] = Math.max(rssPeak[server.name], server.rssMiB())), 200);
          const sample = await runLoad({ baseUrl: server.baseUrl, apiKey: hotApiKey }, scenario, {
            connections,
            warmupSeconds: 2,
            seconds,
            agentPrefix: BENCH_AGENT_PREFIX,
            onMeasure: (phase) => {
              if (phase === 'start') [start, startUs] = [server.cpuSeconds(), monotonicUs()];
              else [used, endUs] = [server.cpuSeconds() - start, monotonicUs()];
            },
          });
          windows.push({ scenario: scenario.name, server: server.name, startUs, endUs, requests: sample.latencies.length });
          clearInterval(rssSampler);
          if (!scenario.read) await cleanUp();
          cpu[server.name].push((used * 1000) / sample.latencies.length);
          rps[server.name].push(sample.latencies.length / sample.seconds);
          p99[server.name].push(percentile(sample.latencies, 0.99));
        }
      }
      const fmt = (values: number[]) => values.map((value) => value.toFixed(3)).join(' ');
      log(
        `${scenario.name}: a ${median(cpu.a).toFixed(3)} ms/req [${fmt(cpu.a)}] ${Math.round(median(rps.a))} req/s p99 ${median(p99.a).toFixed(2)} ms | b ${median(cpu.b).toFixed(3)} ms/req [${fmt(cpu.b)}] ${Math.round(median(rps.b))} req/s p99 ${median(p99.b).toFixed(2)} ms | b/a ${(median(cpu.b) / median(cpu.a)).toFixed(3)} | RSS peak a ${rssPeak.a} MiB, b ${rssPeak.b} MiB`,
      );
      report.scenarios[scenario.name] = Object.fromEntries(
        ['a', 'b'].map((name) => [
          name,
          {
            cpuMsPerRequest: cpu[name].map((value) => round(value, 3)),
            requestsPerSecond: rps[name].map((value) => Math.round(value)),
            p99Ms: p99[name].map((value) => round(value)),
            rssPeakMiB: rssPeak[name],
          },
        ]),
      );
    }
  } finally {
    for (const server of servers) await server.stop();
    if (profileDir) fs.writeFileSync(path.resolve(profileDir, 'windows.json'), JSON.stringify(windows, null, 1));
    report.loadAverage.end = os.loadavg().map((value) => round(value));
    if (out) fs.writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    await cleanUp().catch(() => undefined);
    await client.end();
    await database.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

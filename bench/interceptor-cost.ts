/**
 * What answering through ResponseMapping costs, in the server's CPU µs per request (steadier than throughput on a
 * shared machine): three servers of bench/interceptor-cost-server.ts (the handler mapping, an interceptor doing
 * nothing, ResponseMapping the guard), loaded in turn, alternating the order, median of the rounds.
 *   node -r ./scripts/register.js bench/interceptor-cost.ts [--rounds 7] [--seconds 5]
 */
import autocannon from 'autocannon';
import { ChildProcess, fork } from 'node:child_process';
import * as path from 'node:path';
import { median, round } from './stats';

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
};
const MODES = ['before', 'passthrough', 'after'] as const;
type Mode = (typeof MODES)[number];

function start(mode: Mode): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(path.join(__dirname, 'interceptor-cost-server.ts'), [], {
    execArgv: ['-r', path.join(__dirname, '..', 'scripts', 'register.js')],
    env: { ...process.env, MODE: mode },
  });
  return new Promise((resolve) => child.once('message', (message: { port: number }) => resolve({ child, port: message.port })));
}

const cpuSinceLast = (child: ChildProcess) =>
  new Promise<number>((resolve) => {
    child.once('message', (message: { cpuMicros: number }) => resolve(message.cpuMicros));
    child.send('cpu');
  });

async function main(): Promise<void> {
  const rounds = arg('rounds', 7);
  const seconds = arg('seconds', 5);
  const servers = Object.fromEntries(await Promise.all(MODES.map(async (mode) => [mode, await start(mode)] as const))) as Record<
    Mode,
    { child: ChildProcess; port: number }
  >;
  const perRequest: Record<Mode, number[]> = { before: [], passthrough: [], after: [] };
  try {
    for (const { port } of Object.values(servers))
      await autocannon({ url: `http://127.0.0.1:${port}/agents`, connections: 8, duration: 2 });
    for (let index = 0; index < rounds; index++) {
      for (const mode of index % 2 ? [...MODES].reverse() : MODES) {
        const { child, port } = servers[mode];
        await cpuSinceLast(child);
        const result = await autocannon({ url: `http://127.0.0.1:${port}/agents`, connections: 8, duration: seconds });
        const micros = await cpuSinceLast(child);
        if (result.non2xx || result.errors) throw new Error(`${mode}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
        perRequest[mode].push(micros / result.requests.total);
      }
    }
  } finally {
    for (const { child } of Object.values(servers)) child.kill();
  }
  const summary = Object.fromEntries(
    MODES.map((mode) => [mode, { medianMicros: round(median(perRequest[mode]), 1), rounds: perRequest[mode].map((v) => round(v, 1)) }]),
  );
  console.log(JSON.stringify({ node: process.version, rounds, seconds, cpuMicrosPerRequest: summary }, null, 2));
}

void main();

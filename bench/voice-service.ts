/**
 * What the voice benchmarks share: the compiled service started on a throwaway embedded PostgreSQL with an
 * account and an agent, its limits raised out of the way, and the speech providers of `providers` (none: the
 * built-in voice and text input).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres';
import { buildService, RunningServer, startService } from './servers';

const ROOT = path.resolve(__dirname, '..');

export interface VoiceBenchService {
  service: RunningServer;
  apiKey: string;
  agentId: number;
  /** The service's standard output (its JSON log, at debug level). */
  stdoutFile: string;
  /** Its DATA_DIR (the recordings' spool files are under voice-spool/). */
  dataDir: string;
  /** A conversation of the agent: its id and token. */
  startConversation(): Promise<{ conversationId: string; token: string }>;
  stop(): Promise<void>;
}

export async function startVoiceBenchService(options: {
  name: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
}): Promise<VoiceBenchService> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), `bench-${options.name}-`));
  const postgres = await startThrowawayPostgres();
  let service: RunningServer | undefined;
  try {
    const main = buildService();
    await runMigrations(postgres.url, loadConfig({}));
    const env = { DATABASE_URL: postgres.url, LOG_LEVEL: 'debug' };
    const created = execFileSync(process.execPath, ['-r', './scripts/register.js', 'src/cli/cli.ts', 'account:create', '--name', 'Bench'], {
      cwd: ROOT,
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      encoding: 'utf8',
    });
    const { apiKey } = JSON.parse(created.trim().split('\n').at(-1)!) as { apiKey: string };
    const stdoutFile = path.join(work, 'service.out');
    const dataDir = path.join(work, 'service-data');
    service = await startService({
      name: 'service',
      script: main,
      env: {
        ...env,
        DATA_DIR: dataDir,
        RATE_LIMIT: '0',
        WIDGET_RATE_LIMIT: '1000000',
        CONVERSATION_MAX_ACTIVE_PER_ACCOUNT: '100000',
        CONVERSATION_MAX_REPLIES_PER_ACCOUNT: '100000',
        CONVERSATION_MAX_REPLIES_PER_ADDRESS: '100000',
        ...options.env,
      },
      readyPath: '/health',
      // BENCH_SERVICE_NODE_ARGS: e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile the service under a benchmark's load.
      nodeArgs: options.nodeArgs ?? process.env.BENCH_SERVICE_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
      logFile: path.join(work, 'service.log'),
      stdoutFile,
    });
    const running = service;
    const key = { 'X-Api-Key': apiKey };
    const agent = await postJson<{ id: number }>(`${service.baseUrl}/agents`, key, { name: 'Bench', language: 'en-IN', model: 'bench' });
    return {
      service,
      apiKey,
      agentId: agent.id,
      stdoutFile,
      dataDir,
      startConversation: () => postJson(`${running.baseUrl}/agents/${agent.id}/conversations`, key, {}),
      async stop() {
        await running.stop();
        await postgres.destroy();
        fs.rmSync(work, { recursive: true, force: true }); // the service's log, DATA_DIR and its spool files
      },
    };
  } catch (error) {
    await service?.stop();
    await postgres.destroy();
    throw error;
  }
}

export async function postJson<T>(url: string, headers: Record<string, string>, body: object): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return (await response.json()) as T;
}

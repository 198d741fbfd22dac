/**
 * The service (or another Node server of the repository, such as a benchmark's baseline) in a child process of
 * its own, for the tests, the benchmarks and the scripts: started with its environment and node flags, ready
 * once a fence says so (its "listening on port" line, or a path that answers), stopped with a signal.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, retryWhenPortTaken } from './throwaway-postgres';

const ROOT = path.join(__dirname, '..');

/** What the service prints once it accepts connections (src/main.ts). */
const LISTENING = 'listening on port';

/** Where one of its output streams goes: kept in memory ('pipe'), dropped, this process's own, or a file descriptor. */
export type OutputTarget = 'pipe' | 'ignore' | 'inherit' | number;

export interface ServiceProcessOptions {
  /** The entry point, from the repository's root or absolute: src/main.ts (the default), or dist/src/main.js once built. */
  entry?: string;
  /** Run the entry through scripts/register.js (TypeScript sources); by default when it ends in .ts. */
  typescript?: boolean;
  /** Node arguments before the entry point: V8 flags, a profiler's. */
  nodeArgs?: readonly string[];
  /** Set over this process's environment. */
  env?: Record<string, string>;
  stdout?: OutputTarget;
  stderr?: OutputTarget;
  /** What error messages call it. */
  name?: string;
}

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly name: string;
  /** What it has written so far to standard output and error, interleaved; and each stream alone ('pipe' streams only). */
  output(): string;
  stdout(): string;
  stderr(): string;
  /** Its exit code once it has exited (null when a signal ended it). */
  readonly exited: Promise<number | null>;
  /** Sends `signal` (unless it has exited) and resolves with its exit code; SIGKILL after `graceMs` if given. */
  stop(signal?: NodeJS.Signals, options?: { graceMs?: number }): Promise<number | null>;
}

/** A fence that says the service is ready: its "listening on port" line (stdout must be 'pipe'), or a path answering 2xx. */
export type ReadyFence = 'listening' | { path: string };

export interface StartServiceOptions extends ServiceProcessOptions {
  /** Its PORT; by default a free one, and another one when that was taken before the service bound it. */
  port?: number;
  ready?: ReadyFence;
  /** How long it may take to be ready before it is killed. */
  readyTimeoutMs?: number;
}

export interface StartedService extends ServiceProcess {
  port: number;
  baseUrl: string;
}

/** Starts the process and returns at once (see startService to wait until it is ready). */
export function spawnService(options: ServiceProcessOptions = {}): ServiceProcess {
  const { entry = 'src/main.ts', nodeArgs = [], env = {}, stdout = 'pipe', stderr = 'pipe', name = 'service' } = options;
  const hook = (options.typescript ?? entry.endsWith('.ts')) ? ['-r', './scripts/register.js'] : [];
  const child = spawn(process.execPath, [...nodeArgs, ...hook, entry], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', stdout, stderr],
  });
  const text = { output: '', stdout: '', stderr: '' };
  const keep = (stream: Readable | null, into: 'stdout' | 'stderr') =>
    stream?.setEncoding('utf8').on('data', (chunk: string) => {
      text.output += chunk;
      text[into] += chunk;
    });
  keep(child.stdout, 'stdout');
  keep(child.stderr, 'stderr');
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', reject);
  });
  void exited.catch(() => undefined); // a failure to spawn is reported to whoever awaits it, not as unhandled
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    pid: child.pid!,
    name,
    output: () => text.output,
    stdout: () => text.stdout,
    stderr: () => text.stderr,
    exited,
    async stop(signal = 'SIGTERM', { graceMs } = {}) {
      if (running()) child.kill(signal);
      if (graceMs !== undefined) {
        const timer = sleep(graceMs, undefined, { ref: false });
        await Promise.race([exited, timer]);
        if (running()) child.kill('SIGKILL');
      }
      return exited;
    },
  };
}

/** Resolves once `fence` says the service is ready; rejects, with what it wrote, if it exits first or the time runs out. */
async function waitUntilReady(service: ServiceProcess, baseUrl: string, fence: ReadyFence, timeoutMs: number): Promise<void> {
  const exitedFirst = service.exited.then((code) => {
    throw new Error(`${service.name} exited with ${code} before it was ready${service.output() ? `:\n${service.output()}` : ''}`);
  });
  const ready = fence === 'listening' ? outputIncludes(service, LISTENING) : answers(`${baseUrl}${fence.path}`, service.exited);
  const timer = new AbortController();
  const deadline = sleep(timeoutMs, undefined, { signal: timer.signal }).then(() => {
    throw new Error(`${service.name} was not ready within ${timeoutMs / 1000} s${service.output() ? `:\n${service.output()}` : ''}`);
  });
  try {
    await Promise.race([ready, exitedFirst, deadline]);
  } finally {
    timer.abort();
  }
}

function outputIncludes(service: ServiceProcess, text: string): Promise<void> {
  const stdout = service.child.stdout;
  if (!stdout) throw new Error(`${service.name}: the "listening" fence reads its standard output: start it with stdout 'pipe'`);
  return new Promise((resolve) => {
    const check = () => {
      if (!service.stdout().includes(text)) return;
      stdout.off('data', check);
      resolve();
    };
    // After the helper's own listener, which has appended the chunk.
    stdout.on('data', check);
    check();
  });
}

/** Polls `url` until it answers 2xx (or the process has exited). */
async function answers(url: string, exited: Promise<unknown>): Promise<void> {
  let gone = false;
  void exited.finally(() => (gone = true)).catch(() => undefined);
  while (!gone) {
    const response = await fetch(url).catch(() => undefined);
    if (response?.ok) return;
    await sleep(100);
  }
}

/**
 * Starts the process on `options.port` (or a free port), waits for the fence, and kills it if it is not ready:
 * a start that fails leaves no process behind. On a port it chose, starts it again on another when that one
 * was taken before the service bound it (tests run in parallel).
 */
export async function startService(options: StartServiceOptions = {}): Promise<StartedService> {
  const { port: chosen, ready = 'listening', readyTimeoutMs = 120_000, ...processOptions } = options;
  const start = async (port: number): Promise<StartedService> => {
    const service = spawnService({ ...processOptions, env: { ...processOptions.env, PORT: String(port) } });
    const baseUrl = `http://127.0.0.1:${port}`;
    try {
      await waitUntilReady(service, baseUrl, ready, readyTimeoutMs);
    } catch (error) {
      await service.stop('SIGKILL').catch(() => undefined);
      throw error;
    }
    return { ...service, port, baseUrl };
  };
  return chosen === undefined ? retryWhenPortTaken(async () => start(await freePort())) : start(chosen);
}

/** Runs the process until it exits by itself (a start that fails): its exit code, and all it wrote. */
export async function runServiceToExit(
  options: ServiceProcessOptions = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const service = spawnService({ ...options, stdout: 'pipe', stderr: 'pipe' });
  // 'close', not 'exit': after the streams have given everything.
  const code = await new Promise<number | null>((resolve, reject) => {
    service.child.once('close', resolve);
    service.child.once('error', reject);
  });
  return { code, stdout: service.stdout(), stderr: service.stderr() };
}

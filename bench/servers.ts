/**
 * The two servers under test, each its own Node process on loopback, against the same database: the
 * service compiled by tsc as `npm start` does (into dist/bench-service, so that a concurrent `npm run build`
 * is not disturbed), the baseline from source through the repository's swc hook.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { freePort } from '../scripts/throwaway-postgres';
import { V8_FLAGS } from '../src/v8-flags';

const ROOT = path.resolve(__dirname, '..');

/** Compiles the service (tsconfig.build.json) into dist/bench-service; returns the path of its main.js. */
export function buildService(): string {
  const outDir = path.join('dist', 'bench-service');
  const main = path.join(outDir, 'src', 'main.js');
  try {
    execFileSync(
      process.execPath,
      [
        require.resolve('typescript/bin/tsc'),
        '-p',
        'tsconfig.build.json',
        '--outDir',
        outDir,
        '--tsBuildInfoFile',
        path.join(outDir, '.tsbuildinfo'),
      ],
      { cwd: ROOT, stdio: 'inherit' },
    );
  } catch (error) {
    // tsc still emits when there are type errors (say, in a module someone is editing): go on if it did.
    if (!fs.existsSync(path.join(ROOT, main))) throw error;
    process.stderr.write('[bench] tsc reported errors (above); running the emitted JavaScript anyway\n');
  }
  return main;
}

export interface RunningServer {
  name: string;
  baseUrl: string;
  pid: number;
  /** Resident set size now, in MiB (from /proc). */
  rssMiB(): number;
  /** CPU time (user + system) used so far, in seconds (from /proc). */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

export interface ServerSpec {
  name: string;
  script: string;
  /** Run TypeScript through the repository's swc hook (the script is .ts). */
  typescript: boolean;
  env: Record<string, string>;
  /** A path answering 2xx without a key once the server is ready. */
  readyPath: string;
  nodeArgs?: string[];
  logFile: string;
}

function rssMiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return Math.round((kb / 1024) * 10) / 10;
}

const CLOCK_TICKS_PER_SECOND = 100;

function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which is in parentheses and may contain spaces): utime is the 14th, stime the 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

async function waitUntilReady(url: string, child: ChildProcess, name: string, logFile: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}; see ${logFile}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${name} was not ready within 120 s; see ${logFile}`);
}

export async function startServer(spec: ServerSpec): Promise<RunningServer> {
  const port = await freePort();
  const log = fs.openSync(spec.logFile, 'w');
  // stdout (the request log) goes to /dev/null: writing it is part of the service's cost, keeping it is not.
  const hook = spec.typescript ? ['-r', './scripts/register.js'] : [];
  const child = spawn(process.execPath, [...(spec.nodeArgs ?? []), ...hook, spec.script], {
    cwd: ROOT,
    env: { ...process.env, ...spec.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', log],
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitUntilReady(`${baseUrl}${spec.readyPath}`, child, spec.name, spec.logFile);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    name: spec.name,
    baseUrl,
    pid: child.pid!,
    rssMiB: () => rssMiB(child.pid!),
    cpuSeconds: () => cpuSeconds(child.pid!),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      fs.closeSync(log);
    },
  };
}

/**
 * The service compiled by buildService, started as `npm start` starts it: with the V8 flags of its command line
 * (src/v8-flags.ts) before any of `spec.nodeArgs` (a profiler's, say). Every benchmark starts the service
 * through this, so that its figures are those of the process users run.
 */
export function startService(spec: Omit<ServerSpec, 'typescript'>): Promise<RunningServer> {
  return startServer({ ...spec, typescript: false, nodeArgs: [...V8_FLAGS, ...(spec.nodeArgs ?? [])] });
}

/** Samples a server's RSS every 200 ms while running; returns the peak and mean. */
export function sampleRss(server: RunningServer): () => { peakMiB: number; meanMiB: number } {
  const samples: number[] = [server.rssMiB()];
  const timer = setInterval(() => samples.push(server.rssMiB()), 200);
  return () => {
    clearInterval(timer);
    samples.push(server.rssMiB());
    return {
      peakMiB: Math.max(...samples),
      meanMiB: Math.round((samples.reduce((sum, value) => sum + value, 0) / samples.length) * 10) / 10,
    };
  };
}

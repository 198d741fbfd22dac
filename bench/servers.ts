/**
 * The two servers under test, each its own Node process on loopback, against the same database: the
 * service compiled by tsc as `npm start` does (into dist/bench-service, so that a concurrent `npm run build`
 * is not disturbed), the baseline from source through the repository's swc hook.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { StartedService, startService as startServiceProcess } from '../scripts/service-process';
import { V8_FLAGS } from '../src/v8-flags';
import { writeWidgetBundle } from '../scripts/build-widget';

const ROOT = path.resolve(__dirname, '..');

/** Compiles the service (tsconfig.build.json, and the widget's script) into dist/bench-service; returns the path of its main.js. */
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
  writeWidgetBundle(path.join(ROOT, outDir));
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
  /** Where its standard output (the JSON log) goes when a benchmark reads it; dropped otherwise. */
  stdoutFile?: string;
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

export async function startServer(spec: ServerSpec): Promise<RunningServer> {
  const log = fs.openSync(spec.logFile, 'w');
  const stdout = spec.stdoutFile ? fs.openSync(spec.stdoutFile, 'w') : 'ignore';
  let server: StartedService;
  try {
    // stdout (the request log) is dropped unless asked for: writing it is part of the service's cost, keeping it is not.
    server = await startServiceProcess({
      name: spec.name,
      entry: spec.script,
      typescript: spec.typescript,
      nodeArgs: spec.nodeArgs,
      env: spec.env,
      stdout,
      stderr: log,
      ready: { path: spec.readyPath },
    });
  } catch (error) {
    fs.closeSync(log);
    if (typeof stdout === 'number') fs.closeSync(stdout);
    throw new Error(`${(error as Error).message}; see ${spec.logFile}`, { cause: error });
  }
  return {
    name: spec.name,
    baseUrl: server.baseUrl,
    pid: server.pid,
    rssMiB: () => rssMiB(server.pid),
    cpuSeconds: () => cpuSeconds(server.pid),
    async stop() {
      await server.stop('SIGTERM', { graceMs: 15_000 });
      fs.closeSync(log);
      if (typeof stdout === 'number') fs.closeSync(stdout);
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

import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { freePort, retryWhenPortTaken } from '../scripts/throwaway-postgres';
import { missingV8Flags, V8_FLAGS } from '../src/v8-flags';

const ROOT = path.join(__dirname, '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

/**
 * Starts the server with these node arguments (ending with its entry point) on the test database, waits until
 * it answers /health/live, stops it, and resolves with its standard error.
 */
async function startServerOnce(nodeArguments: string[]): Promise<string> {
  const port = await freePort();
  const child = spawn(process.execPath, nodeArguments, { cwd: ROOT, env: { ...process.env, PORT: String(port), LOG_LEVEL: 'warn' } });
  let output = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => {
    output += chunk;
    stderr += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}: ${output}`);
      const live = await fetch(`http://127.0.0.1:${port}/health/live`).catch(() => undefined);
      if (live?.ok) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  return stderr;
}

/** startServerOnce, again on another port when the free one chosen was taken before the server bound it. */
const startServer = (nodeArguments: string[]) => retryWhenPortTaken(() => startServerOnce(nodeArguments));

/** `start:prod`'s node arguments, with the built entry point replaced by the sources (the tests do not build). */
const startProdArguments = () => {
  const [node, ...args] = JSON.parse(read('package.json')).scripts['start:prod'].split(' ');
  expect(node).toBe('node');
  expect(args.at(-1)).toBe('dist/src/main.js');
  return [...args.slice(0, -1), '-r', './scripts/register.js', 'src/main.ts'];
};

describe('V8 flags of the server process', () => {
  // node refuses to start with a flag V8 does not know.
  it.each(V8_FLAGS)('%s is a flag of this V8', (flag) => {
    const { status, stderr } = spawnSync(process.execPath, [flag, '-e', '0'], { encoding: 'utf8' });
    expect(stderr).toBe('');
    expect(status).toBe(0);
  });

  it('are on the command line of npm start and start:prod, exactly the list of src/v8-flags.ts', () => {
    const { scripts } = JSON.parse(read('package.json'));
    expect(scripts['start:prod']).toBe(`node ${V8_FLAGS.join(' ')} dist/src/main.js`);
    expect(scripts.start).toBe('npm run build && npm run start:prod');
  });

  it("are on the Docker image's command line", () => {
    const cmd = read('Dockerfile')
      .split('\n')
      .filter((line) => line.startsWith('CMD '));
    expect(cmd).toHaveLength(1);
    expect(JSON.parse(cmd[0].slice(4))).toEqual(['node', ...V8_FLAGS, 'dist/src/main.js']);
  });

  it('are never set after start-up (v8.setFlagsFromString, which Node does not support)', () => {
    const sources = fs.readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
    expect(sources.length).toBeGreaterThan(50);
    expect(sources.filter((file) => /setFlagsFromString\s*\(/.test(read(path.join('src', file))))).toEqual([]);
  });

  it('are passed by the benchmark and soak scripts that start the server', () => {
    // Every benchmark starts the built service through startService, which puts the flags first; startServer
    // itself runs only the baselines (TypeScript, through the swc hook).
    expect(read('bench/servers.ts')).toContain('nodeArgs: [...V8_FLAGS, ...(spec.nodeArgs ?? [])]');
    const benchmarks = fs.readdirSync(path.join(ROOT, 'bench')).filter((file) => file.endsWith('.ts') && file !== 'servers.ts');
    const starting = benchmarks.filter((file) => /\bstartService\(/.test(read(`bench/${file}`)));
    expect(starting.sort()).toEqual(['ab.ts', 'conversations.ts', 'integrators.ts', 'recordings.ts', 'run.ts', 'webhooks.ts']);
    for (const file of benchmarks) {
      for (const call of read(`bench/${file}`).split(/\bstartServer\(/).slice(1)) expect(call.slice(0, call.indexOf('})'))).toMatch(/typescript: true/);
    }
    expect(read('scripts/soak.ts')).toMatch(/spawn\(process\.execPath, \[\.\.\.V8_FLAGS,/);
    expect(read('scripts/measure-startup.sh')).toMatch(/node \$V8_FLAGS dist\/src\/main\.js/);
  });

  it('are what missingV8Flags looks for in process.execArgv', () => {
    expect(missingV8Flags([...V8_FLAGS])).toEqual([]);
    expect(missingV8Flags(['--inspect', V8_FLAGS[0]])).toEqual(V8_FLAGS.slice(1));
  });

  it('reach the server started as start:prod starts it (its process.execArgv has them: no warning)', async () => {
    const stderr = await startServer(startProdArguments());
    expect(stderr).not.toContain('VOICE_AGENT_V8_FLAGS');
  }, 60_000);

  it('are missed, with a warning, by a server started with a bare node command', async () => {
    const stderr = await startServer(['-r', './scripts/register.js', 'src/main.ts']);
    expect(stderr).toContain(`[VOICE_AGENT_V8_FLAGS] Warning: The server was started without the V8 flags ${V8_FLAGS.join(' ')}`);
  }, 60_000);
});

import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startService } from '../scripts/service-process';
import { missingV8Flags, V8_FLAGS } from '../src/v8-flags';

const ROOT = path.join(__dirname, '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

/**
 * Starts the server with these node arguments before its entry point (the sources) on the test database, waits
 * until it answers /health/live, stops it, and resolves with its standard error.
 */
async function startServer(nodeArgs: string[]): Promise<string> {
  const server = await startService({ nodeArgs, env: { LOG_LEVEL: 'warn' }, ready: { path: '/health/live' } });
  await server.stop();
  return server.stderr();
}

/** `start:prod`'s node arguments before its entry point (the built one: the tests run the sources, and do not build). */
const startProdArguments = () => {
  const [node, ...args] = JSON.parse(read('package.json')).scripts['start:prod'].split(' ');
  expect(node).toBe('node');
  expect(args.at(-1)).toBe('dist/src/main.js');
  return args.slice(0, -1);
};

describe('V8 flags of the server process', () => {
  // node refuses to start with a flag V8 does not know.
  it.each(V8_FLAGS)('%s is a flag of this V8', (flag) => {
    const { status, stderr } = spawnSync(process.execPath, [flag, '-e', '0'], { encoding: 'utf8' });
    expect(stderr).toBe('');
    expect(status).toBe(0);
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
    const stderr = await startServer([]);
    expect(stderr).toContain(`[VOICE_AGENT_V8_FLAGS] Warning: The server was started without the V8 flags ${V8_FLAGS.join(' ')}`);
  }, 60_000);
});

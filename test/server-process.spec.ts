import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as http from 'node:http';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';
import { freePort } from '../src/database/throwaway-postgres';

const ROOT = path.join(__dirname, '..');

/** The real entry point in its own process, on its own embedded PostgreSQL, as `npm start` runs it. */
function startServer(env: Record<string, string>): { child: ChildProcess; output: () => string; ready: Promise<void> } {
  const child = spawn(process.execPath, ['-r', './scripts/register.js', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: '', ...env },
  });
  let output = '';
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      if (output.includes('listening on port')) resolve();
    });
    child.stderr!.on('data', (chunk) => (output += chunk));
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
  });
  return { child, output: () => output, ready };
}

/** One request on a fresh connection: its status, or the network error code if it was not answered. */
function send(port: number, method: string, path: string, apiKey: string): Promise<number | string> {
  return new Promise((resolve) => {
    const request = http.request({ host: '127.0.0.1', port, method, path, agent: false, headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' } }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode!));
    });
    request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    request.end(method === 'POST' ? '{"name":"Mid-shutdown"}' : undefined);
  });
}

describe('the server process', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'server-process-'));
    fs.chmodSync(dataDir, 0o755);
  });
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('starts on an embedded PostgreSQL, prints where things are, and on SIGTERM finishes in-flight requests and stops cleanly', async () => {
    const port = await freePort();
    const server = startServer({ PORT: String(port), DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(await freePort()), LOG_LEVEL: 'warn' });
    await server.ready;
    const banner = server.output();
    expect(banner).toContain(`http://localhost:${port}/docs`);
    expect(banner).toContain('npm run cli -- account:create');
    expect(banner).toContain(`data in ${dataDir}`);

    // The CLI attaches to the server's running embedded PostgreSQL.
    const { stdout } = await promisify(execFile)(process.execPath, ['-r', './scripts/register.js', 'src/cli/cli.ts', 'account:create', '--name', 'Shutdown'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir },
    });
    const { apiKey } = JSON.parse(stdout.trim().split('\n').pop()!);

    // Eight clients keep sending until the server stops accepting; SIGTERM lands in the middle.
    const outcomes: (number | string)[] = [];
    const client = async (index: number) => {
      for (;;) {
        const outcome = await send(port, index % 2 ? 'POST' : 'GET', '/agents', apiKey);
        outcomes.push(outcome);
        if (typeof outcome === 'string') return;
      }
    };
    const clients = Promise.all(Array.from({ length: 8 }, (_, index) => client(index)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const exited = new Promise<number | null>((resolve) => server.child.on('exit', resolve));
    server.child.kill('SIGTERM');
    await clients;
    expect(await exited).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false); // PostgreSQL stopped cleanly
    const answered = outcomes.filter((outcome) => typeof outcome === 'number');
    expect(answered.length).toBeGreaterThan(8);
    // Every request answered got its normal answer. The others were refused, or reset while still queued in the
    // kernel's accept backlog when the listening socket closed: never processed, as the count below shows.
    expect(new Set(answered)).toEqual(new Set([200, 201]));
    for (const outcome of outcomes.filter((o) => typeof o === 'string')) expect(['ECONNREFUSED', 'ECONNRESET']).toContain(outcome);
    const postgres = await startEmbeddedPostgres({ dataDir, port: await freePort() });
    try {
      const client = new Client({ connectionString: postgres.url });
      await client.connect();
      const { rows } = await client.query("SELECT count(*)::int AS n FROM agents WHERE name = 'Mid-shutdown'");
      await client.end();
      expect(rows[0].n).toBe(answered.filter((status) => status === 201).length);
    } finally {
      await postgres.stop();
    }
  }, 60_000);

  it('refuses a bad configuration with a message naming the variable', async () => {
    const server = startServer({ PORT: 'eighty', DATA_DIR: dataDir });
    await expect(server.ready).rejects.toThrow(/exited with 1[\s\S]*PORT/);
  }, 30_000);
});

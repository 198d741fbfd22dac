import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as http from 'node:http';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { freePort, retryWhenPortTaken, startOnFreePort } from '../scripts/throwaway-postgres';

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

/** The server on ports chosen free (HTTP and its embedded PostgreSQL), started again on others if one was taken. */
function startServerOnFreePorts(env: Record<string, string>): Promise<{ server: ReturnType<typeof startServer>; port: number }> {
  return retryWhenPortTaken(async () => {
    const port = await freePort();
    const server = startServer({ ...env, PORT: String(port), EMBEDDED_PG_PORT: String(await freePort()) });
    await server.ready;
    return { server, port };
  });
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

/** A POST whose headers and first half of body go out now, and the rest when `finish()` is called. */
function halfSentPost(port: number, path: string, apiKey: string, body: object) {
  const payload = Buffer.from(JSON.stringify(body));
  const half = Math.floor(payload.length / 2);
  const request = http.request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path,
    agent: false,
    headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json', 'Content-Length': payload.length },
  });
  const status = new Promise<number | string>((resolve) => {
    request.on('response', (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode!));
    });
    request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
  request.flushHeaders();
  const headersSent = new Promise<void>((resolve) => request.write(payload.subarray(0, half), () => resolve()));
  return { headersSent, status, finish: () => request.end(payload.subarray(half)) };
}

describe('the server process', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'server-process-'));
    fs.chmodSync(dataDir, 0o755);
  });
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('starts on an embedded PostgreSQL, prints where things are, and on SIGTERM under load finishes every accepted request and stops cleanly', async () => {
    const { server, port } = await startServerOnFreePorts({ DATA_DIR: dataDir, LOG_LEVEL: 'warn', RATE_LIMIT: '0' });
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

    // 50 requests in flight when the signal comes: headers and half of each body sent before it, the rest after.
    const inFlight = Array.from({ length: 50 }, () => halfSentPost(port, '/agents', apiKey, { name: 'In flight' }));
    await Promise.all(inFlight.map((request) => request.headersSent));
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Meanwhile eight clients keep sending new requests until the server stops accepting them.
    const outcomes: (number | string)[] = [];
    const client = async (index: number) => {
      for (;;) {
        const outcome = await send(port, index % 2 ? 'POST' : 'GET', '/agents', apiKey);
        outcomes.push(outcome);
        if (typeof outcome === 'string') return;
      }
    };
    const clients = Promise.all(Array.from({ length: 8 }, (_, index) => client(index)));
    await new Promise((resolve) => setTimeout(resolve, 100));

    const exited = new Promise<number | null>((resolve) => server.child.on('exit', resolve));
    server.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 100));
    inFlight.forEach((request) => request.finish());
    expect(await Promise.all(inFlight.map((request) => request.status))).toEqual(Array(50).fill(201));
    await clients;
    expect(await exited).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false); // PostgreSQL stopped cleanly

    // The new requests were answered normally, or refused, or reset while still queued in the kernel's accept
    // backlog when the listening socket closed — never processed without an answer, as the count below shows.
    const answered = outcomes.filter((outcome) => typeof outcome === 'number');
    expect(new Set(answered)).toEqual(new Set([200, 201]));
    for (const outcome of outcomes.filter((o) => typeof o === 'string')) expect(['ECONNREFUSED', 'ECONNRESET']).toContain(outcome);
    const postgres = await startOnFreePort({ dataDir });
    try {
      const client = new Client({ connectionString: postgres.url });
      await client.connect();
      const { rows } = await client.query("SELECT name, count(*)::int AS n FROM agents GROUP BY name ORDER BY name");
      await client.end();
      expect(rows).toEqual([
        { name: 'In flight', n: 50 },
        { name: 'Mid-shutdown', n: answered.filter((status) => status === 201).length },
      ]);
    } finally {
      await postgres.stop();
    }
  }, 60_000);

  it('refuses a bad configuration with a message naming the variable', async () => {
    const server = startServer({ PORT: 'eighty', DATA_DIR: dataDir });
    await expect(server.ready).rejects.toThrow(/exited with 1[\s\S]*PORT/);
  }, 30_000);
});

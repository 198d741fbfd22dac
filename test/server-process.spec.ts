import { execFile } from 'node:child_process';
import * as http from 'node:http';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { DEFAULT_EMBEDDED_PG_PORT, RESTART_WITHIN_S, startEmbeddedPostgres } from '../src/database/embedded-postgres';
import { runServiceToExit, StartedService, startService } from '../scripts/service-process';
import { freePort, retryWhenPortTaken, startOnFreePort } from '../scripts/throwaway-postgres';
import { V8_FLAGS } from '../src/v8-flags';
import { eventually, queryOnce } from './helpers';
import { holdPort } from './hold-port';
import { reachableTempDir } from './support/data-dir';

const ROOT = path.join(__dirname, '..');

/** The real entry point as `npm start` runs it (its V8 flags), on its own embedded PostgreSQL unless `env` names a database. */
const serverOptions = (env: Record<string, string>) => ({ nodeArgs: V8_FLAGS, env: { DATABASE_URL: '', EMBEDDED_PG_PORT: '', ...env } });

/** The entry point run until it exits (a start that fails): its exit code and what it wrote. */
const runServerToExit = (env: Record<string, string>) => runServiceToExit(serverOptions({ LOG_LEVEL: 'info', ...env }));

async function sql(url: string, text: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** The server on ports chosen free (HTTP, and its embedded PostgreSQL unless `env` sets one), started again on others if one was taken. */
async function startServerOnFreePorts(env: Record<string, string>): Promise<{ server: StartedService; port: number }> {
  const server = await retryWhenPortTaken(async () =>
    startService({
      ...serverOptions({ EMBEDDED_PG_PORT: env.EMBEDDED_PG_PORT ?? String(await freePort()), ...env }),
      port: await freePort(),
    }),
  );
  return { server, port: server.port };
}

/** One request on a fresh connection: its status, or the network error code if it was not answered. */
function send(port: number, method: string, path: string, apiKey: string): Promise<number | string> {
  return new Promise((resolve) => {
    const request = http.request(
      { host: '127.0.0.1', port, method, path, agent: false, headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' } },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode!));
      },
    );
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

/** An account and its API key, made by the CLI attached to the server's embedded PostgreSQL. */
async function createAccountWithCli(dataDir: string, name: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['-r', './scripts/register.js', 'src/cli/cli.ts', 'account:create', '--name', name],
    {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: '', EMBEDDED_PG_PORT: '', DATA_DIR: dataDir },
    },
  );
  return JSON.parse(stdout.trim().split('\n').pop()!).apiKey;
}

/** The pid of the postmaster running the cluster of `dataDir` (the first line of its postmaster.pid). */
const postmasterPid = (dataDir: string) => Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);

describe('the server process', () => {
  let dataDir: string;
  beforeAll(() => (dataDir = reachableTempDir('server-process-')));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('starts on an embedded PostgreSQL, prints where things are, and on SIGTERM under load finishes every accepted request and stops cleanly', async () => {
    const { server, port } = await startServerOnFreePorts({ DATA_DIR: dataDir, LOG_LEVEL: 'warn', RATE_LIMIT: '0' });
    const banner = server.output();
    expect(banner).toContain(`http://localhost:${port}/docs`);
    expect(banner).toContain('npm run cli -- account:create');
    expect(banner).toContain(`data in ${dataDir}`);

    // The CLI attaches to the server's running embedded PostgreSQL.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['-r', './scripts/register.js', 'src/cli/cli.ts', 'account:create', '--name', 'Shutdown'],
      {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir },
      },
    );
    const { apiKey } = JSON.parse(stdout.trim().split('\n').pop()!);

    // 50 requests in flight when the signal comes: headers and half of each body sent before it, the rest after.
    const inFlight = Array.from({ length: 50 }, () => halfSentPost(port, '/agents', apiKey, { name: 'In flight' }));
    await Promise.all(inFlight.map((request) => request.headersSent));
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
    // The server answers new requests while the 50 wait for their bodies: it has taken their connections.
    await eventually(() => Promise.resolve(outcomes.length >= 16 || undefined));

    const exited = server.stop('SIGTERM');
    // The rest of each body only once the server is shutting down, so that finishing them is the shutdown's work.
    await eventually(() => Promise.resolve(server.stdout().includes('SIGTERM received') || undefined));
    inFlight.forEach((request) => request.finish());
    expect(await Promise.all(inFlight.map((request) => request.status))).toEqual(Array(50).fill(201));
    await clients;
    expect(await exited).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false); // PostgreSQL stopped cleanly
    // Standard output is a pipe here: every line is JSON, the banner and the shutdown lines included.
    const lines = server
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          level: 30,
          msg: expect.stringMatching(/^Voice Agent API listening on port \d+ \(ready in \d+ ms\)$/),
          docs: `http://localhost:${port}/docs`,
        }),
        expect.objectContaining({ level: 30, msg: 'SIGTERM received: finishing in-flight requests' }),
        expect.objectContaining({ level: 30, msg: 'Stopped' }),
      ]),
    );

    // The new requests were answered normally, or refused, or reset while still queued in the kernel's accept
    // backlog when the listening socket closed — never processed without an answer, as the count below shows.
    const answered = outcomes.filter((outcome) => typeof outcome === 'number');
    expect(new Set(answered)).toEqual(new Set([200, 201]));
    for (const outcome of outcomes.filter((o) => typeof o === 'string')) expect(['ECONNREFUSED', 'ECONNRESET']).toContain(outcome);
    const postgres = await startOnFreePort({ dataDir });
    try {
      const client = new Client({ connectionString: postgres.url });
      await client.connect();
      const { rows } = await client.query('SELECT name, count(*)::int AS n FROM agents GROUP BY name ORDER BY name');
      await client.end();
      expect(rows).toEqual([
        { name: 'In flight', n: 50 },
        { name: 'Mid-shutdown', n: answered.filter((status) => status === 201).length },
      ]);
    } finally {
      await postgres.stop();
    }
  }, 60_000);

  it('reports each known start-up failure in one line on stderr and exits with 1; the stack only with LOG_LEVEL=debug', async () => {
    const testDatabase = new URL(process.env.DATABASE_URL!);
    const notADirectory = path.join(dataDir, 'a-file');
    fs.writeFileSync(notADirectory, '');
    // Port 9 (discard), which nothing serves here: a free ephemeral port could be taken by another test file
    // between choosing it and connecting (one was, once in ten runs, answering and closing the connection).
    const unreachable = `postgres://someone:hunter2@127.0.0.1:9/nowhere`;
    // A database where the first migration cannot run: its first table is there already.
    const clashing = new URL(testDatabase);
    clashing.pathname = `/clash_${randomBytes(4).toString('hex')}`;
    await sql(testDatabase.toString(), `CREATE DATABASE ${clashing.pathname.slice(1)}`);
    await sql(clashing.toString(), 'CREATE TABLE accounts (id int)');
    const takenPgPort = await freePort();
    const takenHttpPort = await freePort();
    const squatters = [await holdPort(takenPgPort), await holdPort(takenHttpPort)];
    const freshDataDir = path.join(dataDir, 'never-created');
    try {
      const cases: [Record<string, string>, string | RegExp][] = [
        [{ PORT: 'eighty', DATA_DIR: dataDir }, 'Invalid configuration: PORT must be a whole number, got "eighty"'],
        [
          { DATA_DIR: path.join(notADirectory, 'data') },
          `DATA_DIR ${path.join(notADirectory, 'data')} cannot be used (ENOTDIR): set DATA_DIR to a directory this user can create and write`,
        ],
        [
          { DATA_DIR: freshDataDir, EMBEDDED_PG_PORT: String(takenPgPort) },
          `EMBEDDED_PG_PORT ${takenPgPort} is already in use by another program: set EMBEDDED_PG_PORT to a free port, or unset it to have one chosen`,
        ],
        [
          { DATABASE_URL: unreachable, DATA_DIR: dataDir },
          `Cannot connect to PostgreSQL at 127.0.0.1:${new URL(unreachable).port}/nowhere: connect ECONNREFUSED 127.0.0.1:${new URL(unreachable).port}. Check that it is running and that DATABASE_URL is right.`,
        ],
        [
          { DATABASE_URL: clashing.toString(), DATA_DIR: dataDir },
          'Migration Initial1795327392008 failed: relation "accounts" already exists',
        ],
        [
          { DATABASE_URL: testDatabase.toString(), DATA_DIR: dataDir, PORT: String(takenHttpPort) },
          `PORT ${takenHttpPort} is already in use by another program: set PORT to another port`,
        ],
      ];
      const results = await Promise.all(cases.map(([env]) => runServerToExit(env)));
      results.forEach(({ code, stderr }, index) => {
        expect({ code, stderr }).toEqual({ code: 1, stderr: `${cases[index][1]}\n` });
      });
      expect(results.map(({ stderr }) => stderr).join('')).not.toContain('hunter2');
      expect(fs.existsSync(freshDataDir)).toBe(false); // refused before creating anything

      const debug = await runServerToExit({ DATA_DIR: path.join(notADirectory, 'data'), LOG_LEVEL: 'debug' });
      expect(debug.code).toBe(1);
      expect(debug.stderr).toMatch(/^StartupError: DATA_DIR .* cannot be used \(ENOTDIR\)[^\n]*\n\s+at /);
    } finally {
      await Promise.all(squatters.map((squatter) => squatter.release()));
      await sql(testDatabase.toString(), `DROP DATABASE ${clashing.pathname.slice(1)} WITH (FORCE)`);
    }
  }, 60_000);

  it('starts beside another program on the default EMBEDDED_PG_PORT, and its CLI finds it', async () => {
    const ownDataDir = reachableTempDir('second-checkout-');
    const squatter = await holdPort(DEFAULT_EMBEDDED_PG_PORT);
    try {
      const { server, port } = await startServerOnFreePorts({
        DATA_DIR: ownDataDir,
        EMBEDDED_PG_PORT: '',
        LOG_LEVEL: 'warn',
        RATE_LIMIT: '0',
      });
      try {
        const { stdout } = await promisify(execFile)(
          process.execPath,
          ['-r', './scripts/register.js', 'src/cli/cli.ts', 'account:create', '--name', 'Second'],
          {
            cwd: ROOT,
            env: { ...process.env, DATABASE_URL: '', EMBEDDED_PG_PORT: '', DATA_DIR: ownDataDir },
          },
        );
        const { apiKey } = JSON.parse(stdout.trim().split('\n').pop()!);
        expect(await send(port, 'GET', '/agents', apiKey)).toBe(200); // the server sees what the CLI created
        expect(server.output()).not.toContain(`127.0.0.1:${DEFAULT_EMBEDDED_PG_PORT},`);
      } finally {
        expect(await server.stop('SIGTERM')).toBe(0);
      }
    } finally {
      await squatter.release();
      fs.rmSync(ownDataDir, { recursive: true, force: true });
    }
  }, 60_000);

  describe('when its embedded PostgreSQL is killed (kill -9, as the OOM killer does)', () => {
    let crashDataDir: string;
    beforeEach(() => (crashDataDir = reachableTempDir('killed-postgres-')));
    afterEach(() => fs.rmSync(crashDataDir, { recursive: true, force: true }));

    it('restarts it on the same port and cluster: healthy again within seconds, nothing committed lost, writes work', async () => {
      const { server, port } = await startServerOnFreePorts({ DATA_DIR: crashDataDir, LOG_LEVEL: 'warn', RATE_LIMIT: '0' });
      const api = (method: string, body?: object) =>
        fetch(`http://127.0.0.1:${port}/agents`, {
          method,
          headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' },
          body: body && JSON.stringify(body),
        });
      let apiKey = '';
      try {
        apiKey = await createAccountWithCli(crashDataDir, 'Crash');
        expect((await api('POST', { name: 'Before the crash' })).status).toBe(201);

        const killed = postmasterPid(crashDataDir);
        process.kill(killed, 'SIGKILL');
        // Fences, each with a deadline: the service notices and restarts it, then its pool answers /health again.
        await eventually(async () => (server.output().includes('has stopped (killed?): restarting it') ? true : undefined), 10_000);
        await eventually(async () => ((await fetch(`http://127.0.0.1:${port}/health`)).status === 200 ? true : undefined), 20_000);
        expect(postmasterPid(crashDataDir)).not.toBe(killed);

        const listed = await api('GET');
        expect(listed.status).toBe(200);
        expect(((await listed.json()) as { name: string }[]).map((agent) => agent.name)).toEqual(['Before the crash']);
        expect((await api('POST', { name: 'After the crash' })).status).toBe(201);
        // Its LISTEN connections (API key revocations, queued jobs) and the job queue's pool are back too.
        const { url } = await startEmbeddedPostgres({ dataDir: crashDataDir }); // attaches to the running server
        const connected =
          "SELECT DISTINCT application_name AS name FROM pg_stat_activity WHERE application_name LIKE 'voice-agent-api%' ORDER BY 1";
        const expected = ['voice-agent-api', 'voice-agent-api-jobs', 'voice-agent-api-jobs-listen', 'voice-agent-api-listen'];
        await eventually(async () => {
          const names = (await queryOnce<{ name: string }>(url, connected)).map((row) => row.name);
          return expected.every((name) => names.includes(name)) ? true : undefined;
        }, 10_000);
        expect(server.stderr()).toBe('');
      } finally {
        await server.stop('SIGTERM');
      }
      expect(await server.exited).toBe(0);
      // It stopped the PostgreSQL it restarted, as it would have the one it first started.
      expect(fs.existsSync(path.join(crashDataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    }, 60_000);

    it(
      'exits with 1 and one line on stderr when it cannot restart it within RESTART_WITHIN_S',
      async () => {
        const { server } = await startServerOnFreePorts({ DATA_DIR: crashDataDir, LOG_LEVEL: 'warn', RATE_LIMIT: '0' });
        try {
          // A setting PostgreSQL refuses, which the running server never reads again: every restart fails on it.
          fs.appendFileSync(path.join(crashDataDir, 'postgres', 'postgresql.conf'), "\nmax_connections = 'none'\n");
          process.kill(postmasterPid(crashDataDir), 'SIGKILL');
          const stillRunning = sleep((RESTART_WITHIN_S + 15) * 1000, 'still running', { ref: false });
          expect(await Promise.race([server.exited, stillRunning])).toBe(1);
        } finally {
          await server.stop('SIGKILL'); // when it did not exit (a no-op when it did)
        }
        expect(server.stderr()).toMatch(
          new RegExp(
            `^The embedded PostgreSQL stopped and could not be restarted within ${RESTART_WITHIN_S} s: The embedded PostgreSQL in \\S+ did not start: [^\\n]*FATAL: [^\\n]*postgresql.conf[^\\n]* contains errors \\(its log: [^\\n]+\\)\\n$`,
          ),
        );
      },
      (RESTART_WITHIN_S + 30) * 1000,
    );
  });
});

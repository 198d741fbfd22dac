import * as http from 'node:http';
import * as net from 'node:net';
import { INestApplication, Logger } from '@nestjs/common';
import { Client } from 'pg';
import request from 'supertest';
import { createApp } from '../src/app';
import { AccountsService } from '../src/auth/accounts.service';
import { loadConfig } from '../src/config/config';
import { FreezableProxy } from './freezable-proxy';
import { eventually, listenOnLoopback } from './helpers';

const seconds = async (action: () => Promise<unknown>) => {
  const started = Date.now();
  await action();
  return (Date.now() - started) / 1000;
};

describe('a slow or unreachable database gives a 503 within seconds, not a hanging request', () => {
  const config = loadConfig({ LOG_LEVEL: 'silent', DB_STATEMENT_TIMEOUT_MS: '500', DB_CONNECTION_TIMEOUT_MS: '500', DB_POOL_SIZE: '2' });
  const databaseUrl = new URL(process.env.DATABASE_URL!);
  let proxy: FreezableProxy;
  let app: INestApplication;
  let apiKey: string;
  let accountId: number;

  beforeAll(async () => {
    proxy = new FreezableProxy({ host: databaseUrl.hostname, port: Number(databaseUrl.port || 5432) });
    await proxy.listen();
    const proxied = new URL(databaseUrl);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    app = await createApp(config, proxied.toString());
    const { account, key } = await app.get(AccountsService).create('Faults');
    apiKey = key.apiKey;
    accountId = account.id;
  });
  afterAll(async () => {
    await app.close();
    await proxy.close();
  });

  it('a query stuck behind a lock is cancelled by the statement timeout: 503', async () => {
    const server = app.getHttpServer();
    const agent = (await request(server).post('/agents').set('X-Api-Key', apiKey).send({ name: 'Locked' }).expect(201)).body;
    const locker = new Client({ connectionString: process.env.DATABASE_URL });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT id FROM agents WHERE id = $1 FOR UPDATE', [agent.id]);
      let response!: request.Response;
      const elapsed = await seconds(async () => {
        response = await request(server).patch(`/agents/${agent.id}`).set('X-Api-Key', apiKey).send({ name: 'Changed' });
      });
      expect(response.status).toBe(503);
      expect(response.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'The database is unavailable; try again shortly',
      });
      expect(elapsed).toBeLessThan(3);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    expect((await request(server).get(`/agents/${agent.id}`).set('X-Api-Key', apiKey).expect(200)).body.name).toBe('Locked');
  });

  it('a database that stops answering gives 503s within a few seconds, and the service recovers when it is back', async () => {
    const server = app.getHttpServer();
    await request(server).get('/agents').set('X-Api-Key', apiKey).expect(200);
    proxy.freeze();
    const statuses: number[] = [];
    const elapsed = await seconds(async () => {
      const responses = await Promise.all(Array.from({ length: 4 }, () => request(server).get('/agents').set('X-Api-Key', apiKey)));
      statuses.push(...responses.map((response) => response.status));
    });
    expect(statuses).toEqual([503, 503, 503, 503]);
    expect(elapsed).toBeLessThan(6);
    expect((await request(server).get('/health')).status).toBe(503);

    proxy.thaw();
    const deadline = Date.now() + 5_000;
    let status = 0;
    while (Date.now() < deadline && status !== 200) {
      status = (await request(server).get('/agents').set('X-Api-Key', apiKey)).status;
    }
    expect(status).toBe(200);
  }, 30_000);

  describe('exports (GET /calls/export)', () => {
    /** Starts an export over a real socket; resolves once its first bytes are in (then reading is paused), with how the transfer ends. */
    async function startExport(): Promise<{ response: http.IncomingMessage; ended: Promise<'complete' | 'cut'> }> {
      const server = app.getHttpServer();
      if (!server.listening) await listenOnLoopback(server);
      const { port } = server.address() as net.AddressInfo;
      return new Promise((resolve, reject) => {
        const request = http.get(
          `http://127.0.0.1:${port}/calls/export?format=ndjson`,
          { headers: { 'X-Api-Key': apiKey } },
          (response) => {
            expect(response.statusCode).toBe(200);
            const ended = new Promise<'complete' | 'cut'>((settle) => {
              response.on('end', () => settle('complete'));
              response.on('aborted', () => settle('cut'));
              response.on('error', () => settle('cut'));
            });
            response.once('data', () => {
              response.pause();
              resolve({ response, ended });
            });
          },
        );
        request.on('error', reject);
      });
    }

    beforeAll(async () => {
      // Enough rows (about 40 MB of NDJSON) that the export is still running when the database freezes. Written
      // directly (not through the proxy, nor under the app's 500 ms statement timeout).
      const writer = new Client({ connectionString: process.env.DATABASE_URL });
      await writer.connect();
      try {
        await writer.query(
          `INSERT INTO calls (account_id, name, website, call_date) SELECT $1, 'Export ' || n, repeat('w', 2000), now() - n * interval '1 second' FROM generate_series(1, 20000) AS n`,
          [accountId],
        );
      } finally {
        await writer.end();
      }
    });

    it('answers 503 to an export that starts while the database does not answer', async () => {
      const server = app.getHttpServer();
      await request(server).get('/calls?limit=1').set('X-Api-Key', apiKey).expect(200);
      proxy.freeze();
      try {
        const response = await request(server).get('/calls/export').set('X-Api-Key', apiKey);
        expect(response.status).toBe(503);
        expect(response.body).toEqual({
          statusCode: 503,
          error: 'Service Unavailable',
          message: 'The database is unavailable; try again shortly',
        });
      } finally {
        proxy.thaw();
      }
    }, 30_000);

    it('cuts an export whose database stops answering mid-way (a visibly incomplete file), logs it without data, and recovers', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn');
      const { response, ended } = await startExport();
      proxy.freeze();
      // Reading again lets the service fetch the next batch, which the frozen database never sends.
      response.resume();
      try {
        await expect(ended).resolves.toBe('cut');
      } finally {
        proxy.thaw();
      }
      // The client can see the cut before the service's pipeline has reported it (Node 24 destroys the response first).
      const exportFailures = () => warn.mock.calls.filter(([, message]) => message === 'Export failed mid-stream');
      const logged = await eventually(async () => (exportFailures().length ? exportFailures() : undefined), 5_000).finally(() =>
        warn.mockRestore(),
      );
      expect(logged).toEqual([[{ err: { name: 'Error', code: undefined } }, 'Export failed mid-stream']]);
      const deadline = Date.now() + 5_000;
      let status = 0;
      while (Date.now() < deadline && status !== 200)
        status = (await request(app.getHttpServer()).get('/calls?limit=1').set('X-Api-Key', apiKey)).status;
      expect(status).toBe(200);
    }, 30_000);
  });
});

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createApp } from '../src/app';
import { AccountsService } from '../src/auth/accounts.service';
import { loadConfig } from '../src/config/config';
import { EmbeddedPostgres, startEmbeddedPostgres } from '../src/database/embedded-postgres';
import { runMigrations } from '../src/database/migrate';
import { startOnFreePort } from '../scripts/throwaway-postgres';
import request from 'supertest';
import { INestApplication } from '@nestjs/common';
import { createTestContext } from './helpers';

describe('GET /health, /health/live, /health/ready', () => {
  it('is public and answers 200 while the database is up', async () => {
    const context = await createTestContext();
    try {
      const ready = { status: 'ok', database: 'up', voice: { calls: 0, maxCalls: 100 } }; // VOICE_MAX_CALLS's default
      expect((await context.http.get('/health').expect(200)).body).toEqual(ready);
      expect((await context.http.get('/health/ready').expect(200)).body).toEqual(ready);
      expect((await context.http.get('/health/live').expect(200)).body).toEqual({ status: 'ok' });
    } finally {
      await context.close();
    }
  });

  describe('when the database stops (its own PostgreSQL, so other tests are not disturbed)', () => {
    const config = loadConfig({ LOG_LEVEL: 'silent', DB_CONNECTION_TIMEOUT_MS: '1000' });
    let dataDir: string;
    let port: number;
    let postgres: EmbeddedPostgres;
    let app: INestApplication;

    beforeAll(async () => {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'health-pg-'));
      fs.chmodSync(dataDir, 0o755);
      postgres = await startOnFreePort({ dataDir });
      port = Number(new URL(postgres.url).port); // the restart below takes the same one
      await runMigrations(postgres.url, config);
      app = await createApp(config, postgres.url);
    });
    afterAll(async () => {
      await app?.close();
      await postgres?.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it('answers 503 in the error shape (live: 200), stays up, and recovers without a restart', async () => {
      const { key } = await app.get(AccountsService).create('Health');
      const server = app.getHttpServer();
      await request(server).get('/agents').set('X-Api-Key', key.apiKey).expect(200);

      await postgres.stop();
      const health = await request(server).get('/health').expect(503);
      expect(health.body).toEqual({ statusCode: 503, error: 'Service Unavailable', message: 'The database is unreachable' });
      expect((await request(server).get('/health/ready').expect(503)).body).toEqual(health.body);
      expect((await request(server).get('/health/live').expect(200)).body).toEqual({ status: 'ok' });
      const api = await request(server).get('/agents').set('X-Api-Key', key.apiKey).expect(503);
      expect(api.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'The database is unavailable; try again shortly',
      });

      postgres = await startEmbeddedPostgres({ dataDir, port });
      const deadline = Date.now() + 5_000;
      let status = 0;
      while (Date.now() < deadline && status !== 200) {
        status = (await request(server).get('/health')).status;
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status).toBe(200);
      await request(server).get('/health/ready').expect(200);
      await request(server).get('/agents').set('X-Api-Key', key.apiKey).expect(200);
    });
  });
});

import { setTimeout as sleep } from 'node:timers/promises';
import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AccountsService } from '../src/auth/accounts.service';
import { createApp } from '../src/app';
import { AppConfig, loadConfig } from '../src/config/config';
import type { Logger } from 'pino';
import { Client as PgClient, type Pool } from 'pg';
import { Database } from '../src/database/database';
import { freePort, retryWhenPortTaken } from '../scripts/throwaway-postgres';
import { giveBackJobSchema, takeJobSchema } from './support/job-schemas';
import { reportSlowRequests } from './support/slow-requests';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

export interface TestAccount {
  id: number;
  apiKey: string;
}

type Client = ReturnType<typeof request>;
type Agent = ReturnType<typeof request.agent>;

export interface TestContext {
  app: INestApplication;
  config: AppConfig;
  /** Unauthenticated client. */
  http: Client;
  /** A fresh account with its API key. */
  createAccount(options?: { platform?: boolean; name?: string }): Promise<TestAccount>;
  /** A client that sends the account's key on every request. */
  as(account: TestAccount): Agent;
  close(): Promise<void>;
}

/** The real application on the test database (see global-setup.ts), not listening on a port. */
export async function createTestContext(
  overrides: Partial<AppConfig> = {},
  options: { logger?: Logger; openApiAtStartup?: boolean } = {},
): Promise<TestContext> {
  const databaseUrl = process.env.DATABASE_URL!;
  // No rate limit unless a test asks for one: tests send many requests with one key, and many without a valid one.
  // Each context has a job queue of its own (a schema), so that its jobs run with its own configuration: one another
  // context has closed and emptied, unless the test names one (two instances sharing their jobs).
  const pooledSchema = !overrides.jobQueueSchema;
  const jobQueueSchema = overrides.jobQueueSchema ?? (await takeJobSchema(databaseUrl));
  const config = {
    ...loadConfig({ ...process.env, LOG_LEVEL: 'silent', RATE_LIMIT: '0', UNAUTHENTICATED_RATE_LIMIT: '0' }),
    jobQueueSchema,
    ...overrides,
  };
  // The OpenAPI document is built if a test asks for it, as most never do (0.3 s of CPU an application), unless told.
  const app = await createApp(config, databaseUrl, { logger: options.logger, openApiAtStartup: options.openApiAtStartup ?? false });
  const server = app.getHttpServer();
  reportSlowRequests(server);
  const accounts = app.get(AccountsService);
  return {
    app,
    config,
    http: request(server),
    async createAccount({ platform = false, name = 'Test account' } = {}) {
      const { account, key } = await accounts.create(name, platform);
      return { id: account.id, apiKey: key.apiKey };
    },
    as: (account) => request.agent(server).set('X-Api-Key', account.apiKey),
    async close() {
      await app.close();
      if (pooledSchema) await giveBackJobSchema(databaseUrl, jobQueueSchema);
    },
  };
}

/**
 * A test context listening on 127.0.0.1 at the port its PUBLIC_BASE_URL names (so that the URLs it signs
 * work), on another free port when the one chosen was taken by another test file before the server bound it.
 */
export async function createListeningTestContext(
  overrides: Partial<AppConfig> = {},
  options: { logger?: Logger } = {},
): Promise<{ context: TestContext; baseUrl: string }> {
  return retryWhenPortTaken(async () => {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const context = await createTestContext({ ...overrides, publicBaseUrl: baseUrl }, options);
    try {
      await listenOnLoopback(context.app.getHttpServer(), port);
    } catch (error) {
      await context.close();
      throw error;
    }
    return { context, baseUrl };
  });
}

/** Makes `server` listen on 127.0.0.1, at `port` (0: one the system chooses); the port it listens on. */
export async function listenOnLoopback(server: import('node:net').Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as import('node:net').AddressInfo).port;
}

/** Columns that change without any write of the client's: left out of the fingerprint. */
const BOOKKEEPING_COLUMNS: Record<string, string> = { api_keys: 'last_used_at' }; // written (once a minute) by any request with the key

/** A source still to be indexed, or a webhook event still to be relayed or delivered: work an earlier request started. */
const PENDING_BACKGROUND_WORK = `SELECT 1 FROM knowledge_base_sources WHERE account_id = $1 AND status = 'pending'
  UNION ALL SELECT 1 FROM webhook_outbox WHERE account_id = $1
  UNION ALL SELECT 1 FROM webhook_deliveries WHERE account_id = $1 AND status = 'pending' LIMIT 1`;

/**
 * A digest of every row version the account owns, in every table that has an account_id: unchanged by a
 * refused write. Each row's physical address and creating transaction (ctid, xmin), which every insert,
 * update and delete changes, even one writing the same values: stricter than the contents, and it reads no
 * large value (the fuzz test takes one before and after each write). A table with a bookkeeping column (an
 * API key's last use) is digested by its contents without that column instead.
 * @param options.settle wait first for background work an earlier request started (indexing a source, relaying or
 *   attempting a webhook delivery): it is not the doing of the next request. Off for a context without job workers, where it would never finish.
 */
export async function accountFingerprint(dataSource: DataSource, accountId: number, { settle = true } = {}): Promise<string> {
  while (settle && (await dataSource.query(PENDING_BACKGROUND_WORK, [accountId])).length) await sleep(20);
  const tables = dataSource.entityMetadatas.filter((meta) => meta.columns.some((column) => column.databaseName === 'account_id'));
  // One round trip for every table (the fuzz test takes one before and after each write).
  const perTable = tables.map((meta) => {
    const bookkeeping = BOOKKEEPING_COLUMNS[meta.tableName];
    const [row, order] = bookkeeping ? [`(to_jsonb(t) - '${bookkeeping}')::text`, 't.id'] : ['t.ctid::text || t.xmin::text', 't.ctid'];
    return `SELECT '${meta.tableName}:' || md5(coalesce(string_agg(${row}, ',' ORDER BY ${order}), '')) AS digest FROM "${meta.tableName}" t WHERE account_id = $1`;
  });
  const rows: { digest: string }[] = await dataSource.query(perTable.join(' UNION ALL '), [accountId]);
  return rows.map((row) => row.digest).join(' ');
}

/** Polls `check` until it returns a value (not undefined), at most `timeoutMs`. For state that changes in the background. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(25);
  }
}

/**
 * Watches the SQL the application sends through its pool (every repository's query outside a transaction): the
 * statements' texts so far, and `restore` to stop watching.
 */
export function watchQueries(app: INestApplication): { texts: () => string[]; restore: () => void } {
  const pool = (app.get(DataSource).driver as PostgresDriver).master as Pool;
  const spy = jest.spyOn(pool, 'query');
  const text = (query: unknown) => (typeof query === 'string' ? query : String((query as { text?: unknown } | null)?.text));
  return { texts: () => spy.mock.calls.map(([query]) => text(query)), restore: () => spy.mockRestore() };
}

/** The pool of Database.stream (private: only tests that watch a stream's client have a use for it). */
export function streamPoolOf(app: INestApplication): Pool {
  return app.get<unknown, { streamPool: Pool }>(Database).streamPool;
}

/** One statement on a connection of its own to `url` (another database, or a second session beside the application's). */
export async function queryOnce<R = Record<string, unknown>>(url: string, text: string, params: unknown[] = []): Promise<R[]> {
  const client = new PgClient({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

/** supertest parser that keeps a binary body (a recording, a voice sample) as a Buffer: `.buffer(true).parse(binaryBody)`. */
export function binaryBody(response: import('superagent').Response, done: (error: Error | null, body: Buffer) => void): void {
  const parts: Buffer[] = [];
  response.on('data', (part: Buffer) => parts.push(part));
  response.on('end', () => done(null, Buffer.concat(parts)));
}

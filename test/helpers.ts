import { randomBytes } from 'node:crypto';
import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { AccountsService } from '../src/auth/accounts.service';
import { createApp } from '../src/app';
import { AppConfig, loadConfig } from '../src/config/config';
import type { Logger } from 'pino';

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
export async function createTestContext(overrides: Partial<AppConfig> = {}, options: { logger?: Logger } = {}): Promise<TestContext> {
  // No per-key rate limit unless a test asks for one: tests send many requests with one key.
  // Each context has a job queue of its own (a schema), so that its jobs run with its own configuration.
  const jobQueueSchema = `jobs_${randomBytes(6).toString('hex')}`;
  const config = { ...loadConfig({ ...process.env, LOG_LEVEL: 'silent', RATE_LIMIT: '0' }), jobQueueSchema, ...overrides };
  const app = await createApp(config, process.env.DATABASE_URL!, options.logger);
  const server = app.getHttpServer();
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
    close: () => app.close(),
  };
}

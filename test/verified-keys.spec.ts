import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { hashApiKey } from '../src/auth/api-key-token';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { runCommand } from '../src/cli/cli';
import { loadConfig } from '../src/config/config';
import { dataSourceOptions } from '../src/database/data-source-options';
import { VerifiedKeys } from '../src/auth/verified-keys';
import { ApiKeysRepository } from '../src/auth/auth.repository';
import { FreezableProxy } from './freezable-proxy';
import { createTestContext, TestAccount, TestContext, watchQueries } from './helpers';

const ACCOUNT = Object.freeze({ id: 1, name: 'Acme', isPlatform: false, keyId: 1, scopes: ['read', 'write'] as const, keyExpiresAt: null });

type CacheState = { listening: boolean; confirmedAt: number };

/** The cache on its own, with the LISTEN connection up and just checked (or down). */
function cacheWith(listening: boolean): VerifiedKeys {
  const cache = new VerifiedKeys({} as DataSource, {} as ApiKeysRepository);
  Object.assign(cache as unknown as CacheState, { listening, confirmedAt: Date.now() });
  return cache;
}

/** Repeats `step` until it returns true; how long that took, in ms (or a failure after `withinMs`). */
async function msUntil(step: () => Promise<boolean> | boolean, withinMs: number): Promise<number> {
  const started = Date.now();
  while (!(await step())) {
    if (Date.now() - started > withinMs) throw new Error(`not within ${withinMs} ms`);
    await sleep(20);
  }
  return Date.now() - started;
}

describe('VerifiedKeys (the cache of verified API keys)', () => {
  it('answers a remembered key until it is invalidated', () => {
    const cache = cacheWith(true);
    cache.remember(cache.startLookup(), 'hash', ACCOUNT);
    expect(cache.get('hash')).toBe(ACCOUNT);
    expect(cache.get('other')).toBeUndefined();
    cache.invalidate();
    expect(cache.get('hash')).toBeUndefined();
  });

  it('does not cache a lookup that a revocation overtook', () => {
    const cache = cacheWith(true);
    const lookup = cache.startLookup();
    cache.invalidate(); // a revocation arrives while the lookup is in flight
    cache.remember(lookup, 'hash', ACCOUNT);
    expect(cache.get('hash')).toBeUndefined();
  });

  it('caches nothing while it cannot hear revocations', () => {
    const cache = cacheWith(false);
    cache.remember(cache.startLookup(), 'hash', ACCOUNT);
    expect(cache.get('hash')).toBeUndefined();
  });

  it('stops answering and caching once the listening connection has not proved alive for a few seconds', () => {
    const cache = cacheWith(true);
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now);
    try {
      cache.remember(cache.startLookup(), 'hash', ACCOUNT);
      clock.mockReturnValue(now + 5_000);
      expect(cache.get('hash')).toBe(ACCOUNT);
      clock.mockReturnValue(now + 5_001); // a heartbeat is overdue: unsure
      expect(cache.get('hash')).toBeUndefined();
      cache.remember(cache.startLookup(), 'hash', ACCOUNT);
      expect(cache.get('hash')).toBeUndefined();
    } finally {
      clock.mockRestore();
    }
  });

  it("never answers a key past the key's own expiry, even within the 10 seconds", () => {
    const cache = cacheWith(true);
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now);
    try {
      cache.remember(cache.startLookup(), 'hash', ACCOUNT, new Date(now + 3_000));
      clock.mockReturnValue(now + 2_999);
      expect(cache.get('hash')).toBe(ACCOUNT);
      clock.mockReturnValue(now + 3_000);
      expect(cache.get('hash')).toBeUndefined();
    } finally {
      clock.mockRestore();
    }
  });

  it('forgets a key after 10 seconds', () => {
    const cache = cacheWith(true);
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now);
    try {
      cache.remember(cache.startLookup(), 'hash', ACCOUNT);
      clock.mockReturnValue(now + 9_999);
      (cache as unknown as CacheState).confirmedAt = now + 9_000; // heartbeats kept answering
      expect(cache.get('hash')).toBe(ACCOUNT);
      clock.mockReturnValue(now + 10_001);
      expect(cache.get('hash')).toBeUndefined();
    } finally {
      clock.mockRestore();
    }
  });
});

describe('API keys with the cache, in the running service', () => {
  let context: TestContext;
  let cli: DataSource;
  beforeAll(async () => {
    context = await createTestContext();
    // Another process's view: the CLI's own connection to the same database.
    cli = await new DataSource({ ...dataSourceOptions(process.env.DATABASE_URL!, loadConfig()), poolSize: 1 }).initialize();
  });
  afterAll(async () => {
    await cli.destroy();
    await context.close();
  });

  it('answers a verified key from the cache: no key lookup in the database', async () => {
    const account = await context.createAccount();
    await context.as(account).get('/voices').expect(200);
    const queries = watchQueries(context.app);
    try {
      await context.as(account).get('/voices').expect(200);
      expect(queries.texts()).toEqual([]);
    } finally {
      queries.restore();
    }
  });

  it('refuses a key revoked by the CLI (another connection) as soon as the revocation commits', async () => {
    const account = await context.createAccount();
    const other = await context.app.get(ApiKeysService).create(account.id);
    await context.as(account).get('/agents').expect(200); // now cached
    const [{ keyId }] = (await runCommand(cli, 'key:list', { account: String(account.id) })) as { keyId: number }[];

    await runCommand(cli, 'key:revoke', { 'key-id': String(keyId) });
    const revokedAt = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 2_000) status = (await context.as(account).get('/agents')).status;
    expect(status).toBe(401);
    // The NOTIFY travels over loopback: a few milliseconds at most, not the cache's 10 s lifetime.
    expect(Date.now() - revokedAt).toBeLessThan(500);
    await context.http.get('/agents').set('X-Api-Key', other.apiKey).expect(200);
  });
});

describe('revocations that do not go through the service, and a listener that dies', () => {
  let context: TestContext;
  beforeAll(async () => (context = await createTestContext()));
  afterAll(() => context.close());

  const sql = async (text: string, params: unknown[]) => {
    const operator = new Client({ connectionString: process.env.DATABASE_URL });
    await operator.connect();
    try {
      return (await operator.query(text, params)).rows;
    } finally {
      await operator.end();
    }
  };
  const keyId = async (account: TestAccount) =>
    ((await runCommand(cli(), 'key:list', { account: String(account.id) })) as { keyId: number }[])[0].keyId;
  let cliSource: DataSource | undefined;
  const cli = () => cliSource!;
  beforeAll(
    async () =>
      (cliSource = await new DataSource({ ...dataSourceOptions(process.env.DATABASE_URL!, loadConfig()), poolSize: 1 }).initialize()),
  );
  afterAll(() => cliSource?.destroy());

  it.each([
    ['revokes it', 'UPDATE api_keys SET revoked_at = now() WHERE id = $1'],
    ['deletes it', 'DELETE FROM api_keys WHERE id = $1'],
  ])('refuses a cached key at once when an operator %s in SQL', async (_, statement) => {
    const account = await context.createAccount();
    await context.as(account).get('/agents').expect(200);
    expect(context.app.get(VerifiedKeys).get(hashApiKey(account.apiKey))).toBeDefined(); // answered from the cache
    await sql(statement, [await keyId(account)]);
    const took = await msUntil(async () => (await context.as(account).get('/agents')).status === 401, 2_000);
    expect(took).toBeLessThan(500); // the NOTIFY, not the cache's 10 s lifetime
  });

  it('stops caching at once when its listening connection is killed server-side, and listens again', async () => {
    const cache = context.app.get(VerifiedKeys);
    const account = await context.createAccount();
    await context.as(account).get('/agents').expect(200);
    const listener = (cache as unknown as { listener: Client & { processID: number } }).listener;
    await sql('SELECT pg_terminate_backend($1)', [listener.processID]);
    await msUntil(() => cache.get(hashApiKey(account.apiKey)) === undefined, 2_000);
    // Reconnected: verified keys are cached again.
    await msUntil(
      async () => (await context.as(account).get('/agents')).status === 200 && cache.get(hashApiKey(account.apiKey)) !== undefined,
      5_000,
    );
  });

  it('notices within seconds a listening connection that went silent (no reset, no answer), and stops caching', async () => {
    const databaseUrl = new URL(process.env.DATABASE_URL!);
    const proxy = new FreezableProxy({ host: databaseUrl.hostname, port: Number(databaseUrl.port || 5432) });
    await proxy.listen();
    const proxied = new URL(databaseUrl);
    proxied.port = String(proxy.port);
    const cache = new VerifiedKeys(
      { options: { url: proxied.toString(), connectTimeoutMS: 1_000 } } as unknown as DataSource,
      { listPrefixes: () => Promise.resolve([]) } as unknown as ApiKeysRepository,
    );
    await cache.onModuleInit();
    const caches = () => {
      cache.remember(cache.startLookup(), 'hash', ACCOUNT);
      return cache.get('hash') !== undefined;
    };
    try {
      expect(caches()).toBe(true);
      proxy.freeze();
      const took = await msUntil(() => !caches(), 10_000);
      expect(took).toBeLessThan(7_000); // heartbeat every 2 s, 1 s to answer, not trusted past 5 s
      proxy.thaw(); // the network is back: it listens again
      await msUntil(caches, 5_000);
    } finally {
      await cache.onApplicationShutdown();
      await proxy.close();
    }
  });
});

import { DataSource } from 'typeorm';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { runCommand } from '../src/cli/cli';
import { loadConfig } from '../src/config/config';
import { dataSourceOptions } from '../src/database/data-source-options';
import { VerifiedKeys } from '../src/auth/verified-keys';
import { createTestContext, TestContext } from './helpers';

const ACCOUNT = Object.freeze({ id: 1, name: 'Acme', isPlatform: false });

/** The cache on its own, with the LISTEN connection up (or not). */
function cacheWith(listening: boolean): VerifiedKeys {
  const cache = new VerifiedKeys({} as DataSource);
  (cache as unknown as { listening: boolean }).listening = listening;
  return cache;
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

  it('forgets a key after 10 seconds', () => {
    const cache = cacheWith(true);
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now);
    try {
      cache.remember(cache.startLookup(), 'hash', ACCOUNT);
      clock.mockReturnValue(now + 9_999);
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
    const query = jest.spyOn(context.app.get(DataSource).manager, 'query');
    try {
      await context.as(account).get('/voices').expect(200);
      expect(query).not.toHaveBeenCalled();
    } finally {
      query.mockRestore();
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

import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import request from 'supertest';
import { createApp } from '../src/app';
import { generateApiKey } from '../src/auth/api-key-token';
import { AccountsService } from '../src/auth/accounts.service';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { createLogger } from '../src/common/logger';
import { loadConfig } from '../src/config/config';
import { freePort } from '../scripts/throwaway-postgres';
import { RATE_LIMIT_STORAGE } from '../src/rate-limit/rate-limit-storage';
import { VerifiedKeys } from '../src/auth/verified-keys';
import { createTestContext, eventually, queryOnce, TestAccount, TestContext, watchQueries } from './helpers';

/** The API-key guard's lookup of a key by its hash. */
const isKeyLookup = (sql: string) => sql.includes('key.key_hash = $1');

const TOO_MANY = { statusCode: 429, error: 'Too Many Requests', message: expect.stringMatching(/^Too many requests; retry in \d+ s$/) };

describe('rate limit per account', () => {
  let context: TestContext;
  beforeAll(async () => (context = await createTestContext({ rateLimit: 5, rateLimitWindowSeconds: 60 })));
  afterAll(() => context.close());

  it('answers 429 in the error shape with Retry-After once an account is over its limit; other accounts are unaffected', async () => {
    const busy = await context.createAccount();
    const quiet = await context.createAccount();
    for (let i = 0; i < 5; i++) await context.as(busy).get('/agents').expect(200);
    const limited = await context.as(busy).get('/agents').expect(429);
    expect(limited.body).toEqual(TOO_MANY);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    await context.as(busy).post('/agents').send({}).expect(429); // writes too, and nothing is created
    await context.as(quiet).get('/agents').expect(200);
  });

  it('gives all the keys of an account one budget', async () => {
    const account = await context.createAccount();
    const keys = await Promise.all([1, 2, 3].map(() => context.app.get(ApiKeysService).create(account.id)));
    const withKey = (apiKey: string) => context.http.get('/agents').set('X-Api-Key', apiKey);
    for (const apiKey of [account.apiKey, keys[0].apiKey, keys[1].apiKey, keys[2].apiKey, account.apiKey])
      await withKey(apiKey).expect(200);
    for (const apiKey of [account.apiKey, keys[0].apiKey, keys[1].apiKey, keys[2].apiKey])
      expect((await withKey(apiKey).expect(429)).body).toEqual(TOO_MANY);
  });

  it('does not limit the public health check', async () => {
    for (let i = 0; i < 8; i++) await context.http.get('/health').expect(200);
  });
});

/** The two rate-limit headers of a response, parsed: `RateLimit-Policy: 3;w=60`, `RateLimit: limit=3, remaining=2, reset=60`. */
function rateLimitHeaders(response: {
  headers: Record<string, string>;
}): { policy: string | undefined; limit: number; remaining: number; reset: number } | undefined {
  const header = response.headers.ratelimit;
  if (header === undefined) return undefined;
  const match = /^limit=(\d+), remaining=(\d+), reset=(\d+)$/.exec(header);
  if (!match) throw new Error(`malformed RateLimit header: ${header}`);
  return { policy: response.headers['ratelimit-policy'], limit: Number(match[1]), remaining: Number(match[2]), reset: Number(match[3]) };
}

describe('rate-limit headers (RateLimit-Policy, RateLimit)', () => {
  let context: TestContext;
  beforeAll(async () => (context = await createTestContext({ rateLimit: 3, unauthenticatedRateLimit: 2, rateLimitWindowSeconds: 60 })));
  afterAll(() => context.close());

  it("count the account's budget down on every response, 429 included, and start again in the next window", async () => {
    const account = await context.createAccount();
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(rateLimitHeaders(await context.as(account).get('/agents').expect(200))!);
    expect(seen.map(({ policy, limit, remaining }) => [policy, limit, remaining])).toEqual([
      ['3;w=60', 3, 2],
      ['3;w=60', 3, 1],
      ['3;w=60', 3, 0],
    ]);
    for (const { reset } of seen) expect(reset).toBeGreaterThanOrEqual(1);
    expect(seen[0].reset).toBeLessThanOrEqual(60);
    expect(seen[2].reset).toBeLessThanOrEqual(seen[0].reset);
    const limited = await context.as(account).get('/agents').expect(429);
    expect(rateLimitHeaders(limited)).toEqual({ policy: '3;w=60', limit: 3, remaining: 0, reset: Number(limited.headers['retry-after']) });

    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => now + 61_000); // the window and the block are over
    try {
      expect(rateLimitHeaders(await context.as(account).get('/agents').expect(200))).toEqual({
        policy: '3;w=60',
        limit: 3,
        remaining: 2,
        reset: 60,
      });
    } finally {
      clock.mockRestore();
    }
  });

  it('are on error responses too, which count', async () => {
    const account = await context.createAccount();
    const read = await context.app.get(ApiKeysService).create(account.id, { scopes: ['read'] });
    expect(rateLimitHeaders(await context.as(account).get('/agents/2147483647').expect(404))).toMatchObject({ remaining: 2 });
    expect(rateLimitHeaders(await context.as(account).post('/agents').send({ name: '' }).expect(400))).toMatchObject({ remaining: 1 });
    const forbidden = await context.http.post('/agents').set('X-Api-Key', read.apiKey).send({ name: 'Nope' }).expect(403); // the scope is checked after the count
    expect(rateLimitHeaders(forbidden)).toMatchObject({ remaining: 0 });
    // Over the limit, a read key's write is a 429 (the limit before the scope), and so is a POST with an Idempotency-Key,
    // whose key is not claimed: once the budget is back, the same key does the work.
    await context.http.post('/agents').set('X-Api-Key', read.apiKey).send({ name: 'Nope' }).expect(429);
    await context.as(account).post('/agents').set('Idempotency-Key', 'after-the-limit').send({ name: 'Later' }).expect(429);
    const now = Date.now();
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => now + 61_000);
    try {
      const created = await context
        .as(account)
        .post('/agents')
        .set('Idempotency-Key', 'after-the-limit')
        .send({ name: 'Later' })
        .expect(201);
      expect(created.headers['idempotent-replayed']).toBeUndefined();
    } finally {
      clock.mockRestore();
    }
  });

  it("give a request without a valid key its address's budget", async () => {
    const attempt = () => context.http.get('/agents'); // the only requests of this context without a valid key
    const first = rateLimitHeaders(await attempt().expect(401))!;
    const second = rateLimitHeaders(await attempt().expect(401))!;
    const limited = await attempt().expect(429);
    expect([first, second].map(({ policy, limit, remaining }) => [policy, limit, remaining])).toEqual([
      ['2;w=60', 2, 1],
      ['2;w=60', 2, 0],
    ]);
    expect(rateLimitHeaders(limited)).toEqual({ policy: '2;w=60', limit: 2, remaining: 0, reset: Number(limited.headers['retry-after']) });
  });
});

describe('the order of the checks: key, rate limit, scope, then the body', () => {
  let context: TestContext;
  beforeAll(async () => (context = await createTestContext({ rateLimit: 6, unauthenticatedRateLimit: 10, rateLimitWindowSeconds: 60 })));
  afterAll(() => context.close());

  it('answers a body it cannot take only to a request that passed the key, the limit and the scope, with the rate-limit headers', async () => {
    const account = await context.createAccount();
    const read = await context.app.get(ApiKeysService).create(account.id, { scopes: ['read'] });
    const textBody = (apiKey?: string) => {
      const post = context.http.post('/agents').set('Content-Type', 'text/plain');
      return (apiKey ? post.set('X-Api-Key', apiKey) : post).send('name=x');
    };
    expect(rateLimitHeaders(await textBody().expect(401))).toMatchObject({ limit: 10, remaining: 9 });
    expect(rateLimitHeaders(await textBody('vak_notakeyatall').expect(401))).toMatchObject({ limit: 10, remaining: 8 });
    expect(rateLimitHeaders(await textBody(read.apiKey).expect(403))).toMatchObject({ limit: 6, remaining: 5 });

    const unsupported = await textBody(account.apiKey).expect(415);
    expect(unsupported.body).toEqual({
      statusCode: 415,
      error: 'Unsupported Media Type',
      message: 'Content-Type must be application/json',
    });
    expect(rateLimitHeaders(unsupported)).toMatchObject({ limit: 6, remaining: 4 });
    const malformed = await context
      .as(account)
      .post('/agents')
      .set('Content-Type', 'application/json')
      .set('Idempotency-Key', 'bad-body')
      .send('{"name":')
      .expect(400);
    expect(rateLimitHeaders(malformed)).toMatchObject({ remaining: 3 });
    const tooLarge = await context
      .as(account)
      .post('/agents')
      .send({ name: 'x', description: 'y'.repeat(2 * 1024 * 1024) })
      .expect(413);
    expect(rateLimitHeaders(tooLarge)).toMatchObject({ remaining: 2 });
    // The refused body did not claim its Idempotency-Key: the same key with a good body does the work.
    const created = await context.as(account).post('/agents').set('Idempotency-Key', 'bad-body').send({ name: 'Good' }).expect(201);
    expect(created.headers['idempotent-replayed']).toBeUndefined();
    const agents = await context.as(account).get('/agents').expect(200); // the last of the budget
    expect(agents.body.map((agent: { name: string }) => agent.name)).toEqual(['Good']);
    expect((await textBody(account.apiKey).expect(429)).body).toEqual(TOO_MANY);
  });
});

describe('requests without a valid key, per client IP', () => {
  let context: TestContext;
  beforeAll(async () => (context = await createTestContext({ rateLimit: 0, unauthenticatedRateLimit: 3, rateLimitWindowSeconds: 60 })));
  afterAll(() => context.close());

  it('sends no per-account rate-limit headers with RATE_LIMIT=0 (there is no limit to tell)', async () => {
    const account = await context.createAccount();
    const response = await context.as(account).get('/agents').expect(200);
    expect([response.headers.ratelimit, response.headers['ratelimit-policy']]).toEqual([undefined, undefined]);
  });

  it('refuses a malformed key without touching the database', async () => {
    const queries = watchQueries(context.app);
    try {
      await context.http.get('/agents').set('X-Api-Key', 'vak_short').expect(401);
      await context.http
        .get('/agents')
        .set('X-Api-Key', `vak_${'a'.repeat(5000)}`)
        .expect(401);
      expect(queries.texts()).toEqual([]);
    } finally {
      queries.restore();
    }
  });

  it('answers 429 with Retry-After once an IP is over the limit, before any database work; a verified key still works', async () => {
    const fresh = await createTestContext({ rateLimit: 0, unauthenticatedRateLimit: 3, rateLimitWindowSeconds: 60 });
    try {
      const account = await fresh.createAccount();
      const uncached = await fresh.app.get(ApiKeysService).create(account.id);
      await fresh.as(account).get('/agents').expect(200); // verified, now in the cache
      await fresh.http.get('/agents').expect(401); // no key
      await fresh.http.get('/agents').set('X-Api-Key', 'not-a-key').expect(401); // malformed
      await fresh.http.get('/agents').set('X-Api-Key', generateApiKey().apiKey).expect(401); // unknown
      const queries = watchQueries(fresh.app);
      try {
        for (const key of [undefined, 'not-a-key', generateApiKey().apiKey]) {
          const attempt = fresh.http.get('/agents');
          const limited = await (key ? attempt.set('X-Api-Key', key) : attempt).expect(429);
          expect(limited.body).toEqual(TOO_MANY);
          expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        }
        expect(queries.texts()).toEqual([]); // not even for the well-formed key
        await fresh.as(account).get('/agents').expect(200); // answered from the cache of verified keys
        expect(queries.texts().filter(isKeyLookup)).toEqual([]);
        await fresh.http.get('/agents').set('X-Api-Key', uncached.apiKey).expect(200); // a valid key is looked up
        expect(queries.texts().filter(isKeyLookup)).toHaveLength(1);
      } finally {
        queries.restore();
      }
    } finally {
      await fresh.close();
    }
  });

  describe('an address blocked for the bad keys of one client (a shared NAT, a proxy)', () => {
    let shared: TestContext;
    let account: TestAccount;
    beforeAll(async () => {
      shared = await createTestContext({ rateLimit: 0, unauthenticatedRateLimit: 60, rateLimitWindowSeconds: 60 });
      account = await shared.createAccount();
    });
    afterAll(() => shared.close());

    /** The key lookups (by hash) made while `run` runs. */
    async function keyLookups(run: () => Promise<unknown>): Promise<number> {
      const queries = watchQueries(shared.app);
      try {
        await run();
        return queries.texts().filter(isKeyLookup).length;
      } finally {
        queries.restore();
      }
    }
    const withKey = (apiKey: string) => shared.http.get('/agents').set('X-Api-Key', apiKey);

    beforeAll(async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 70; i++) statuses.push((await withKey(generateApiKey().apiKey)).status);
      expect(statuses.slice(0, 59).every((status) => status === 401)).toBe(true);
      expect(statuses.slice(60)).toEqual(Array(10).fill(429));
    });

    it('still refuses a made-up key with a 429 and no database work', async () => {
      expect(await keyLookups(() => withKey(generateApiKey().apiKey).expect(429))).toBe(0);
    });

    it('serves a valid key not verified recently (not in the cache), with one key lookup', async () => {
      const idle = await shared.app.get(ApiKeysService).create(account.id); // made before the bad keys, never used
      await withKey(account.apiKey).expect(200);
      shared.app.get(VerifiedKeys).invalidate(); // its cache entry gone, as 10 s after its last use
      expect(await keyLookups(() => withKey(account.apiKey).expect(200))).toBe(1);
      expect(await keyLookups(() => withKey(idle.apiKey).expect(200))).toBe(1);
    });

    it('serves a key just made through the API, and one made by another server (its NOTIFY)', async () => {
      const made = await shared.as(account).post('/api-keys').send({ name: 'new' }).expect(201);
      expect(await keyLookups(() => withKey(made.body.apiKey as string).expect(200))).toBe(1);
      const elsewhere = generateApiKey();
      await queryOnce(
        process.env.DATABASE_URL!,
        `INSERT INTO api_keys (account_id, name, scopes, prefix, key_hash) VALUES ($1, 'other', '{read}', $2, $3)`,
        [account.id, elsewhere.prefix, elsewhere.keyHash],
      );
      await eventually(async () => shared.app.get(VerifiedKeys).mayExist(elsewhere.apiKey) || undefined);
      expect(await keyLookups(() => withKey(elsewhere.apiKey).expect(200))).toBe(1);
    });

    it("refuses a wrong key that shares a valid key's prefix after its one lookup, and counts it", async () => {
      const wrong = account.apiKey.slice(0, 12) + generateApiKey().apiKey.slice(12);
      expect(await keyLookups(() => withKey(wrong).expect(429))).toBe(1);
    });

    it('gives a revoked key no way through', async () => {
      const revoked = await shared.app.get(ApiKeysService).create(account.id);
      await shared.as(account).delete(`/api-keys/${revoked.key.id}`).expect(204);
      await withKey(revoked.apiKey).expect(429);
    });
  });
});

/** A real redis-server on loopback (installed by .ci/run; apt-get install redis-server). */
function startRedis(port: number, extra: string[] = []): Promise<ChildProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-'));
  const child = spawn('redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    ...extra,
  ]);
  child.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => String(chunk).includes('Ready to accept connections') && resolve(child));
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
  });
}

async function stopRedis(redis: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => redis.once('exit', resolve));
  redis.kill('SIGKILL');
  await exited;
}

const hasRedis = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].some((file) => fs.existsSync(file));
const requireRedis = () => {
  if (!hasRedis) throw new Error('redis-server is not installed: apt-get install redis-server (as .ci/run does)');
};

describe('rate limit shared through Redis (REDIS_URL)', () => {
  let redis: ChildProcess;
  let first: TestContext;
  let second: TestContext;

  beforeAll(async () => {
    requireRedis();
    const port = await freePort();
    redis = await startRedis(port);
    const shared = { rateLimit: 4, rateLimitWindowSeconds: 60, redisUrl: `redis://127.0.0.1:${port}` };
    first = await createTestContext(shared);
    second = await createTestContext(shared);
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    if (redis) await stopRedis(redis);
  });

  it('counts an account across instances', async () => {
    const account = await first.createAccount();
    await first.as(account).get('/agents').expect(200);
    await second.as(account).get('/agents').expect(200);
    await first.as(account).get('/agents').expect(200);
    await second.as(account).get('/agents').expect(200);
    const limited = await first.as(account).get('/agents').expect(429);
    expect(limited.body).toEqual(TOO_MANY);
    await second.as(account).get('/agents').expect(429);
    const other: TestAccount = await second.createAccount();
    await first.as(other).get('/agents').expect(200);
  });
});

describe('rate limit through Redis when Redis fails', () => {
  let port: number;
  let redis: ChildProcess;
  let app: INestApplication;
  let logs: { level: number; msg: string }[];
  const storageStatus = () => app.get<unknown, { redis: { status: string } }>(RATE_LIMIT_STORAGE).redis.status;
  const newAccount = async (): Promise<string> => (await app.get(AccountsService).create('Outage')).key.apiKey;
  const get = (apiKey: string) => request(app.getHttpServer()).get('/agents').set('X-Api-Key', apiKey);

  beforeAll(async () => {
    requireRedis();
    port = await freePort();
    redis = await startRedis(port);
    logs = [];
    const config = {
      ...loadConfig({ ...process.env, LOG_LEVEL: 'info' }),
      rateLimit: 3,
      unauthenticatedRateLimit: 0,
      redisUrl: `redis://127.0.0.1:${port}`,
    };
    const logger = createLogger(config, { write: (line: string) => void logs.push(JSON.parse(line)) });
    app = await createApp(config, process.env.DATABASE_URL!, { logger, openApiAtStartup: false });
  });
  afterAll(async () => {
    await app?.close();
    if (redis?.exitCode === null) await stopRedis(redis);
  });

  it('serves requests while Redis is down, warns once per outage, and limits again once Redis is back', async () => {
    const before = await newAccount();
    for (let i = 0; i < 3; i++) await get(before).expect(200);
    await get(before).expect(429);

    await stopRedis(redis);
    const during = await newAccount();
    for (let i = 0; i < 10; i++) await get(during).expect(200);
    const warnings = () => logs.filter((line) => line.level === 40 && line.msg.startsWith('Rate limiting through Redis failed'));
    expect(warnings()).toHaveLength(1);

    redis = await startRedis(port);
    while (storageStatus() !== 'ready') await sleep(20); // ioredis reconnects on its own
    const after = await newAccount();
    for (let i = 0; i < 3; i++) await get(after).expect(200);
    await get(after).expect(429);
    expect(logs.filter((line) => line.msg === 'Redis answers again: rate limits apply again')).toHaveLength(1);
    expect(warnings()).toHaveLength(1);
  });

  it('does not hang requests on a Redis that stopped answering', async () => {
    const apiKey = await newAccount();
    redis.kill('SIGSTOP'); // the connection stays open; nothing answers
    try {
      for (let i = 0; i < 5; i++) await get(apiKey).expect(200);
    } finally {
      redis.kill('SIGCONT');
    }
  });
});

describe('rate limit on Redis Cluster', () => {
  let redis: ChildProcess;
  let context: TestContext;

  beforeAll(async () => {
    requireRedis();
    const port = await freePort();
    // Its cluster bus on a free port of its own: by default port + 10,000, which another process may hold (it did).
    const busPort = await freePort();
    // A one-node cluster owning every slot: it refuses a command whose keys hash to different slots (CROSSSLOT).
    redis = await startRedis(port, [
      '--cluster-enabled',
      'yes',
      '--cluster-port',
      String(busPort),
      '--cluster-config-file',
      `nodes-${port}.conf`,
    ]);
    const admin = new Redis(port, '127.0.0.1');
    await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    while (!String(await admin.call('CLUSTER', 'INFO')).includes('cluster_state:ok')) await sleep(20);
    admin.disconnect();
    context = await createTestContext({ rateLimit: 2, rateLimitWindowSeconds: 60, redisUrl: `redis://127.0.0.1:${port}` });
  });
  afterAll(async () => {
    await context?.close();
    if (redis) await stopRedis(redis);
  });

  it('keeps the two keys of a counter in one slot, so the limit applies', async () => {
    const account = await context.createAccount();
    await context.as(account).get('/agents').expect(200);
    await context.as(account).get('/agents').expect(200);
    expect((await context.as(account).get('/agents').expect(429)).body).toEqual(TOO_MANY);
  });
});

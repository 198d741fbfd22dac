import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { freePort } from '../scripts/throwaway-postgres';
import { createTestContext, TestAccount, TestContext } from './helpers';

const TOO_MANY = { statusCode: 429, error: 'Too Many Requests', message: expect.stringMatching(/^Too many requests; retry in \d+ s$/) };

describe('rate limit per API key', () => {
  let context: TestContext;
  beforeAll(async () => (context = await createTestContext({ rateLimit: 5, rateLimitWindowSeconds: 60 })));
  afterAll(() => context.close());

  it('answers 429 in the error shape with Retry-After once a key is over its limit; other keys are unaffected', async () => {
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

  it('does not limit the public health check', async () => {
    for (let i = 0; i < 8; i++) await context.http.get('/health').expect(200);
  });
});

/** A real redis-server on loopback (installed by .ci/run; apt-get install redis-server). */
function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk) => String(chunk).includes('Ready to accept connections') && resolve(child));
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`redis-server exited with ${code}`)));
  });
}

const hasRedis = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].some((path) => fs.existsSync(path));

describe('rate limit shared through Redis (REDIS_URL)', () => {
  let redis: ChildProcess;
  let first: TestContext;
  let second: TestContext;

  beforeAll(async () => {
    if (!hasRedis) throw new Error('redis-server is not installed: apt-get install redis-server (as .ci/run does)');
    const port = await freePort();
    redis = await startRedis(port);
    const shared = { rateLimit: 4, rateLimitWindowSeconds: 60, redisUrl: `redis://127.0.0.1:${port}` };
    first = await createTestContext(shared);
    second = await createTestContext(shared);
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    redis?.kill();
  });

  it('counts a key across instances', async () => {
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

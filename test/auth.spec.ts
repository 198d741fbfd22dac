import { DataSource } from 'typeorm';
import { hashApiKey, generateApiKey } from '../src/auth/api-key-token';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { createTestContext, TestContext } from './helpers';

describe('API keys', () => {
  let context: TestContext;
  beforeAll(async () => (context = await createTestContext()));
  afterAll(() => context.close());

  const UNAUTHORIZED_INVALID = { statusCode: 401, error: 'Unauthorized', message: 'Invalid API key' };

  it('generates prefixed keys with at least 128 bits of randomness', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey().apiKey));
    expect(keys.size).toBe(1000);
    for (const key of keys) expect(key).toMatch(/^vak_[A-Za-z0-9_-]{32}$/); // 32 base64url chars = 192 bits
  });

  it('stores only the SHA-256 hash and a short prefix, never the key', async () => {
    const account = await context.createAccount();
    const rows = await context.app.get(DataSource).query('SELECT * FROM api_keys WHERE account_id = $1', [account.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0].key_hash).toBe(hashApiKey(account.apiKey));
    expect(rows[0].prefix).toBe(account.apiKey.slice(0, 12));
    expect(JSON.stringify(rows)).not.toContain(account.apiKey);
  });

  it('accepts a valid key', async () => {
    const account = await context.createAccount();
    await context.as(account).get('/agents').expect(200);
  });

  it('answers 401 without a key', async () => {
    const response = await context.http.get('/agents').expect(401);
    expect(response.body).toEqual({ statusCode: 401, error: 'Unauthorized', message: 'Missing X-Api-Key header' });
  });

  it.each([
    ['unknown', generateApiKey().apiKey],
    ['malformed', 'not-a-key'],
    ['too long', `vak_${'a'.repeat(5000)}`],
    ['SQL-looking', "vak_' OR '1'='1"],
  ])('answers the same 401 to an %s key', async (_, key) => {
    const response = await context.http.get('/agents').set('X-Api-Key', key).expect(401);
    expect(response.body).toEqual(UNAUTHORIZED_INVALID);
  });

  it('refuses a revoked key at once, with the same 401, while other keys of the account still work', async () => {
    const account = await context.createAccount();
    const keys = context.app.get(ApiKeysService);
    const second = await keys.create(account.id);
    await context.as(account).get('/agents').expect(200);
    const [first] = await keys.list(account.id);
    const revoked = await keys.revoke(account.id, first.id);
    expect(revoked.revokedAt).toBeInstanceOf(Date);
    const response = await context.as(account).get('/agents').expect(401);
    expect(response.body).toEqual(UNAUTHORIZED_INVALID);
    await context.http.get('/agents').set('X-Api-Key', second.apiKey).expect(200);
  });

  it('keeps the first revocation time when a key is revoked twice', async () => {
    const account = await context.createAccount();
    const keys = context.app.get(ApiKeysService);
    const [key] = await keys.list(account.id);
    const first = await keys.revoke(account.id, key.id);
    const second = await keys.revoke(account.id, key.id);
    expect(second.revokedAt).toEqual(first.revokedAt);
  });

  it('never logs or echoes the key', async () => {
    const key = generateApiKey().apiKey;
    const response = await context.http.get('/agents').set('X-Api-Key', key);
    expect(JSON.stringify(response.body)).not.toContain(key);
    expect(JSON.stringify(response.headers)).not.toContain(key);
  });
});

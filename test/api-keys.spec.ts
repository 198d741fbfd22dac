import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { hashApiKey } from '../src/auth/api-key-token';
import { ApiKeysRepository } from '../src/auth/auth.repository';
import { LAST_USED_RESOLUTION_MS } from '../src/auth/key-usage';
import { accountFingerprint, createTestContext, queryOnce, TestAccount, TestContext } from './helpers';

/** One statement on a connection of its own (an operator's SQL, or a second session holding a lock). */
const sql = <R = Record<string, unknown>>(text: string, params: unknown[] = []) => queryOnce<R>(process.env.DATABASE_URL!, text, params);

/** Repeats `step` until it returns true; how long that took, in ms (or a failure after `withinMs`). */
async function msUntil(step: () => Promise<boolean> | boolean, withinMs: number): Promise<number> {
  const started = Date.now();
  while (!(await step())) {
    if (Date.now() - started > withinMs) throw new Error(`not within ${withinMs} ms`);
    await sleep(20);
  }
  return Date.now() - started;
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

interface KeyResponse {
  id: number;
  name: string;
  prefix: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  apiKey?: string;
}

describe('API keys through the API', () => {
  let context: TestContext;
  let dataSource: DataSource;
  beforeAll(async () => {
    context = await createTestContext();
    dataSource = context.app.get(DataSource);
  });
  afterAll(() => context.close());

  /** A new key of the account, made through the API. */
  const createKey = async (account: TestAccount, body: object): Promise<KeyResponse & { apiKey: string }> =>
    (await context.as(account).post('/api-keys').send(body).expect(201)).body;
  const withKey = (apiKey: string) => ({
    get: (path: string) => context.http.get(path).set('X-Api-Key', apiKey),
    post: (path: string) => context.http.post(path).set('X-Api-Key', apiKey),
    patch: (path: string) => context.http.patch(path).set('X-Api-Key', apiKey),
    delete: (path: string) => context.http.delete(path).set('X-Api-Key', apiKey),
    head: (path: string) => context.http.head(path).set('X-Api-Key', apiKey),
    put: (path: string) => context.http.put(path).set('X-Api-Key', apiKey),
  });

  describe('POST /api-keys and GET /api-keys', () => {
    it('creates a key with every scope by default, shows it once, and lists it without the key or its hash', async () => {
      const account = await context.createAccount();
      const created = await createKey(account, { name: '  Reporting  ' });
      expect(created).toEqual({
        id: expect.any(Number),
        name: 'Reporting',
        prefix: created.apiKey.slice(0, 12),
        scopes: ['read', 'write'],
        createdAt: expect.stringMatching(ISO),
        lastUsedAt: null,
        expiresAt: null,
        revokedAt: null,
        apiKey: expect.stringMatching(/^vak_[A-Za-z0-9_-]{32}$/),
      });
      await withKey(created.apiKey).get('/agents').expect(200);

      const listed = (await context.as(account).get('/api-keys').expect(200)).body as KeyResponse[];
      expect(listed.map((key) => key.name)).toEqual(['CLI key', 'Reporting']);
      const { apiKey, ...withoutKey } = created;
      // Its use just now is recorded off the request: lastUsedAt may not be written yet.
      expect(listed[1]).toEqual({ ...withoutKey, lastUsedAt: listed[1].lastUsedAt === null ? null : expect.stringMatching(ISO) });
      expect(Object.keys(listed[1]).sort()).toEqual([
        'createdAt',
        'expiresAt',
        'id',
        'lastUsedAt',
        'name',
        'prefix',
        'revokedAt',
        'scopes',
      ]);
      const text = JSON.stringify(listed);
      expect(text).not.toContain(apiKey);
      expect(text).not.toContain(hashApiKey(apiKey));
      expect(text).not.toContain(account.apiKey);
    });

    it('takes scopes in any order and an expiry with any offset, and answers them canonical', async () => {
      const account = await context.createAccount();
      const read = await createKey(account, { name: 'Read', scopes: ['read'], expiresAt: '2099-06-30T23:59:59.5+05:30' });
      expect(read).toMatchObject({ scopes: ['read'], expiresAt: '2099-06-30T18:29:59.500Z' });
      expect((await createKey(account, { name: 'Both', scopes: ['write', 'read'], expiresAt: null })).scopes).toEqual(['read', 'write']);
      expect((await createKey(account, { name: 'Write', scopes: ['write'] })).scopes).toEqual(['write']);
      expect((await createKey(account, { name: '😀'.repeat(100) })).name).toBe('😀'.repeat(100));
    });

    it.each([
      ['no name', {}, 'name'],
      ['a blank name', { name: '   ' }, 'name'],
      ['a name of 101 characters', { name: 'e\u0301'.repeat(50) + 'ab' }, 'name'],
      ['a name that is not text', { name: 42 }, 'name'],
      ['no scope', { name: 'k', scopes: [] }, 'scopes'],
      ['an unknown scope', { name: 'k', scopes: ['admin'] }, 'scopes'],
      ['a scope twice', { name: 'k', scopes: ['read', 'read'] }, 'scopes'],
      ['scopes as text', { name: 'k', scopes: 'read' }, 'scopes'],
      ['null scopes', { name: 'k', scopes: null }, 'scopes'],
      ['an expiry in the past', { name: 'k', expiresAt: '2020-01-01T00:00:00Z' }, 'expiresAt'],
      ['an expiry without an offset', { name: 'k', expiresAt: '2099-01-01T00:00:00' }, 'expiresAt'],
      ['an expiry that is not a date', { name: 'k', expiresAt: 'tomorrow' }, 'expiresAt'],
      ['an expiry as a number', { name: 'k', expiresAt: 4102444800000 }, 'expiresAt'],
      ['an unknown field', { name: 'k', keyHash: 'x' }, 'keyHash'],
    ])('refuses %s with a 400 naming the field, creating nothing', async (_, body, field) => {
      const account = await context.createAccount();
      const before = await accountFingerprint(dataSource, account.id);
      const response = await context.as(account).post('/api-keys').send(body).expect(400);
      expect(response.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: expect.any(String),
        details: expect.arrayContaining([expect.objectContaining({ field })]),
      });
      expect(await accountFingerprint(dataSource, account.id)).toBe(before);
    });
  });

  describe('scopes', () => {
    it('lets a read key GET and HEAD, and refuses it every write with a 403 in the error shape, changing nothing', async () => {
      const account = await context.createAccount();
      const agent = (await context.as(account).post('/agents').send({ name: 'Desk' }).expect(201)).body;
      const read = withKey((await createKey(account, { name: 'Read', scopes: ['read'] })).apiKey);
      await read.get('/agents').expect(200);
      await read.get(`/agents/${agent.id}`).expect(200);
      await read.head('/agents').expect(200);
      const before = await accountFingerprint(dataSource, account.id);
      const FORBIDDEN = {
        statusCode: 403,
        error: 'Forbidden',
        message: 'This API key has the read scope only; this request needs the write scope',
      };
      for (const attempt of [
        read.post('/agents').send({ name: 'Nope' }),
        read.patch(`/agents/${agent.id}`).send({ name: 'Nope' }),
        read.delete(`/agents/${agent.id}`),
        read.put('/calls/00000000-0000-4000-8000-000000000001/recording').set('Content-Type', 'audio/mpeg').send(Buffer.from('x')),
        read.post('/api-keys').send({ name: 'Escalation' }),
        read.get('/api-keys'), // managing keys, reading them included, needs write
        read.delete(`/api-keys/${agent.id}`),
      ]) {
        expect((await attempt.expect(403)).body).toEqual(FORBIDDEN);
      }
      expect(await accountFingerprint(dataSource, account.id)).toBe(before);
    });

    it('lets a write-only key write and manage keys, and refuses it reads', async () => {
      const account = await context.createAccount();
      const write = withKey((await createKey(account, { name: 'Write', scopes: ['write'] })).apiKey);
      await write.post('/agents').send({ name: 'Desk' }).expect(201);
      expect((await write.get('/agents').expect(403)).body.message).toBe(
        'This API key has the write scope only; this request needs the read scope',
      );
      expect((await write.get('/api-keys').expect(200)).body).toHaveLength(2);
    });
  });

  describe('what a key may give the keys it creates', () => {
    it("refuses a scope the creating key lacks with a 403, creating nothing; left out, the scopes are the creating key's", async () => {
      const account = await context.createAccount();
      const write = withKey((await createKey(account, { name: 'Ingest', scopes: ['write'] })).apiKey);
      for (const body of [
        { name: 'Reader', scopes: ['read'] },
        { name: 'Both', scopes: ['read', 'write'] },
      ]) {
        const refused = await write.post('/api-keys').send(body).expect(403);
        expect(refused.body).toEqual({
          statusCode: 403,
          error: 'Forbidden',
          message: 'This API key does not have the read scope, so a key it creates cannot have it (its scopes: write)',
        });
      }
      expect((await write.get('/api-keys').expect(200)).body).toHaveLength(2);
      expect(
        (
          await write
            .post('/api-keys')
            .send({ name: 'Ingest 2', scopes: ['write'] })
            .expect(201)
        ).body.scopes,
      ).toEqual(['write']);
      expect((await write.post('/api-keys').send({ name: 'Default' }).expect(201)).body.scopes).toEqual(['write']);
    });

    it("refuses an expiry later than the creating key's, or none, and takes one up to the same instant; left out, its own", async () => {
      const account = await context.createAccount();
      const expiry = new Date(Date.now() + 3_600_000);
      const expiring = withKey((await createKey(account, { name: 'Expiring', expiresAt: expiry.toISOString() })).apiKey);
      const later = new Date(expiry.getTime() + 1).toISOString();
      for (const body of [
        { name: 'Forever', expiresAt: null },
        { name: 'Later', expiresAt: later },
      ]) {
        const refused = await expiring.post('/api-keys').send(body).expect(403);
        expect(refused.body.message).toBe(
          `This API key expires at ${expiry.toISOString()}, so a key it creates must have an expiresAt no later than that`,
        );
      }
      for (const at of [expiry, new Date(expiry.getTime() - 1)]) {
        const created = (await expiring.post('/api-keys').send({ name: 'Shorter', expiresAt: at.toISOString() }).expect(201)).body;
        expect(created.expiresAt).toBe(at.toISOString());
      }
      expect((await expiring.post('/api-keys').send({ name: 'Inherits' }).expect(201)).body.expiresAt).toBe(expiry.toISOString());
      expect((await expiring.get('/api-keys').expect(200)).body).toHaveLength(5);
    });
  });

  describe('DELETE /api-keys/{keyId}', () => {
    it('revokes at once, lists the key as revoked, and keeps the first revocation time when asked again', async () => {
      const account = await context.createAccount();
      const key = await createKey(account, { name: 'Short-lived' });
      await withKey(key.apiKey).get('/agents').expect(200); // cached as verified
      await context.as(account).delete(`/api-keys/${key.id}`).expect(204);
      expect((await withKey(key.apiKey).get('/agents').expect(401)).body).toEqual({
        statusCode: 401,
        error: 'Unauthorized',
        message: 'Invalid API key',
      });
      const revokedAt = ((await context.as(account).get('/api-keys').expect(200)).body as KeyResponse[])[1].revokedAt;
      expect(revokedAt).toMatch(ISO);
      await context.as(account).delete(`/api-keys/${key.id}`).expect(204);
      expect(((await context.as(account).get('/api-keys').expect(200)).body as KeyResponse[])[1].revokedAt).toBe(revokedAt);
    });

    it('lets a key revoke itself', async () => {
      const account = await context.createAccount();
      const [own] = (await context.as(account).get('/api-keys').expect(200)).body as KeyResponse[];
      await context.as(account).delete(`/api-keys/${own.id}`).expect(204);
      await context.as(account).get('/agents').expect(401);
    });

    it("answers 404 for another account's key, an unknown one and a malformed id, and the key keeps working", async () => {
      const owner = await context.createAccount();
      const intruder = await context.createAccount();
      const [key] = (await context.as(owner).get('/api-keys').expect(200)).body as KeyResponse[];
      expect((await context.as(intruder).delete(`/api-keys/${key.id}`).expect(404)).body).toEqual({
        statusCode: 404,
        error: 'Not Found',
        message: `API key ${key.id} not found`,
      });
      await context.as(intruder).delete('/api-keys/2147483647').expect(404);
      await context.as(intruder).delete('/api-keys/abc').expect(404);
      await context.as(owner).get('/agents').expect(200);
      expect(((await context.as(owner).get('/api-keys').expect(200)).body as KeyResponse[])[0].revokedAt).toBeNull();
    });
  });

  describe('expiry', () => {
    it('refuses a key once its expiry has passed (set by an operator in SQL: every server hears of it at once)', async () => {
      const account = await context.createAccount();
      const key = await createKey(account, { name: 'Expiring', expiresAt: inAnHour() });
      await withKey(key.apiKey).get('/agents').expect(200); // cached as verified
      await sql(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [key.id]);
      const took = await msUntil(async () => (await withKey(key.apiKey).get('/agents')).status === 401, 2_000);
      expect(took).toBeLessThan(500); // the trigger's NOTIFY, not the cache's 10 s lifetime
      expect((await withKey(key.apiKey).get('/agents').expect(401)).body.message).toBe('Invalid API key');
    });

    it('refuses an expired key that was never cached', async () => {
      const account = await context.createAccount();
      const key = await createKey(account, { name: 'Expired', expiresAt: inAnHour() });
      await sql(`UPDATE api_keys SET expires_at = now() - interval '1 millisecond' WHERE id = $1`, [key.id]);
      await withKey(key.apiKey).get('/agents').expect(401);
    });
  });

  describe('lastUsedAt', () => {
    const stored = async (keyId: number) =>
      (
        await sql<{ lastUsedAt: Date | null; version: string }>(
          `SELECT last_used_at AS "lastUsedAt", xmin::text AS version FROM api_keys WHERE id = $1`,
          [keyId],
        )
      )[0];

    it('is recorded off the request: a request answers while the write waits on a locked row', async () => {
      const account = await context.createAccount();
      const key = await createKey(account, { name: 'Locked' });
      const locker = new Client({ connectionString: process.env.DATABASE_URL });
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('SELECT 1 FROM api_keys WHERE id = $1 FOR UPDATE', [key.id]); // the UPDATE of lastUsedAt now waits
        await withKey(key.apiKey).get('/agents').expect(200);
        await withKey(key.apiKey).get('/voices').expect(200);
        await locker.query('COMMIT');
      } finally {
        await locker.end();
      }
      await msUntil(async () => (await stored(key.id)).lastUsedAt !== null, 5_000);
    });

    it('makes one write for many requests within a minute, on one server and across two', async () => {
      const account = await context.createAccount();
      const key = await createKey(account, { name: 'Busy' });
      const first = jest.spyOn(context.app.get(ApiKeysRepository), 'touchLastUsed');
      const second = await createTestContext();
      const other = jest.spyOn(second.app.get(ApiKeysRepository), 'touchLastUsed');
      try {
        await withKey(key.apiKey).get('/agents').expect(200);
        await first.mock.results[0].value; // the write, done off the request
        const written = await stored(key.id);
        expect(written.lastUsedAt).toBeInstanceOf(Date);
        for (let i = 0; i < 30; i++) await withKey(key.apiKey).get('/voices').expect(200);
        for (let i = 0; i < 30; i++) await second.http.get('/voices').set('X-Api-Key', key.apiKey).expect(200);
        await other.mock.results[0].value;
        // This server asked once; the other asked once too (it had not written this key), and its UPDATE
        // found the stored time less than a minute old: no row written (the row version is the same).
        expect([first.mock.calls.length, other.mock.calls.length]).toEqual([1, 1]);
        expect(await stored(key.id)).toEqual(written);
        const listed = ((await context.as(account).get('/api-keys').expect(200)).body as KeyResponse[])[1];
        expect(listed.lastUsedAt).toBe(written.lastUsedAt!.toISOString());
      } finally {
        first.mockRestore();
        other.mockRestore();
        await second.close();
      }
    });

    it('is written again once a minute has passed', async () => {
      const account = await context.createAccount();
      const key = await createKey(account, { name: 'Daily' });
      const touch = jest.spyOn(context.app.get(ApiKeysRepository), 'touchLastUsed');
      const clock = jest.spyOn(Date, 'now');
      try {
        await withKey(key.apiKey).get('/agents').expect(200);
        await touch.mock.results[0].value;
        await sql(`UPDATE api_keys SET last_used_at = now() - interval '61 seconds' WHERE id = $1`, [key.id]); // a minute ago
        const before = (await stored(key.id)).lastUsedAt!;
        const now = Date.now();
        clock.mockImplementation(() => now + LAST_USED_RESOLUTION_MS + 1_000);
        await withKey(key.apiKey).get('/agents').expect(200);
        expect(touch).toHaveBeenCalledTimes(2);
        await touch.mock.results[1].value;
        expect((await stored(key.id)).lastUsedAt!.getTime()).toBeGreaterThan(before.getTime() + 60_000);
      } finally {
        clock.mockRestore();
        touch.mockRestore();
      }
    });
  });
});

describe('API keys on several servers', () => {
  let first: TestContext;
  let second: TestContext;
  beforeAll(async () => {
    first = await createTestContext();
    second = await createTestContext();
  });
  afterAll(async () => {
    await first.close();
    await second.close();
  });

  it('revokes a key on every server at once', async () => {
    const account = await first.createAccount();
    const key = (await first.as(account).post('/api-keys').send({ name: 'Everywhere' }).expect(201)).body as KeyResponse & {
      apiKey: string;
    };
    await first.http.get('/agents').set('X-Api-Key', key.apiKey).expect(200);
    await second.http.get('/agents').set('X-Api-Key', key.apiKey).expect(200); // verified and cached on both
    await first.as(account).delete(`/api-keys/${key.id}`).expect(204);
    await first.http.get('/agents').set('X-Api-Key', key.apiKey).expect(401); // this server: at once
    const took = await msUntil(async () => (await second.http.get('/agents').set('X-Api-Key', key.apiKey)).status === 401, 2_000);
    expect(took).toBeLessThan(500); // the other: as soon as the NOTIFY arrives
  });
});

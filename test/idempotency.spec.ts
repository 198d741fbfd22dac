import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { Server } from 'node:http';
import type PgBoss from 'pg-boss';
import { DataSource } from 'typeorm';
import { AgentsService } from '../src/agents/agents.service';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { idempotencySecrets, openBody, sealBody } from '../src/idempotency/idempotency-crypto';
import { IDEMPOTENCY_SECRET, IDEMPOTENCY_SECRET_FILE, loadIdempotencySecret } from '../src/idempotency/idempotency-secret';
import { IdempotencyRepository } from '../src/idempotency/idempotency.repository';
import { IdempotencyService } from '../src/idempotency/idempotency.service';
import { Jobs } from '../src/jobs/jobs.service';
import { accountFingerprint, createTestContext, listenOnLoopback, TestAccount, TestContext } from './helpers';
import { PUBLIC_ROUTES, registeredRoutes } from './routes';
import { FakeTwilio } from './support/fake-twilio';
import { connectNumber, createAgent, telephonyOverrides } from './support/telephony';

/** Listening on a port of its own: concurrent requests through supertest need a server that stays up. */
async function listening(context: TestContext): Promise<TestContext> {
  const server: Server = context.app.getHttpServer();
  await listenOnLoopback(server);
  return context;
}

/**
 * Holds the next call of `method` on `target` until `open()`: `arrived` settles when the call has started. The
 * test decides when the request goes on, whatever the machine's speed (no sleeps).
 */
function gate<T extends object>(target: T, method: keyof T & string) {
  let open!: () => void;
  let enter!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const arrived = new Promise<void>((resolve) => (enter = resolve));
  const original = (target[method] as (...args: unknown[]) => unknown).bind(target);
  const spy = jest.spyOn(target, method as never).mockImplementationOnce((async (...args: unknown[]) => {
    enter();
    await opened;
    return original(...args);
  }) as never);
  return { arrived, open, restore: () => spy.mockRestore() };
}

const REPLAYED = 'idempotent-replayed';

/** The body key as it was derived before the server secret took part: from the Idempotency-Key alone. */
const keyAloneBodyKey = (key: string) => createHash('sha256').update('voice-agent-api idempotency body\0').update(key, 'latin1').digest();

describe('Idempotency-Key', () => {
  let context: TestContext;
  let dataSource: DataSource;
  beforeAll(async () => {
    context = await listening(await createTestContext());
    dataSource = context.app.get(DataSource);
  });
  afterAll(() => context.close());

  const agentsNamed = async (account: TestAccount, name: string) =>
    ((await context.as(account).get('/agents').expect(200)).body as { name: string }[]).filter((agent) => agent.name === name).length;
  const post = (account: TestAccount, path: string, key: string, body?: object) => {
    const request = context.as(account).post(path).set('Idempotency-Key', key);
    return body === undefined ? request : request.send(body);
  };

  it('replays the first answer (status and body) with Idempotent-Replayed: true, and does nothing again', async () => {
    const account = await context.createAccount();
    const key = randomUUID();
    const first = await post(account, '/agents', key, { name: 'Once', language: 'en-IN' }).expect(201);
    expect(first.headers[REPLAYED]).toBeUndefined();
    const before = await accountFingerprint(dataSource, account.id);
    for (let i = 0; i < 3; i++) {
      const again = await post(account, '/agents', key, { language: 'en-IN', name: 'Once' }).expect(201); // keys in another order: the same body
      expect(again.headers[REPLAYED]).toBe('true');
      expect(again.headers['content-type']).toBe(first.headers['content-type']);
      expect(again.text).toBe(first.text);
    }
    expect(await accountFingerprint(dataSource, account.id)).toBe(before);
    expect(await agentsNamed(account, 'Once')).toBe(1);
  });

  it('replays an error the first request got (a 4xx is an answer too)', async () => {
    const account = await context.createAccount();
    const key = randomUUID();
    const first = await post(account, '/agents', key, { name: '' }).expect(400);
    const again = await post(account, '/agents', key, { name: '' }).expect(400);
    expect([again.headers[REPLAYED], again.body]).toEqual(['true', first.body]);
  });

  it('answers 422 to the same key with another body, method or path, changing nothing', async () => {
    const account = await context.createAccount();
    const key = randomUUID();
    await post(account, '/agents', key, { name: 'First' }).expect(201);
    const before = await accountFingerprint(dataSource, account.id);
    const UNPROCESSABLE = {
      statusCode: 422,
      error: 'Unprocessable Entity',
      message: 'This Idempotency-Key was used with another request (API key, method, path or body) in the last 24 hours; use a new key',
    };
    expect((await post(account, '/agents', key, { name: 'Second' }).expect(422)).body).toEqual(UNPROCESSABLE);
    expect((await post(account, '/agents?x=1', key, { name: 'First' }).expect(422)).body).toEqual(UNPROCESSABLE);
    expect((await post(account, '/knowledge-bases', key, { name: 'First' }).expect(422)).body).toEqual(UNPROCESSABLE);
    expect((await post(account, '/agents', key).expect(422)).body).toEqual(UNPROCESSABLE); // no body at all
    expect(await accountFingerprint(dataSource, account.id)).toBe(before);
  });

  it('answers 409 while the first request is still running, then replays once it has answered', async () => {
    const account = await context.createAccount();
    const key = randomUUID();
    const held = gate(context.app.get(AgentsService), 'create');
    try {
      const first = post(account, '/agents', key, { name: 'Slow' }).then((response) => response);
      await held.arrived; // the first request is in its handler, its key claimed
      const conflict = await post(account, '/agents', key, { name: 'Slow' }).expect(409);
      expect(conflict.body).toEqual({
        statusCode: 409,
        error: 'Conflict',
        message: 'A request with this Idempotency-Key is still in progress; retry once it has been answered',
      });
      expect((await post(account, '/agents', key, { name: 'Other' }).expect(422)).body.statusCode).toBe(422); // another body: 422 even now
      held.open();
      const answered = await first;
      expect(answered.status).toBe(201);
      const replayed = await post(account, '/agents', key, { name: 'Slow' }).expect(201);
      expect([replayed.headers[REPLAYED], replayed.body]).toEqual(['true', answered.body]);
      expect(await agentsNamed(account, 'Slow')).toBe(1);
    } finally {
      held.restore();
    }
  });

  it('does not store a 5xx: the same key runs the request again', async () => {
    const account = await context.createAccount();
    const key = randomUUID();
    const agents = context.app.get(AgentsService);
    const failing = jest.spyOn(agents, 'create').mockRejectedValueOnce(new Error('unexpected'));
    try {
      expect((await post(account, '/agents', key, { name: 'Retried' }).expect(500)).body).toEqual({
        statusCode: 500,
        error: 'Internal Server Error',
        message: 'Internal server error',
      });
    } finally {
      failing.mockRestore();
    }
    const retried = await post(account, '/agents', key, { name: 'Retried' }).expect(201);
    expect(retried.headers[REPLAYED]).toBeUndefined();
    expect((await post(account, '/agents', key, { name: 'Retried' }).expect(201)).headers[REPLAYED]).toBe('true');
    expect(await agentsNamed(account, 'Retried')).toBe(1);
  });

  it('keeps keys per account: the same key of another account is another request', async () => {
    const [one, two] = [await context.createAccount(), await context.createAccount()];
    const key = randomUUID();
    await post(one, '/agents', key, { name: 'Mine' }).expect(201);
    const other = await post(two, '/agents', key, { name: 'Mine' }).expect(201);
    expect(other.headers[REPLAYED]).toBeUndefined();
    expect([await agentsNamed(one, 'Mine'), await agentsNamed(two, 'Mine')]).toEqual([1, 1]);
  });

  it('replays only to the API key that sent the first request: from another key of the account it is another request (422)', async () => {
    const account = await context.createAccount();
    const key = randomUUID();
    const first = await post(account, '/api-keys', key, { name: 'Full' }).expect(201);
    expect(first.body.scopes).toEqual(['read', 'write']);
    const writeOnly = (
      await context
        .as(account)
        .post('/api-keys')
        .send({ name: 'Ingest', scopes: ['write'] })
        .expect(201)
    ).body.apiKey as string;
    const replay = await context.http
      .post('/api-keys')
      .set('X-Api-Key', writeOnly)
      .set('Idempotency-Key', key)
      .send({ name: 'Full' })
      .expect(422);
    expect(replay.body.message).toBe(
      'This Idempotency-Key was used with another request (API key, method, path or body) in the last 24 hours; use a new key',
    );
    expect(JSON.stringify(replay.body)).not.toContain(first.body.apiKey);
    // The key that sent it still gets its answer again.
    expect((await post(account, '/api-keys', key, { name: 'Full' }).expect(201)).body.apiKey).toBe(first.body.apiKey);
  });

  it('forgets a key after 24 hours (the stored time moved back in SQL), then cleans it up', async () => {
    const account = await context.createAccount();
    const [old, fresh] = [randomUUID(), randomUUID()];
    await post(account, '/agents', old, { name: 'Yesterday' }).expect(201);
    await post(account, '/agents', fresh, { name: 'Today' }).expect(201);
    const count = async () =>
      Number((await dataSource.query('SELECT count(*) AS n FROM idempotency_keys WHERE account_id = $1', [account.id]))[0].n);
    await dataSource.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 second' WHERE account_id = $1 AND id = (SELECT min(id) FROM idempotency_keys WHERE account_id = $1)`,
      [account.id],
    );
    expect(await context.app.get(IdempotencyService).deleteExpired()).toBeGreaterThanOrEqual(1);
    expect(await count()).toBe(1); // the fresh one stays
    await post(account, '/agents', fresh, { name: 'Today' }).expect(201).expect(REPLAYED, 'true');
    // Expired, and the same key is a new request: with another body, no 422; with the same, done again.
    await dataSource.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE account_id = $1`, [account.id]);
    const renewed = await post(account, '/agents', fresh, { name: 'Tomorrow' }).expect(201);
    expect(renewed.headers[REPLAYED]).toBeUndefined();
    expect(await agentsNamed(account, 'Tomorrow')).toBe(1);
  });

  it('takes over a key whose first request never answered (its server died) after the lease', async () => {
    const account = await context.createAccount();
    const key = randomUUID();
    const held = gate(context.app.get(AgentsService), 'create');
    try {
      const first = post(account, '/agents', key, { name: 'Orphan' }).then((response) => response);
      await held.arrived;
      await post(account, '/agents', key, { name: 'Orphan' }).expect(409);
      // As if its server had died long ago: the claim is older than the lease, still unanswered.
      await dataSource.query(`UPDATE idempotency_keys SET created_at = now() - interval '5 minutes 1 second' WHERE account_id = $1`, [
        account.id,
      ]);
      const taken = await post(account, '/agents', key, { name: 'Orphan' }).expect(201);
      expect(taken.headers[REPLAYED]).toBeUndefined();
      held.open();
      await first; // the late first request does not overwrite the answer of the one that took over
      expect((await post(account, '/agents', key, { name: 'Orphan' }).expect(201)).body).toEqual(taken.body);
    } finally {
      held.restore();
    }
  });

  it.each([
    ['256 characters', 'k'.repeat(256)],
    ['a character outside printable ASCII', 'clé'],
    ['a tab', 'a\tb'],
  ])('refuses a key of %s with a 400, doing nothing', async (_, key) => {
    const account = await context.createAccount();
    const before = await accountFingerprint(dataSource, account.id);
    const response = await post(account, '/agents', key, { name: 'Refused' }).expect(400);
    expect(response.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: 'Idempotency-Key must be 1–255 printable ASCII characters',
    });
    expect(await accountFingerprint(dataSource, account.id)).toBe(before);
  });

  it('takes a key of 255 printable characters', async () => {
    const account = await context.createAccount();
    const key = `${' !"#$%&\'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~'}${'x'.repeat(255 - 39)}`;
    expect(key).toHaveLength(255);
    await post(account, '/agents', key, { name: 'Long key' }).expect(201);
    await post(account, '/agents', key, { name: 'Long key' }).expect(201).expect(REPLAYED, 'true');
  });

  it('stores nothing readable of a response: the new API key of POST /api-keys is replayed, not stored in clear', async () => {
    const account = await context.createAccount();
    const key = randomUUID();
    const first = await post(account, '/api-keys', key, { name: 'Partner' }).expect(201);
    const again = await post(account, '/api-keys', key, { name: 'Partner' }).expect(201).expect(REPLAYED, 'true');
    expect(again.body.apiKey).toBe(first.body.apiKey);
    expect(await context.app.get(ApiKeysService).list(account.id)).toHaveLength(2);
    const rows: { key_hash: string; body: Buffer }[] = await dataSource.query(
      'SELECT key_hash, body FROM idempotency_keys WHERE account_id = $1',
      [account.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].key_hash).not.toContain(key);
    for (const secret of [first.body.apiKey, first.body.prefix, 'Partner', key])
      expect(rows[0].body.includes(Buffer.from(secret))).toBe(false);
  });

  it('encrypts the stored answer with a key that needs the server secret: the Idempotency-Key alone does not open it, and the replay works', async () => {
    const account = await context.createAccount();
    const key = `order-${account.id}`; // a key weak enough to be guessed from a copy of the table
    const first = await post(account, '/api-keys', key, { name: 'Guessable' }).expect(201);
    const [row]: { key_hash: string; body: Buffer }[] = await dataSource.query(
      'SELECT key_hash, body FROM idempotency_keys WHERE account_id = $1',
      [account.id],
    );
    const boundTo = `${account.id}:${row.key_hash}`;
    const secrets = idempotencySecrets(context.app.get(IDEMPOTENCY_SECRET), key);
    expect(openBody(secrets, boundTo, row.body).toString()).toBe(first.text);
    expect(() => openBody({ ...secrets, bodyKey: keyAloneBodyKey(key) }, boundTo, row.body)).toThrow();
    const again = await post(account, '/api-keys', key, { name: 'Guessable' }).expect(201).expect(REPLAYED, 'true');
    expect(again.body.apiKey).toBe(first.body.apiKey);
  });

  it('refuses cleanly (409) the replay of an answer stored before the server secret took part, and does not run the request again', async () => {
    const account = await context.createAccount();
    const key = randomUUID();
    await post(account, '/agents', key, { name: 'Stored before' }).expect(201);
    // The record as the previous version stored it: the same lookup and request hash, the body sealed with the key alone.
    const [row]: { id: number; key_hash: string; body: Buffer }[] = await dataSource.query(
      'SELECT id, key_hash, body FROM idempotency_keys WHERE account_id = $1',
      [account.id],
    );
    const boundTo = `${account.id}:${row.key_hash}`;
    const secrets = idempotencySecrets(context.app.get(IDEMPOTENCY_SECRET), key);
    const legacy = sealBody({ ...secrets, bodyKey: keyAloneBodyKey(key) }, boundTo, openBody(secrets, boundTo, row.body));
    await dataSource.query('UPDATE idempotency_keys SET body = $1 WHERE account_id = $2 AND id = $3', [legacy, account.id, row.id]);
    const before = await accountFingerprint(dataSource, account.id);
    const refused = await post(account, '/agents', key, { name: 'Stored before' }).expect(409);
    expect(refused.body).toEqual({ statusCode: 409, error: 'Conflict', message: expect.stringContaining('cannot be read by this server') });
    expect(refused.headers[REPLAYED]).toBeUndefined();
    expect(await accountFingerprint(dataSource, account.id)).toBe(before);
    expect(await agentsNamed(account, 'Stored before')).toBe(1);
  });

  it('ignores the header on other methods, and costs a request without it nothing', async () => {
    const account = await context.createAccount();
    const agent = (await context.as(account).post('/agents').send({ name: 'Patched' }).expect(201)).body;
    const records = context.app.get(IdempotencyRepository);
    const calls = ['claim', 'find', 'complete', 'release'].map((method) => jest.spyOn(records, method as 'claim'));
    try {
      const key = randomUUID();
      for (const name of ['A', 'B']) {
        const patched = await context.as(account).patch(`/agents/${agent.id}`).set('Idempotency-Key', key).send({ name }).expect(200);
        expect([patched.headers[REPLAYED], patched.body.name]).toEqual([undefined, name]);
      }
      await context.as(account).get('/agents').set('Idempotency-Key', key).expect(200);
      await context.as(account).post('/agents').send({ name: 'No key' }).expect(201);
      expect(calls.map((spy) => spy.mock.calls.length)).toEqual([0, 0, 0, 0]);
    } finally {
      calls.forEach((spy) => spy.mockRestore());
    }
  });

  it('cleans expired keys up with a cron job', async () => {
    const boss = context.app.get<unknown, { boss: PgBoss }>(Jobs).boss;
    expect(await boss.getSchedules()).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'idempotency.expire', cron: '*/10 * * * *', timezone: 'UTC' })]),
    );
  });
});

/**
 * Every POST route that needs an API key, present and future, answers a retry with its first answer: a route
 * missing from this table fails the walk (add how to call it, or say here why it is not idempotent).
 */
const POST_ROUTES: Record<string, (context: TestContext, account: TestAccount) => Promise<{ path: string; body?: object }>> = {
  'POST /agents': async () => ({ path: '/agents', body: { name: 'Walked' } }),
  'POST /agents/:agentId/versions': async (context, account) => ({
    path: `/agents/${(await context.as(account).post('/agents').send({}).expect(201)).body.id}/versions`,
    body: { description: 'Walked' },
  }),
  'POST /agents/:agentId/versions/:version/restore': async (context, account) => {
    const agent = (await context.as(account).post('/agents').send({}).expect(201)).body;
    await context.as(account).post(`/agents/${agent.id}/versions`).send({}).expect(201);
    return { path: `/agents/${agent.id}/versions/1/restore` };
  },
  'POST /knowledge-bases': async () => ({ path: '/knowledge-bases', body: { name: 'Walked' } }),
  'POST /knowledge-bases/:kbId/sources': async (context, account) => {
    const kb = (await context.as(account).post('/knowledge-bases').send({ name: 'Parent' }).expect(201)).body;
    return { path: `/knowledge-bases/${kb.id}/sources`, body: { name: 'Walked', content: 'Opening hours: 9 to 5' } };
  },
  'POST /calls': async () => ({ path: '/calls', body: { name: 'Walked', durationSeconds: 30 } }),
  'POST /widget/sites': async () => ({ path: '/widget/sites', body: { name: 'Walked' } }),
  'POST /widget/sites/:siteId/rotate-key': async (context, account) => {
    const site = (await context.as(account).post('/widget/sites').send({ name: 'Rotated' }).expect(201)).body;
    return { path: `/widget/sites/${site.id}/rotate-key` };
  },
  'POST /api-keys': async () => ({ path: '/api-keys', body: { name: 'Walked' } }),
  'POST /knowledge-bases/:kbId/sources/:sourceId/refresh': async (context, account) => {
    const kb = (await context.as(account).post('/knowledge-bases').send({ name: 'Parent' }).expect(201)).body;
    const source = (
      await context
        .as(account)
        .post(`/knowledge-bases/${kb.id}/sources`)
        .send({ type: 'url', content: 'https://walk.invalid/' })
        .expect(201)
    ).body;
    return { path: `/knowledge-bases/${kb.id}/sources/${source.id}/refresh` };
  },
  // A host under .invalid: accepted (it is not a private address), never reached (the job workers are off here).
  'POST /webhooks': async () => ({ path: '/webhooks', body: { url: 'https://walk.invalid/hook', events: ['call.created'] } }),
  'POST /webhooks/:webhookId/rotate-secret': async (context, account) => ({
    path: `/webhooks/${(await webhook(context, account)).id}/rotate-secret`,
  }),
  'POST /webhooks/:webhookId/test': async (context, account) => ({ path: `/webhooks/${(await webhook(context, account)).id}/test` }),
  'POST /webhooks/:webhookId/deliveries/:deliveryId/retry': async (context, account) => {
    const { id } = await webhook(context, account);
    const delivery = (await context.as(account).post(`/webhooks/${id}/test`).expect(202)).body;
    return { path: `/webhooks/${id}/deliveries/${delivery.id}/retry` };
  },
  'POST /tools': async () => ({
    path: '/tools',
    body: { type: 'webhook', name: 'walked', description: 'Walks.', url: 'https://walk.invalid/tool' },
  }),
  'POST /tools/:toolId/rotate-secret': async (context, account) => {
    const tool = (
      await context
        .as(account)
        .post('/tools')
        .send({ type: 'webhook', name: 'rotated', description: 'Rotates.', url: 'https://walk.invalid/tool' })
        .expect(201)
    ).body;
    return { path: `/tools/${tool.id}/rotate-secret` };
  },
  // The dashboard's test call: a retry gets the same conversation and token, not a second conversation.
  'POST /agents/:agentId/conversations': async (context, account) => {
    const agent = (await context.as(account).post('/agents').send({ name: 'Talker' }).expect(201)).body;
    return { path: `/agents/${agent.id}/conversations`, body: { name: 'Walked' } };
  },
  // A number of the stand-in carrier's: the retry neither asks the carrier again nor saves a second number.
  'POST /phone-numbers': async () => {
    const carrierAccount = carrier.addAccount();
    const number = carrier.addNumber(carrierAccount);
    return {
      path: '/phone-numbers',
      body: { number: number.phoneNumber, twilioAccountSid: carrierAccount.sid, twilioAuthToken: carrierAccount.authToken },
    };
  },
  // A call placed once: the retry answers the same call, and asks the carrier for none.
  'POST /phone-numbers/:phoneNumberId/calls': async (context, account) => {
    const { phone } = await connectNumber(context, account, carrier, { agentId: await createAgent(context, account) });
    return { path: `/phone-numbers/${phone.id}/calls`, body: { to: '+919876543210' } };
  },
};

/** The stand-in carrier of the phone numbers' routes (started with their context). */
let carrier: FakeTwilio;

async function webhook(context: TestContext, account: TestAccount): Promise<{ id: number }> {
  return (
    await context
      .as(account)
      .post('/webhooks')
      .send({ url: 'https://walk.invalid/hook', events: ['call.created'] })
      .expect(201)
  ).body;
}

describe('Idempotency-Key on every POST route of the management API', () => {
  let context: TestContext;
  // No job workers: the work a route queues (a delivery, a fetch) stays queued, so that only the requests change data.
  beforeAll(async () => {
    carrier = await FakeTwilio.start();
    context = await createTestContext({ jobWorkers: false, ...telephonyOverrides(carrier) });
  });
  afterAll(async () => {
    await context.close();
    await carrier.close();
  });

  const postRoutes = () => registeredRoutes(context).filter((route) => route.startsWith('POST ') && !PUBLIC_ROUTES.includes(route));

  it('knows how to call every one of them', () => {
    expect(postRoutes().length).toBeGreaterThanOrEqual(7);
    expect(postRoutes().filter((route) => !POST_ROUTES[route])).toEqual([]);
  });

  it('replays the first answer of each, doing nothing again', async () => {
    const failures: string[] = [];
    for (const route of postRoutes()) {
      const account = await context.createAccount();
      const { path, body } = await POST_ROUTES[route](context, account);
      const send = () => {
        const request = context.as(account).post(path).set('Idempotency-Key', `walk ${route}`);
        return body === undefined ? request : request.send(body);
      };
      const first = await send();
      if (first.status >= 300) failures.push(`${route}: the first request answered ${first.status} ${first.text.slice(0, 200)}`);
      const before = await accountFingerprint(context.app.get(DataSource), account.id, { settle: false });
      const again = await send();
      if (again.status !== first.status || again.text !== first.text || again.headers[REPLAYED] !== 'true') {
        failures.push(`${route}: the retry answered ${again.status} (replayed: ${again.headers[REPLAYED]}) ${again.text.slice(0, 200)}`);
      }
      if ((await accountFingerprint(context.app.get(DataSource), account.id, { settle: false })) !== before)
        failures.push(`${route}: the retry changed the account's data`);
    }
    expect(failures).toEqual([]);
  });
});

describe('Idempotency-Key on two servers at once', () => {
  let first: TestContext;
  let second: TestContext;
  beforeAll(async () => {
    first = await listening(await createTestContext());
    second = await listening(await createTestContext());
  });
  afterAll(async () => {
    await first.close();
    await second.close();
  });

  it('does the work exactly once when both receive the same key at the same moment', async () => {
    const account = await first.createAccount();
    for (let round = 0; round < 10; round++) {
      const key = randomUUID();
      const name = `Raced ${round}`;
      const [a, b] = await Promise.all(
        [first, second].map((server) => server.as(account).post('/agents').set('Idempotency-Key', key).send({ name })),
      );
      // One did the work (201, not replayed); the other got its answer replayed, or a 409 while it ran.
      const [worker, other] = a.headers[REPLAYED] === undefined && a.status === 201 ? [a, b] : [b, a];
      expect([worker.status, worker.headers[REPLAYED]]).toEqual([201, undefined]);
      if (other.status === 201) expect([other.headers[REPLAYED], other.body]).toEqual(['true', worker.body]);
      else expect(other.status).toBe(409);
      const agents = (await first.as(account).get('/agents').expect(200)).body as { name: string }[];
      expect(agents.filter((agent) => agent.name === name)).toHaveLength(1);
    }
  });

  it('answers 409 on one server while the other runs the first request, and replays on either after', async () => {
    const account = await first.createAccount();
    const key = randomUUID();
    const held = gate(first.app.get(AgentsService), 'create');
    try {
      const running = first
        .as(account)
        .post('/agents')
        .set('Idempotency-Key', key)
        .send({ name: 'Held' })
        .then((response) => response);
      await held.arrived;
      await second.as(account).post('/agents').set('Idempotency-Key', key).send({ name: 'Held' }).expect(409);
      held.open();
      const answered = await running;
      expect(answered.status).toBe(201);
      const replayed = await second.as(account).post('/agents').set('Idempotency-Key', key).send({ name: 'Held' }).expect(201);
      expect([replayed.headers[REPLAYED], replayed.body]).toEqual(['true', answered.body]);
    } finally {
      held.restore();
    }
  });
});

describe('Idempotency-Key on two servers with different IDEMPOTENCY_SECRETs (no shared DATA_DIR, the variable unset or set apart)', () => {
  let first: TestContext;
  let second: TestContext;
  beforeAll(async () => {
    first = await createTestContext({ idempotencySecret: 'first-instance-secret-'.padEnd(40, 'x') });
    second = await createTestContext({ idempotencySecret: 'second-instance-secret-'.padEnd(40, 'x') });
  });
  afterAll(async () => {
    await first.close();
    await second.close();
  });

  it('replays on the server whose secret sealed the answer, and refuses it on the other with a 409, doing nothing again', async () => {
    const account = await first.createAccount();
    const key = randomUUID();
    const answered = await first.as(account).post('/agents').set('Idempotency-Key', key).send({ name: 'Apart' }).expect(201);
    const refused = await second.as(account).post('/agents').set('Idempotency-Key', key).send({ name: 'Apart' }).expect(409);
    expect(refused.body.message).toContain('IDEMPOTENCY_SECRET');
    const replayed = await first.as(account).post('/agents').set('Idempotency-Key', key).send({ name: 'Apart' }).expect(201);
    expect([replayed.headers[REPLAYED], replayed.body]).toEqual(['true', answered.body]);
    const agents = (await first.as(account).get('/agents').expect(200)).body as { name: string }[];
    expect(agents.filter((agent) => agent.name === 'Apart')).toHaveLength(1);
  });
});

describe('the idempotency server secret', () => {
  it('is IDEMPOTENCY_SECRET when set, else generated once in DATA_DIR (mode 0600) and the same for every instance that shares it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'idempotency-secret-'));
    try {
      expect(await loadIdempotencySecret('c'.repeat(32), dir)).toBe('c'.repeat(32));
      const created = await Promise.all([0, 1, 2].map(() => loadIdempotencySecret(undefined, dir)));
      expect(new Set(created).size).toBe(1);
      expect(created[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const file = path.join(dir, IDEMPOTENCY_SECRET_FILE);
      expect((await readFile(file, 'utf8')).trim()).toBe(created[0]);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect(await loadIdempotencySecret(undefined, dir)).toBe(created[0]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

import { Client } from 'pg';
import type { Response } from 'superagent';
import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/config';
import { QUESTION_NOTED } from '../src/conversations/answering/answerer';
import { bearer, eventually } from './conversation-helpers';
import { FakeLlm, startFakeLlm } from './fake-llm';
import { createTestContext, TestAccount, TestContext } from './helpers';

/** POST /widget/sessions and the CORS of the conversation routes, for the widget's page. */

const PAGE = 'https://shop.example.com';

describe('widget sessions', () => {
  let context: TestContext;
  let owner: TestAccount;
  let agent: { id: number; name: string };

  beforeAll(async () => {
    context = await createTestContext({ corsOrigins: ['https://dashboard.example.net'] });
    owner = await context.createAccount();
    agent = (await context.as(owner).post('/agents').send({ name: 'Asha', language: 'ta-IN' }).expect(201)).body;
  });
  afterAll(() => context.close());

  const createSite = async (body: object = {}): Promise<{ id: number; siteKey: string }> =>
    (
      await context
        .as(owner)
        .post('/widget/sites')
        .send({ name: 'Shop', agentId: agent.id, allowedDomain: '*.example.com', ...body })
        .expect(201)
    ).body;
  /** From the page PAGE unless another origin is given; `null`: no Origin header. */
  const startSession = (body: object, origin: string | null = PAGE) => {
    const request = context.http.post('/widget/sessions');
    return (origin === null ? request : request.set('Origin', origin)).send(body);
  };

  it("starts a conversation with the site's agent from an allowed page: 201, the greeting first, CORS for the page", async () => {
    const site = await createSite({ widgetGreeting: 'Vanakkam! How can I help?' });
    const response = await startSession({ siteKey: site.siteKey, name: 'Kavya', phone: '+91 90000 12345' }).expect(201);
    expect(response.headers['access-control-allow-origin']).toBe(PAGE);
    expect(response.headers.vary).toMatch(/Origin/);
    expect(response.body).toEqual({
      conversationId: expect.any(String),
      token: expect.any(String),
      greeting: 'Vanakkam! How can I help?',
      expiresAt: expect.any(String),
    });
    const { conversationId, token } = response.body;

    const reply = await context.http
      .post(`/conversations/${conversationId}/messages`)
      .set('Origin', PAGE)
      .set(bearer(token))
      .send({ text: 'Hours?' })
      .expect(200);
    expect(reply.headers['access-control-allow-origin']).toBe(PAGE);
    const view = (await context.http.get(`/conversations/${conversationId}`).set(bearer(token)).expect(200)).body;
    expect(view.messages.map((m: { speaker: string; text: string }) => [m.speaker, m.text])).toEqual([
      ['agent', 'Vanakkam! How can I help?'],
      ['user', 'Hours?'],
      ['agent', QUESTION_NOTED],
    ]);

    await context.http.post(`/conversations/${conversationId}/end`).set(bearer(token)).expect(204);
    const call = (await context.as(owner).get(`/calls/${conversationId}`).expect(200)).body;
    expect(call).toMatchObject({
      name: 'Kavya',
      phone: '+91 90000 12345',
      channel: 'web-widget',
      callType: 'web',
      website: 'shop.example.com',
      agent: 'Asha',
      agentId: agent.id,
      replyLanguage: 'ta-IN',
      status: 'new',
      callStatus: 'completed',
    });
    expect(call.transcript).toEqual([
      { speaker: 'agent', text: 'Vanakkam! How can I help?' },
      { speaker: 'user', text: 'Hours?' },
      { speaker: 'agent', text: QUESTION_NOTED },
    ]);
    // A widget conversation is never a test call: it is listed.
    expect((await context.as(owner).get('/calls?limit=1000').expect(200)).body.map((c: { id: string }) => c.id)).toContain(conversationId);
  });

  it("answers every page (`*`) when the site allows every domain, keeping the page's host as the website", async () => {
    const site = await createSite({ allowedDomain: '' });
    const response = await startSession({ siteKey: site.siteKey }, 'http://localhost:5173').expect(201);
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(response.body.greeting).toBe('');
  });

  it("keeps a page's host of up to 253 characters as the website, and none longer (no host is)", async () => {
    const site = await createSite({ allowedDomain: '*.example.com' });
    const website = async (host: string) => {
      const { conversationId, token } = (await startSession({ siteKey: site.siteKey }, `https://${host}`).expect(201)).body;
      await context.http.post(`/conversations/${conversationId}/messages`).set(bearer(token)).send({ text: 'Hi' }).expect(200);
      await context.http.post(`/conversations/${conversationId}/end`).set(bearer(token)).expect(204);
      return (await context.as(owner).get(`/calls/${conversationId}`).expect(200)).body.website;
    };
    const longest = `${'a'.repeat(241)}.example.com`; // 253 characters
    expect(await website(longest)).toBe(longest);
    expect(await website(`a${longest}`)).toBe('');
    expect(await website(`${'a'.repeat(3_000)}.example.com`)).toBe('');
  });

  it('refuses a page on another domain, or without an Origin (403, no CORS header), and nothing is started', async () => {
    const site = await createSite();
    const rows = async () =>
      (await context.app.get(DataSource).query('SELECT count(*)::int AS n FROM conversations WHERE account_id = $1', [owner.id]))[0].n;
    const before = await rows();
    for (const origin of ['https://evil.example.org', null]) {
      const response = await startSession({ siteKey: site.siteKey }, origin);
      expect(response.status).toBe(403);
      expect(response.body).toEqual({ statusCode: 403, error: 'Forbidden', message: expect.any(String) });
      expect(response.headers['access-control-allow-origin']).toBeUndefined();
    }
    expect(await rows()).toBe(before);
  });

  it('answers 404 for an unknown, rotated or deleted key; 400 for a missing or malformed one', async () => {
    const rotated = await createSite();
    await context.as(owner).post(`/widget/sites/${rotated.id}/rotate-key`).expect(200);
    const deleted = await createSite();
    await context.as(owner).delete(`/widget/sites/${deleted.id}`).expect(204);
    // The key is checked before the rest of the body: an unknown one is a 404 whatever comes with it.
    for (const body of [{}, { phone: 'no digits here' }, { extra: true }]) {
      for (const siteKey of [rotated.siteKey, deleted.siteKey, 'ws_unknown', 'x', 'ws_'.padEnd(101, 'x')]) {
        const response = await startSession({ siteKey, ...body });
        expect(response.status).toBe(404);
        expect(response.body).toEqual({ statusCode: 404, error: 'Not Found', message: 'Unknown site key' });
      }
    }
    const site = await createSite();
    for (const body of [
      {},
      { siteKey: 42 },
      { siteKey: null },
      { siteKey: site.siteKey, phone: 'no digits here' },
      { siteKey: site.siteKey, extra: true },
    ]) {
      const response = await startSession(body);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    }
    expect((await context.http.post('/widget/sessions').set('Origin', PAGE).expect(400)).body.details).toContainEqual({
      field: 'siteKey',
      message: 'siteKey must be a string',
    });
  });

  it('lets the page read the 400 about its body once the site allows it; another page gets the 403', async () => {
    const site = await createSite();
    const refused = await startSession({ siteKey: site.siteKey, name: 'n'.repeat(201), phone: 'call me' }).expect(400);
    expect(refused.headers['access-control-allow-origin']).toBe(PAGE);
    expect(refused.body.details.map((detail: { field: string }) => detail.field).sort()).toEqual(['name', 'phone']);
    const otherPage = await startSession({ siteKey: site.siteKey, phone: 'call me' }, 'https://elsewhere.example.org').expect(403);
    expect(otherPage.headers['access-control-allow-origin']).toBeUndefined();

    const { conversationId, token } = (await startSession({ siteKey: site.siteKey }).expect(201)).body;
    const message = (body: object, origin = PAGE) =>
      context.http.post(`/conversations/${conversationId}/messages`).set('Origin', origin).set(bearer(token)).send(body);
    for (const body of [{ text: '   ' }, { text: 'a', extra: 1 }, { text: 'x'.repeat(2_001) }]) {
      const response = await message(body).expect(400);
      expect(response.headers['access-control-allow-origin']).toBe(PAGE);
    }
    expect(
      (await message({ text: '' }, 'https://elsewhere.example.org').expect(400)).headers['access-control-allow-origin'],
    ).toBeUndefined();
  });

  it("answers 409 for a site without an agent, whose agent was deleted, or whose agent is another account's", async () => {
    const none = await createSite({ agentId: null });
    const temporary = (await context.as(owner).post('/agents').send({ name: 'Temporary' }).expect(201)).body;
    const orphaned = await createSite({ agentId: temporary.id });
    await context.as(owner).delete(`/agents/${temporary.id}`).expect(204);
    const stranger = await context.createAccount();
    const foreign = (await context.as(stranger).post('/agents').send({ name: 'Not yours' }).expect(201)).body;
    const hijacked = await createSite();
    await context.app.get(DataSource).query('UPDATE widget_sites SET agent_id = $1 WHERE id = $2', [foreign.id, hijacked.id]);
    for (const site of [none, orphaned, hijacked]) {
      const response = await startSession({ siteKey: site.siteKey });
      expect(response.status).toBe(409);
      expect(response.body).toEqual({ statusCode: 409, error: 'Conflict', message: 'This widget site has no agent to talk to' });
    }
  });

  it('answers the preflight of POST /widget/sessions for any page (the key is in the body)', async () => {
    const response = await context.http
      .options('/widget/sessions')
      .set('Origin', 'https://any.example.org')
      .set('Access-Control-Request-Method', 'POST')
      .expect(204);
    expect(response.headers['access-control-allow-origin']).toBe('https://any.example.org');
    expect(response.headers['access-control-allow-headers']).toMatch(/Content-Type/i);
  });

  describe('CORS of the conversation routes', () => {
    it("preflights the site's pages (Authorization and Content-Type allowed), refuses others (403) and unknown conversations (404)", async () => {
      const site = await createSite();
      const { conversationId } = (await startSession({ siteKey: site.siteKey }).expect(201)).body;
      for (const path of [
        `/conversations/${conversationId}`,
        `/conversations/${conversationId}/messages`,
        `/conversations/${conversationId}/end`,
      ]) {
        const allowed = await context.http
          .options(path)
          .set('Origin', 'https://www.example.com')
          .set('Access-Control-Request-Method', 'POST')
          .expect(204);
        expect(allowed.headers['access-control-allow-origin']).toBe('https://www.example.com');
        expect(allowed.headers['access-control-allow-headers']).toMatch(/Authorization/);
        expect(allowed.headers['access-control-allow-headers']).toMatch(/Content-Type/);
        expect(allowed.headers['access-control-allow-methods']).toMatch(/POST/);
        const refused = await context.http
          .options(path)
          .set('Origin', 'https://evil.example.org')
          .set('Access-Control-Request-Method', 'POST');
        expect(refused.status).toBe(403);
        expect(refused.headers['access-control-allow-origin']).toBeUndefined();
      }
      const unknown = await context.http.options('/conversations/00000000-0000-4000-8000-000000000000/messages').set('Origin', PAGE);
      expect(unknown.status).toBe(404);
    });

    it("gives the page no CORS header when its origin is not the site's (the browser hides the answer)", async () => {
      const site = await createSite();
      const { conversationId, token } = (await startSession({ siteKey: site.siteKey }).expect(201)).body;
      const response = await context.http
        .get(`/conversations/${conversationId}`)
        .set('Origin', 'https://evil.example.org')
        .set(bearer(token))
        .expect(200);
      expect(response.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('answers the dashboard (CORS_ORIGINS) for an API conversation, and no other page', async () => {
      const { conversationId, token } = (await context.as(owner).post(`/agents/${agent.id}/conversations`).send({}).expect(201)).body;
      const dashboard = 'https://dashboard.example.net';
      const preflight = await context.http.options(`/conversations/${conversationId}/messages`).set('Origin', dashboard).expect(204);
      expect(preflight.headers['access-control-allow-origin']).toBe(dashboard);
      const response = await context.http.get(`/conversations/${conversationId}`).set('Origin', dashboard).set(bearer(token)).expect(200);
      expect(response.headers['access-control-allow-origin']).toBe(dashboard);
      expect((await context.http.options(`/conversations/${conversationId}`).set('Origin', PAGE)).status).toBe(403);
    });
  });
});

describe('the widget rate limit on sessions and conversations', () => {
  let context: TestContext;

  beforeAll(async () => {
    // One proxy in front (TRUST_PROXY=1): a request with X-Forwarded-For comes from the address it names.
    context = await createTestContext({ widgetRateLimit: 3, widgetRateLimitWindowSeconds: 60, trustProxy: 1 });
  });
  afterAll(() => context.close());

  it("limits POST /widget/sessions per IP (its site key is in the body, read only after the count), and each conversation's routes per conversation and IP (429 with Retry-After)", async () => {
    const owner = await context.createAccount();
    const agent = (await context.as(owner).post('/agents').send({}).expect(201)).body;
    const site = (await context.as(owner).post('/widget/sites').send({ name: 'Limited', agentId: agent.id }).expect(201)).body;
    const statuses: number[] = [];
    for (let index = 0; index < 4; index++)
      statuses.push((await context.http.post('/widget/sessions').set('Origin', PAGE).send({ siteKey: site.siteKey })).status);
    expect(statuses).toEqual([201, 201, 201, 429]);

    const { conversationId, token } = (await context.as(owner).post(`/agents/${agent.id}/conversations`).send({}).expect(201)).body;
    const send = () => context.http.post(`/conversations/${conversationId}/messages`).set(bearer(token)).send({ text: 'hi' });
    expect([(await send()).status, (await send()).status, (await send()).status]).toEqual([200, 200, 200]);
    const limited = await send();
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
    expect(limited.body).toEqual({ statusCode: 429, error: 'Too Many Requests', message: expect.any(String) });
    // Another conversation has its own counter.
    const other = (await context.as(owner).post(`/agents/${agent.id}/conversations`).send({}).expect(201)).body;
    await context.http.get(`/conversations/${other.conversationId}`).set(bearer(other.token)).expect(200);
  });

  it("lets the page read the 429 (CORS `*`, Retry-After exposed), which the route's own CORS never reaches", async () => {
    const owner = await context.createAccount();
    const agent = (await context.as(owner).post('/agents').send({}).expect(201)).body;
    const site = (
      await context.as(owner).post('/widget/sites').send({ name: 'Shop', agentId: agent.id, allowedDomain: 'shop.example.com' }).expect(201)
    ).body;
    // From another address: the test above used up this one's sessions.
    const { conversationId, token } = (
      await context.http
        .post('/widget/sessions')
        .set('X-Forwarded-For', '198.51.100.7')
        .set('Origin', PAGE)
        .send({ siteKey: site.siteKey })
        .expect(201)
    ).body;
    const send = () =>
      context.http.post(`/conversations/${conversationId}/messages`).set('Origin', PAGE).set(bearer(token)).send({ text: 'hi' });
    for (let index = 0; index < 3; index++) expect((await send()).headers['access-control-allow-origin']).toBe(PAGE);
    const limited = await send();
    expect(limited.status).toBe(429);
    expect(limited.headers['access-control-allow-origin']).toBe('*');
    expect(limited.headers['access-control-expose-headers']).toBe('Retry-After');
    expect(limited.headers['retry-after']).toMatch(/^\d+$/);
  });
});

/**
 * What one widget site, one account and one client address may hold at once (CONVERSATION_MAX_*), with small caps.
 * One proxy in front (TRUST_PROXY=1): each request comes from the address its X-Forwarded-For names, a new one
 * unless a test says otherwise, as a script can send from many (and claim any Origin).
 */
describe('the caps on widget conversations', () => {
  let addresses = 0;
  const nextAddress = () => `10.0.${Math.floor(++addresses / 250)}.${addresses % 250}`;
  const withCaps = (caps: Partial<ReturnType<typeof loadConfig>['conversationLimits']>) => ({
    ...loadConfig({}).conversationLimits,
    ...caps,
  });

  /** A 429 of a cap, in the error shape, with its Retry-After, readable by any page. */
  function expectTooMany(response: Response, reason: string): void {
    expect({ status: response.status, body: response.body }).toEqual({
      status: 429,
      body: { statusCode: 429, error: 'Too Many Requests', message: expect.stringContaining(reason) },
    });
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(response.headers['access-control-expose-headers']).toBe('Retry-After');
  }

  async function newAccount(context: TestContext): Promise<{ account: TestAccount; siteKeys: string[] }> {
    const account = await context.createAccount();
    const agent = (await context.as(account).post('/agents').send({ name: 'Asha' }).expect(201)).body;
    const siteKeys: string[] = [];
    for (const name of ['First', 'Second', 'Third']) {
      siteKeys.push(
        (await context.as(account).post('/widget/sites').send({ name, agentId: agent.id, allowedDomain: '' }).expect(201)).body.siteKey,
      );
    }
    return { account, siteKeys };
  }

  const start = (context: TestContext, siteKey: string, address = nextAddress()) =>
    context.http.post('/widget/sessions').set('Origin', PAGE).set('X-Forwarded-For', address).send({ siteKey });

  describe('active conversations and starts', () => {
    let context: TestContext;

    beforeAll(async () => {
      context = await createTestContext({
        trustProxy: 1,
        conversationLimits: withCaps({ activePerSite: 2, activePerAccount: 3, startsPerAddress: 3 }),
      });
    });
    afterAll(() => context.close());

    const activeConversations = async (account: TestAccount) =>
      (
        await context.app
          .get(DataSource)
          .query(`SELECT count(*)::int AS n FROM conversations WHERE account_id = $1 AND status = 'active'`, [account.id])
      )[0].n;
    const end = (started: { conversationId: string; token: string }) =>
      context.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);

    it('caps the active conversations of a site, then of its account (429, Retry-After); ending one frees its place; other accounts are not held', async () => {
      const { account, siteKeys } = await newAccount(context);
      const first = (await start(context, siteKeys[0]).expect(201)).body;
      await start(context, siteKeys[0]).expect(201);
      expectTooMany(await start(context, siteKeys[0]), 'active on this site');
      expect(await activeConversations(account)).toBe(2); // the refused start made nothing
      await end(first);
      await start(context, siteKeys[0]).expect(201);
      // Another site of the account has a place of its own, and takes the account's last one.
      await start(context, siteKeys[1]).expect(201);
      expectTooMany(await start(context, siteKeys[2]), 'active on this account');
      expect(await activeConversations(account)).toBe(3);
      // The account's API conversations count too (that 429 is the management API's: no CORS for any page).
      const agentId = (await context.as(account).get('/agents').expect(200)).body[0].id;
      const api = await context.as(account).post(`/agents/${agentId}/conversations`).send({});
      expect({ status: api.status, retryAfter: api.headers['retry-after'] }).toEqual({ status: 429, retryAfter: '30' });
      // Another account is not held by them.
      const other = await newAccount(context);
      await start(context, other.siteKeys[0]).expect(201);
    });

    it("counts under the account's lock: a start waits for a concurrent one to commit, then counts the conversation it made", async () => {
      const { account, siteKeys } = await newAccount(context);
      const [site] = await context.app.get(DataSource).query(`SELECT id FROM widget_sites WHERE site_key = $1`, [siteKeys[0]]);
      await start(context, siteKeys[0]).expect(201);
      // A concurrent start, as it runs: the account's lock taken, the site's last place being taken, not yet committed.
      const concurrent = new Client({ connectionString: process.env.DATABASE_URL });
      await concurrent.connect();
      try {
        await concurrent.query('BEGIN');
        await concurrent.query(`SELECT pg_advisory_xact_lock(hashtext('conversation-starts'), $1)`, [account.id]);
        await concurrent.query(
          `INSERT INTO conversations (account_id, id, token_hash, agent_id, agent_name, reply_language, channel, site_id)
           VALUES ($1, gen_random_uuid(), repeat('0', 64), 0, 'Asha', 'en-IN', 'web-widget', $2)`,
          [account.id, site.id],
        );
        const starting = start(context, siteKeys[0]).then((response) => response);
        // The start waits for the lock (or, were there none, would be answered at once, counting one conversation).
        const waiting = eventually(async () =>
          (
            await concurrent.query(
              `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 2 AND objid = $1::oid`,
              [account.id],
            )
          ).rowCount
            ? true
            : undefined,
        ).catch(() => undefined);
        await Promise.race([starting, waiting]);
        await concurrent.query('COMMIT');
        expectTooMany(await starting, 'active on this site');
      } finally {
        await concurrent.end();
      }
      expect(await activeConversations(account)).toBe(2);
    });

    it('caps the widget conversations one address starts per window, whatever the sites and however many ended', async () => {
      const { siteKeys } = await newAccount(context);
      const address = '192.0.2.33';
      for (const siteKey of [siteKeys[0], siteKeys[1], siteKeys[0]]) await end((await start(context, siteKey, address).expect(201)).body);
      expectTooMany(await start(context, siteKeys[2], address), 'started from this address');
      await start(context, siteKeys[2], '192.0.2.34').expect(201);
    });
  });

  describe('replies being produced at once', () => {
    let context: TestContext;
    let llm: FakeLlm;

    beforeAll(async () => {
      llm = await startFakeLlm();
      context = await createTestContext({
        trustProxy: 1,
        conversationLimits: withCaps({ repliesPerAddress: 1, repliesPerSite: 2, repliesPerAccount: 3 }),
        llm: { baseUrl: llm.url, apiKey: undefined, timeoutMs: 20_000, maxTokens: 64 },
      });
    });
    afterAll(async () => {
      await context.close();
      await llm.close();
    });

    it('refuses a message beyond the replies its address, site or account may have produced at once (429, not recorded); they free as replies are recorded', async () => {
      let releaseReplies!: () => void;
      const held = new Promise<void>((resolve) => (releaseReplies = resolve));
      llm.behave({ kind: 'stream', pieces: ['Held ', 'reply.'], hold: held });
      const { siteKeys } = await newAccount(context);
      const other = await newAccount(context);
      const conversation = async (siteKey: string) =>
        (await start(context, siteKey).expect(201)).body as { conversationId: string; token: string };
      const [a1, a2, a3] = [await conversation(siteKeys[0]), await conversation(siteKeys[0]), await conversation(siteKeys[0])];
      const [b1, b2] = [await conversation(siteKeys[1]), await conversation(siteKeys[1])];
      const elsewhere = await conversation(other.siteKeys[0]);
      const send = (to: { conversationId: string; token: string }, address: string) =>
        context.http
          .post(`/conversations/${to.conversationId}/messages`)
          .set('X-Forwarded-For', address)
          .set(bearer(to.token))
          .send({ text: 'Hello?' });

      // Each message held by the provider: its reply slots are taken once the provider has its request.
      const replies: Promise<Response>[] = [];
      const hold = async (to: { conversationId: string; token: string }, address: string) => {
        const before = llm.requests.length;
        replies.push(send(to, address).then((response) => response));
        await eventually(async () => (llm.requests.length > before ? true : undefined));
      };
      await hold(a1, '198.51.100.1');
      expectTooMany(await send(a2, '198.51.100.1'), 'for this address');
      await hold(a2, '198.51.100.2');
      expectTooMany(await send(a3, '198.51.100.3'), 'for this site');
      await hold(b1, '198.51.100.3');
      expectTooMany(await send(b2, '198.51.100.4'), 'for this account');
      await hold(elsewhere, '198.51.100.4'); // another account's conversation, from the address just refused
      // A refused message is not recorded.
      for (const refused of [a3, b2])
        expect(
          (await context.http.get(`/conversations/${refused.conversationId}`).set(bearer(refused.token)).expect(200)).body.messages,
        ).toEqual([]);

      releaseReplies();
      for (const reply of await Promise.all(replies))
        expect({ status: reply.status, body: reply.body }).toEqual({ status: 200, body: { text: 'Held reply.' } });
      // Every reply recorded: their slots are free again.
      expect((await send(a3, '198.51.100.1').expect(200)).body).toEqual({ text: 'Held reply.' });
      expect((await send(b2, '198.51.100.1').expect(200)).body).toEqual({ text: 'Held reply.' });
    });
  });
});

import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { generateSiteKey } from '../src/widget-sites/site-key';
import { WidgetSitesRepository } from '../src/widget-sites/widget-sites.repository';
import { createTestContext, TestAccount, TestContext } from './helpers';

interface Site {
  id: number;
  siteKey: string;
}

describe('public widget routes', () => {
  let context: TestContext;
  let owner: TestAccount;

  beforeAll(async () => {
    context = await createTestContext();
    owner = await context.createAccount();
  });
  afterAll(() => context.close());

  const createSite = async (body: object = {}): Promise<Site> =>
    (
      await context
        .as(owner)
        .post('/widget/sites')
        .send({ name: 'Public test', ...body })
        .expect(201)
    ).body;
  const config = (siteKey: string, origin?: string) => {
    const request = context.http.get(`/widget/config/${siteKey}`);
    return origin === undefined ? request : request.set('Origin', origin);
  };

  describe('GET /widget/embed.js', () => {
    it('serves the script without a key, as cacheable JavaScript', async () => {
      const response = await context.http.get('/widget/embed.js?v=2').expect(200);
      expect(response.headers['content-type']).toBe('application/javascript; charset=utf-8');
      expect(response.headers['cache-control']).toMatch(/max-age=\d+/);
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers.etag).toMatch(/^"[\w-]+"$/);
      expect(response.text).toContain('/widget/config/');
      expect(response.text).toContain('attachShadow');
    });

    it('answers 304 to a revalidation with the same ETag', async () => {
      const { headers } = await context.http.get('/widget/embed.js').expect(200);
      const revalidated = await context.http.get('/widget/embed.js').set('If-None-Match', headers.etag).expect(304);
      expect(revalidated.text).toBe('');
      await context.http.get('/widget/embed.js').set('If-None-Match', '"stale"').expect(200);
      // RFC 9110: a weak comparison, a list, or `*`.
      for (const condition of [`W/${headers.etag}`, `"stale", ${headers.etag}`, '*']) {
        await context.http.get('/widget/embed.js').set('If-None-Match', condition).expect(304);
      }
      await context.http.get('/widget/embed.js').set('If-None-Match', '"stale", W/"older"').expect(200);
    });
  });

  describe('GET /widget/config/{siteKey}', () => {
    it('gives what the widget renders, and nothing internal', async () => {
      const agent = (
        await context.as(owner).post('/agents').send({ name: 'Asha', language: 'ta-IN', systemPrompt: 'SECRET-PROMPT' }).expect(201)
      ).body;
      const site = await createSite({
        agentId: agent.id,
        widgetPosition: 'bottom-left',
        widgetLabel: 'Ask Asha',
        widgetAvatar: 'female',
        widgetGreeting: 'Hello there',
        widgetMode: 'chat',
        widgetAskName: true,
        widgetAskPhone: false,
      });
      const response = await config(site.siteKey, 'https://shop.example.com').expect(200);
      expect(response.body).toEqual({
        label: 'Ask Asha',
        position: 'bottom-left',
        avatar: 'female',
        greeting: 'Hello there',
        mode: 'chat',
        askName: true,
        askPhone: false,
        agentName: 'Asha',
        language: 'ta-IN',
      });
      expect(response.text).not.toContain('SECRET-PROMPT');
      expect(response.text).not.toMatch(/account|systemPrompt|siteKey|agentId/i);
      expect(response.headers['cache-control']).toBe('no-store');
    });

    it('says agentName and language null when the site has no agent, or its agent was deleted', async () => {
      const agent = (await context.as(owner).post('/agents').send({ name: 'Temporary' }).expect(201)).body;
      const site = await createSite({ agentId: agent.id });
      expect((await config(site.siteKey).expect(200)).body).toMatchObject({ agentName: 'Temporary', language: 'hi-IN' });
      await context.as(owner).delete(`/agents/${agent.id}`).expect(204);
      expect((await config(site.siteKey).expect(200)).body).toMatchObject({ agentName: null, language: null });
    });

    it("never names an agent of another account, even one written into the table behind the API's back", async () => {
      const stranger = await context.createAccount();
      const foreign = (await context.as(stranger).post('/agents').send({ name: 'Not yours' }).expect(201)).body;
      const own = (await context.as(owner).post('/agents').send({ name: 'Yours' }).expect(201)).body;
      const site = await createSite({ agentId: own.id });
      const sites = context.app.get(WidgetSitesRepository);
      expect(await sites.findConfigBySiteKey(site.siteKey)).toMatchObject({ agentId: own.id, agentName: 'Yours' });
      await context.app.get(DataSource).query('UPDATE widget_sites SET agent_id = $1 WHERE id = $2', [foreign.id, site.id]);
      expect(await sites.findConfigBySiteKey(site.siteKey)).toMatchObject({ agentId: null, agentName: null });
      expect((await config(site.siteKey).expect(200)).body.agentName).toBeNull();
    });

    it('shows changes at once', async () => {
      const site = await createSite({ widgetLabel: 'Before' });
      expect((await config(site.siteKey).expect(200)).body.label).toBe('Before');
      await context.as(owner).patch(`/widget/sites/${site.id}`).send({ widgetLabel: 'After' }).expect(200);
      expect((await config(site.siteKey).expect(200)).body.label).toBe('After');
    });

    it.each(['ws_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'nonsense', 'ws_%27%20OR%201=1', `ws_${'x'.repeat(5000)}`])(
      'answers 404 for the unknown key %s',
      async (key) => {
        const response = await config(key, 'https://example.com').expect(404);
        expect(response.body).toEqual({ statusCode: 404, error: 'Not Found', message: 'Unknown site key' });
      },
    );

    it('stops answering the old key at once after a rotation, and answers the new one', async () => {
      const site = await createSite();
      await config(site.siteKey).expect(200);
      const rotated = (await context.as(owner).post(`/widget/sites/${site.id}/rotate-key`).expect(200)).body;
      await config(site.siteKey).expect(404);
      await config(rotated.siteKey).expect(200);
    });

    it('stops answering once the site is deleted', async () => {
      const site = await createSite();
      await context.as(owner).delete(`/widget/sites/${site.id}`).expect(204);
      await config(site.siteKey).expect(404);
    });
  });

  describe('CORS and the allowed domain', () => {
    it('answers every origin, and requests without one, when allowedDomain is ""', async () => {
      const site = await createSite({ allowedDomain: '' });
      const response = await config(site.siteKey, 'https://anywhere.example').expect(200);
      expect(response.headers['access-control-allow-origin']).toBe('*');
      await config(site.siteKey).expect(200);
      await config(site.siteKey, 'null').expect(200);
    });

    it('echoes a matching origin, with Vary: Origin', async () => {
      const site = await createSite({ allowedDomain: 'shop.example.com' });
      const response = await config(site.siteKey, 'https://shop.example.com').expect(200);
      expect(response.headers['access-control-allow-origin']).toBe('https://shop.example.com');
      expect(response.headers.vary).toMatch(/Origin/);
    });

    it.each([
      ['shop.example.com', 'https://www.example.com'],
      ['shop.example.com', 'https://shop.example.com.evil.net'],
      ['*.example.com', 'https://example.org'],
      ['localhost:5173', 'http://localhost:8080'],
      ['shop.example.com', 'null'],
    ])('refuses (403) a page on another domain: allowed %s, Origin %s', async (allowedDomain, origin) => {
      const site = await createSite({ allowedDomain });
      const response = await config(site.siteKey, origin).expect(403);
      // The message names the page's origin, never the allowed domain.
      expect(response.body).toEqual({ statusCode: 403, error: 'Forbidden', message: `This widget is not enabled on ${origin}` });
      expect(response.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('refuses (403) a request without Origin when a domain is set', async () => {
      const site = await createSite({ allowedDomain: 'shop.example.com' });
      const response = await config(site.siteKey).expect(403);
      expect(response.body).toEqual({ statusCode: 403, error: 'Forbidden', message: expect.stringContaining('Origin') });
    });

    it.each([
      ['*.example.com', 'https://example.com'],
      ['*.example.com', 'https://deep.shop.example.com'],
      ['localhost:5173', 'http://localhost:5173'],
      ['localhost', 'http://localhost:3000'],
    ])('allows: allowed %s, Origin %s', async (allowedDomain, origin) => {
      const site = await createSite({ allowedDomain });
      const response = await config(site.siteKey, origin).expect(200);
      expect(response.headers['access-control-allow-origin']).toBe(origin);
    });

    it('answers the CORS preflight for an allowed origin', async () => {
      const site = await createSite({ allowedDomain: '*.example.com' });
      const response = await context.http
        .options(`/widget/config/${site.siteKey}`)
        .set('Origin', 'https://www.example.com')
        .set('Access-Control-Request-Method', 'GET')
        .expect(204);
      expect(response.headers).toMatchObject({
        'access-control-allow-origin': 'https://www.example.com',
        'access-control-allow-methods': 'GET, OPTIONS',
        'access-control-max-age': '600',
      });
      expect(response.text).toBe('');
    });

    it('refuses the preflight of another origin (403) and of an unknown key (404)', async () => {
      const site = await createSite({ allowedDomain: 'example.com' });
      const refused = await context.http.options(`/widget/config/${site.siteKey}`).set('Origin', 'https://evil.example').expect(403);
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
      expect(refused.body.statusCode).toBe(403);
      await context.http.options('/widget/config/ws_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA').set('Origin', 'https://example.com').expect(404);
    });
  });
});

describe('public widget rate limit', () => {
  let context: TestContext;
  let owner: TestAccount;

  beforeAll(async () => {
    context = await createTestContext({ widgetRateLimit: 3, widgetRateLimitWindowSeconds: 60 });
    owner = await context.createAccount();
  });
  afterAll(() => context.close());

  const newSiteKey = async () =>
    (await context.as(owner).post('/widget/sites').send({ name: 'Limited' }).expect(201)).body.siteKey as string;

  it('answers 429 in the error shape with Retry-After once a site key is over its limit from one address', async () => {
    const siteKey = await newSiteKey();
    for (let i = 0; i < 3; i++) await context.http.get(`/widget/config/${siteKey}`).expect(200);
    const response = await context.http.get(`/widget/config/${siteKey}`).expect(429);
    expect(response.body).toEqual({
      statusCode: 429,
      error: 'Too Many Requests',
      message: expect.stringMatching(/^Too many requests; retry in \d+ s$/),
    });
    expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(response.headers['retry-after'])).toBeLessThanOrEqual(60);
  });

  it('counts each site key separately', async () => {
    const [first, second] = [await newSiteKey(), await newSiteKey()];
    for (let i = 0; i < 3; i++) await context.http.get(`/widget/config/${first}`).expect(200);
    await context.http.get(`/widget/config/${first}`).expect(429);
    await context.http.get(`/widget/config/${second}`).expect(200);
  });

  it('limits the script too, and never the management API', async () => {
    for (let i = 0; i < 3; i++) await context.http.get('/widget/embed.js').expect(200);
    const response = await context.http.get('/widget/embed.js').expect(429);
    expect(response.headers['retry-after']).toBeDefined();
    for (let i = 0; i < 5; i++) await context.as(owner).get('/widget/sites').expect(200);
  });
});

describe('public widget credentials, guessed', () => {
  let context: TestContext;
  let owner: TestAccount;

  beforeEach(async () => {
    // The widget's own limit out of reach: only the per-address count of credentials that do not exist can refuse.
    context = await createTestContext({ widgetRateLimit: 1_000, unauthenticatedRateLimit: 3, rateLimitWindowSeconds: 60 });
    owner = await context.createAccount();
  });
  afterEach(() => context.close());

  const guessedSiteKey = () => generateSiteKey();

  it('counts the 404s of site keys and conversations that do not exist against the address, then answers 429 before any lookup', async () => {
    const site = (await context.as(owner).post('/widget/sites').send({ name: 'Real' }).expect(201)).body;
    // A guess is counted once answered: the fourth, over the limit of 3, is still a 404; from then on, 429s.
    await context.http.get(`/widget/config/${guessedSiteKey()}`).expect(404);
    await context.http.post('/widget/sessions').send({ siteKey: guessedSiteKey() }).expect(404);
    await context.http.get(`/conversations/${randomUUID()}`).set('Authorization', 'Bearer vac_guess').expect(404);
    await context.http.get(`/widget/config/${guessedSiteKey()}`).expect(404);
    for (const request of [
      context.http.get(`/widget/config/${guessedSiteKey()}`),
      context.http.post('/widget/sessions').send({ siteKey: guessedSiteKey() }),
      context.http.get(`/conversations/${randomUUID()}`).set('Authorization', 'Bearer vac_guess'),
      context.http.get(`/widget/config/${site.siteKey}`), // a real key too: the address is refused before the lookup
    ]) {
      const response = await request;
      expect(response.status).toBe(429);
      expect(response.body).toEqual({
        statusCode: 429,
        error: 'Too Many Requests',
        message: expect.stringMatching(/^Too many requests; retry in \d+ s$/),
      });
      expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(response.headers['access-control-allow-origin']).toBe('*');
    }
    // A counter apart: the address's API keys, even one never seen before, and the script (which names nothing) still work.
    const fresh = (await context.as(owner).post('/api-keys').send({ name: 'Fresh' }).expect(201)).body.apiKey as string;
    await context.http.get('/widget/sites').set('X-Api-Key', fresh).expect(200);
    await context.http.get('/widget/embed.js').expect(200);
  });

  it('never counts a request that names a real site key, whatever it is answered', async () => {
    const site = (await context.as(owner).post('/widget/sites').send({ name: 'Real' }).expect(201)).body;
    for (let i = 0; i < 5; i++) await context.http.get(`/widget/config/${site.siteKey}`).expect(200);
    for (let i = 0; i < 5; i++) await context.http.post('/widget/sessions').send({ siteKey: site.siteKey }).expect(409); // no agent yet
    for (let i = 0; i < 4; i++) await context.http.get(`/widget/config/${guessedSiteKey()}`).expect(404);
    await context.http.get(`/widget/config/${site.siteKey}`).expect(429);
  });
});

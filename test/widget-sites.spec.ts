import { DataSource } from 'typeorm';
import { AgentsService } from '../src/agents/agents.service';
import { CreateWidgetSiteDto } from '../src/widget-sites/dto/create-widget-site.dto';
import { WidgetSitesService } from '../src/widget-sites/widget-sites.service';
import { createTestContext, TestAccount, TestContext } from './helpers';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SITE_KEY = /^ws_[A-Za-z0-9_-]{32}$/;
const PUBLIC_BASE_URL = 'https://voice.example.net';

describe('widget sites (management)', () => {
  let context: TestContext;
  let owner: TestAccount;
  let other: TestAccount;

  beforeAll(async () => {
    context = await createTestContext({ publicBaseUrl: PUBLIC_BASE_URL });
    owner = await context.createAccount();
    other = await context.createAccount();
  });
  afterAll(() => context.close());

  const createSite = async (account: TestAccount, body: object = { name: 'Storefront' }) =>
    (await context.as(account).post('/widget/sites').send(body).expect(201)).body;
  const createAgent = async (account: TestAccount, name = 'Reception') =>
    (await context.as(account).post('/agents').send({ name }).expect(201)).body;

  describe('create', () => {
    it('applies every default and generates the key and the snippet', async () => {
      const site = await createSite(owner, { name: 'Storefront' });
      expect(site).toEqual({
        id: expect.any(Number),
        name: 'Storefront',
        agentId: null,
        agentVersion: null,
        allowedDomain: '',
        widgetPosition: 'bottom-right',
        widgetLabel: 'Talk to us',
        widgetAvatar: 'default',
        widgetGreeting: '',
        widgetMode: 'voice',
        widgetAskName: true,
        widgetAskPhone: true,
        siteKey: expect.stringMatching(SITE_KEY),
        embedSnippet: `<script src="${PUBLIC_BASE_URL}/widget/embed.js?v=2" data-site-key="${site.siteKey}" async></script>`,
        createdAt: expect.stringMatching(TIMESTAMP),
        updatedAt: expect.stringMatching(TIMESTAMP),
      });
    });

    it('stores every given field, trimming name and label', async () => {
      const agent = await createAgent(owner);
      const site = await createSite(owner, {
        name: '  Clinic  ',
        agentId: agent.id,
        allowedDomain: 'clinic.example.in',
        widgetPosition: 'bottom-left',
        widgetLabel: '  बात करें  ',
        widgetAvatar: 'robot',
        widgetGreeting: 'Namaste! How can we help?',
        widgetMode: 'chat',
        widgetAskName: false,
        widgetAskPhone: false,
      });
      expect(site).toMatchObject({
        name: 'Clinic',
        agentId: agent.id,
        allowedDomain: 'clinic.example.in',
        widgetPosition: 'bottom-left',
        widgetLabel: 'बात करें',
        widgetAvatar: 'robot',
        widgetGreeting: 'Namaste! How can we help?',
        widgetMode: 'chat',
        widgetAskName: false,
        widgetAskPhone: false,
      });
      expect((await context.as(owner).get(`/widget/sites/${site.id}`).expect(200)).body).toEqual(site);
    });

    it('gives every site its own key', async () => {
      const keys = new Set<string>();
      for (let i = 0; i < 5; i++) keys.add((await createSite(owner)).siteKey);
      expect(keys.size).toBe(5);
    });

    it.each([
      ['https://www.Example.com/pricing?utm=x#top', 'www.example.com'],
      ['EXAMPLE.COM', 'example.com'],
      ['*.Example.com', '*.example.com'],
      ['http://localhost:5173/', 'localhost:5173'],
      ['localhost', 'localhost'],
      ['  shop.example.co.uk.  ', 'shop.example.co.uk'],
      ['', ''],
    ])('normalises the allowedDomain %j to %j', async (input, stored) => {
      const site = await createSite(owner, { name: 'Domain', allowedDomain: input });
      expect(site.allowedDomain).toBe(stored);
    });
  });

  describe('validation', () => {
    const invalid: [string, object, string][] = [
      ['no name', {}, 'name'],
      ['blank name', { name: '   ' }, 'name'],
      ['null name', { name: null }, 'name'],
      ['numeric name', { name: 7 }, 'name'],
      ['name over 200', { name: 'x'.repeat(201) }, 'name'],
      ['unknown position', { name: 'S', widgetPosition: 'top-left' }, 'widgetPosition'],
      ['unknown mode', { name: 'S', widgetMode: 'video' }, 'widgetMode'],
      ['unknown avatar', { name: 'S', widgetAvatar: 'cat' }, 'widgetAvatar'],
      ['empty label', { name: 'S', widgetLabel: '  ' }, 'widgetLabel'],
      ['label over 40', { name: 'S', widgetLabel: 'x'.repeat(41) }, 'widgetLabel'],
      ['null label', { name: 'S', widgetLabel: null }, 'widgetLabel'],
      ['greeting over 500', { name: 'S', widgetGreeting: 'x'.repeat(501) }, 'widgetGreeting'],
      ['string boolean', { name: 'S', widgetAskName: 'true' }, 'widgetAskName'],
      ['numeric boolean', { name: 'S', widgetAskPhone: 1 }, 'widgetAskPhone'],
      ['null boolean', { name: 'S', widgetAskPhone: null }, 'widgetAskPhone'],
      ['string agentId', { name: 'S', agentId: '5' }, 'agentId'],
      ['fractional agentId', { name: 'S', agentId: 1.5 }, 'agentId'],
      ['zero agentId', { name: 'S', agentId: 0 }, 'agentId'],
      ['agentId beyond integer range', { name: 'S', agentId: 2 ** 31 }, 'agentId'],
      ['unknown agentId', { name: 'S', agentId: 2_147_483_647 }, 'agentId'],
      ['a siteKey', { name: 'S', siteKey: 'ws_mine' }, 'siteKey'],
      ['unknown field', { name: 'S', colour: 'blue' }, 'colour'],
      ['NUL in name', { name: 'a\u0000b' }, 'name'],
      ['NUL in label', { name: 'S', widgetLabel: '\u0000' }, 'widgetLabel'],
      ['unpaired surrogate in greeting', { name: 'S', widgetGreeting: 'hi \ud800 there' }, 'widgetGreeting'],
      ['NUL in allowedDomain', { name: 'S', allowedDomain: 'exa\u0000mple.com' }, 'allowedDomain'],
      ['numeric allowedDomain', { name: 'S', allowedDomain: 42 }, 'allowedDomain'],
      ['null allowedDomain', { name: 'S', allowedDomain: null }, 'allowedDomain'],
      ['allowedDomain with a space', { name: 'S', allowedDomain: 'exa mple.com' }, 'allowedDomain'],
      ['allowedDomain wildcard in the middle', { name: 'S', allowedDomain: 'shop.*.example.com' }, 'allowedDomain'],
      ['allowedDomain bare wildcard', { name: 'S', allowedDomain: '*' }, 'allowedDomain'],
      ['allowedDomain single label', { name: 'S', allowedDomain: 'intranet' }, 'allowedDomain'],
      ['allowedDomain ftp URL', { name: 'S', allowedDomain: 'ftp://files.example.com' }, 'allowedDomain'],
      ['allowedDomain with credentials', { name: 'S', allowedDomain: 'https://user:pw@example.com' }, 'allowedDomain'],
      ['allowedDomain over 253 characters', { name: 'S', allowedDomain: `${'a'.repeat(60)}.`.repeat(5) + 'com' }, 'allowedDomain'],
    ];
    it.each(invalid)('refuses %s with a 400 naming the field', async (_, body, field) => {
      const response = await context.as(owner).post('/widget/sites').send(body).expect(400);
      expect(response.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: expect.any(String),
        details: expect.arrayContaining([expect.objectContaining({ field })]),
      });
    });

    // 63 + 1 + 63 + 1 + 63 + 1 + 57 + 1 + 3 = 253 characters, the longest host name.
    const longestHost = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`;

    it('stores the longest allowedDomain there is (*. + a 253-character host + :65535), on create and PATCH', async () => {
      expect(longestHost).toHaveLength(253);
      const longest = `*.${longestHost}:65535`;
      const site = await createSite(owner, { name: 'S', allowedDomain: `https://${longest.toUpperCase()}/path?q=1` });
      expect(site.allowedDomain).toBe(longest);
      const other = await createSite(owner, { name: 'S' });
      const patched = await context.as(owner).patch(`/widget/sites/${other.id}`).send({ allowedDomain: longest }).expect(200);
      expect(patched.body.allowedDomain).toBe(longest);
      expect((await context.as(owner).get(`/widget/sites/${other.id}`).expect(200)).body.allowedDomain).toBe(longest);
    });

    it('refuses a host one character longer (254) with a 400', async () => {
      const response = await context
        .as(owner)
        .post('/widget/sites')
        .send({ name: 'S', allowedDomain: `*.a${longestHost}:65535` })
        .expect(400);
      expect(response.body.details).toEqual([{ field: 'allowedDomain', message: expect.stringContaining('1–253') }]);
    });

    it('explains what is wrong with an allowedDomain', async () => {
      const response = await context.as(owner).post('/widget/sites').send({ name: 'S', allowedDomain: 'a.*.com' }).expect(400);
      expect(response.body.details).toEqual([{ field: 'allowedDomain', message: expect.stringContaining('*.') }]);
    });

    it('lists the allowed values of the enums in the message', async () => {
      const response = await context.as(owner).post('/widget/sites').send({ name: 'S', widgetAvatar: 'x' }).expect(400);
      expect(response.body.message).toContain('default, female, male, robot');
    });

    it('applies the same rules to PATCH and changes nothing when refused', async () => {
      const site = await createSite(owner, { name: 'Stable' });
      const refused = [
        { name: '' },
        { name: null },
        { widgetPosition: 'middle' },
        { widgetLabel: '' },
        { widgetAskName: 'no' },
        { allowedDomain: 'not a domain' },
        { siteKey: 'ws_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' },
        { agentId: 2_147_483_647 },
        { unknown: 1 },
      ];
      for (const body of refused) await context.as(owner).patch(`/widget/sites/${site.id}`).send(body).expect(400);
      expect((await context.as(owner).get(`/widget/sites/${site.id}`).expect(200)).body).toEqual(site);
    });

    it.each(['abc', '-1', '1.5', '0', '99999999999999999999', '2147483648'])('answers 404 for the id %s', async (id) => {
      const response = await context.as(owner).get(`/widget/sites/${id}`).expect(404);
      expect(response.body).toEqual({ statusCode: 404, error: 'Not Found', message: expect.stringContaining('not found') });
      await context.as(owner).patch(`/widget/sites/${id}`).send({ name: 'x' }).expect(404);
      await context.as(owner).delete(`/widget/sites/${id}`).expect(404);
      await context.as(owner).post(`/widget/sites/${id}/rotate-key`).expect(404);
    });

    it('refuses a non-JSON body (415) and malformed JSON (400)', async () => {
      await context.as(owner).post('/widget/sites').set('Content-Type', 'text/plain').send('name=x').expect(415);
      const response = await context.as(owner).post('/widget/sites').set('Content-Type', 'application/json').send('{"name":').expect(400);
      expect(response.body).toEqual({ statusCode: 400, error: 'Bad Request', message: expect.any(String) });
    });
  });

  describe('read, update, delete, rotate', () => {
    it('lists by id ascending with keys and snippets', async () => {
      const account = await context.createAccount();
      const ids = [(await createSite(account)).id, (await createSite(account)).id, (await createSite(account)).id];
      const listed = (await context.as(account).get('/widget/sites').expect(200)).body;
      expect(listed.map((site: { id: number }) => site.id)).toEqual(ids);
      for (const site of listed) {
        expect(site.siteKey).toMatch(SITE_KEY);
        expect(site.embedSnippet).toContain(`data-site-key="${site.siteKey}"`);
      }
    });

    it('lists nothing for a new account', async () => {
      const account = await context.createAccount();
      expect((await context.as(account).get('/widget/sites').expect(200)).body).toEqual([]);
    });

    it('changes only the given fields', async () => {
      const site = await createSite(owner, { name: 'Before', widgetGreeting: 'kept' });
      const response = await context.as(owner).patch(`/widget/sites/${site.id}`).send({ name: 'After', widgetMode: 'chat' }).expect(200);
      expect(response.body).toEqual({ ...site, name: 'After', widgetMode: 'chat', updatedAt: expect.stringMatching(TIMESTAMP) });
      expect(Date.parse(response.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(site.updatedAt));
    });

    it('trims the greeting: one of spaces only is none, and 500 characters fit between spaces', async () => {
      const blank = await createSite(owner, { name: 'Blank', widgetGreeting: ' \t\n ' });
      expect(blank.widgetGreeting).toBe('');
      const padded = await createSite(owner, { name: 'Padded', widgetGreeting: `  ${'é'.repeat(500)}  ` });
      expect(padded.widgetGreeting).toBe('é'.repeat(500));
      const patched = (await context.as(owner).patch(`/widget/sites/${padded.id}`).send({ widgetGreeting: '   ' }).expect(200)).body;
      expect(patched.widgetGreeting).toBe('');
    });

    it('accepts an empty PATCH and changes nothing', async () => {
      const site = await createSite(owner);
      expect((await context.as(owner).patch(`/widget/sites/${site.id}`).send({}).expect(200)).body).toEqual(site);
    });

    it('sets, changes and clears the agent', async () => {
      const [first, second] = [await createAgent(owner, 'First'), await createAgent(owner, 'Second')];
      const site = await createSite(owner, { name: 'Agent switch', agentId: first.id });
      expect((await context.as(owner).patch(`/widget/sites/${site.id}`).send({ agentId: second.id }).expect(200)).body.agentId).toBe(
        second.id,
      );
      expect((await context.as(owner).patch(`/widget/sites/${site.id}`).send({ agentId: null }).expect(200)).body.agentId).toBeNull();
    });

    it('normalises allowedDomain on PATCH too, and "" allows any site again', async () => {
      const site = await createSite(owner);
      const patched = await context
        .as(owner)
        .patch(`/widget/sites/${site.id}`)
        .send({ allowedDomain: 'HTTPS://Shop.Example.com:8443/x' })
        .expect(200);
      expect(patched.body.allowedDomain).toBe('shop.example.com:8443');
      const cleared = await context.as(owner).patch(`/widget/sites/${site.id}`).send({ allowedDomain: '' }).expect(200);
      expect(cleared.body.allowedDomain).toBe('');
    });

    it('deletes with 204 and an empty body', async () => {
      const site = await createSite(owner);
      const response = await context.as(owner).delete(`/widget/sites/${site.id}`).expect(204);
      expect(response.text).toBe('');
      await context.as(owner).get(`/widget/sites/${site.id}`).expect(404);
      await context.as(owner).delete(`/widget/sites/${site.id}`).expect(404);
    });

    it('rotates the key: a new key and snippet, everything else kept', async () => {
      const site = await createSite(owner, { name: 'Rotating', widgetLabel: 'Call us' });
      const response = await context.as(owner).post(`/widget/sites/${site.id}/rotate-key`).expect(200);
      expect(response.body.siteKey).toMatch(SITE_KEY);
      expect(response.body.siteKey).not.toBe(site.siteKey);
      expect(response.body).toEqual({
        ...site,
        siteKey: response.body.siteKey,
        embedSnippet: site.embedSnippet.replace(site.siteKey, response.body.siteKey),
        updatedAt: expect.stringMatching(TIMESTAMP),
      });
      expect((await context.as(owner).get(`/widget/sites/${site.id}`).expect(200)).body.siteKey).toBe(response.body.siteKey);
    });
  });

  describe('agents', () => {
    it('leaves the sites of a deleted agent with agentId null', async () => {
      const agent = await createAgent(owner, 'Leaving');
      const sites = [await createSite(owner, { name: 'A', agentId: agent.id }), await createSite(owner, { name: 'B', agentId: agent.id })];
      await context.as(owner).delete(`/agents/${agent.id}`).expect(204);
      for (const site of sites) {
        const read = (await context.as(owner).get(`/widget/sites/${site.id}`).expect(200)).body;
        expect(read).toEqual({ ...site, agentId: null });
      }
    });

    it('refuses a deleted agent with a 400 on agentId', async () => {
      const agent = await createAgent(owner, 'Gone');
      await context.as(owner).delete(`/agents/${agent.id}`).expect(204);
      const response = await context.as(owner).post('/widget/sites').send({ name: 'S', agentId: agent.id }).expect(400);
      expect(response.body.details).toEqual([{ field: 'agentId', message: `agentId ${agent.id} is not an agent of this account` }]);
    });

    it('turns an agent deleted between the check and the write into a 400, not a 500', async () => {
      const agent = await createAgent(owner, 'Racing');
      const dataSource = context.app.get(DataSource);
      const service = context.app.get(WidgetSitesService);
      const agents = context.app.get(AgentsService);
      const getReferenced = agents.getReferenced.bind(agents);
      const spy = jest.spyOn(agents, 'getReferenced').mockImplementationOnce(async (accountId, id) => {
        const found = await getReferenced(accountId, id); // the real check passes, then another request deletes the agent
        await dataSource.query('DELETE FROM agents WHERE id = $1', [id]);
        return found;
      });
      try {
        await expect(
          service.create(owner.id, Object.assign(new CreateWidgetSiteDto(), { name: 'Race', agentId: agent.id })),
        ).rejects.toMatchObject({
          details: [{ field: 'agentId', message: `agentId ${agent.id} is not an agent of this account` }],
        });
      } finally {
        spy.mockRestore();
      }
    });
  });

  describe('isolation between accounts', () => {
    it('another account can neither list, read, change, rotate nor delete a site', async () => {
      const site = await createSite(owner, { name: 'Private' });
      const listed = (await context.as(other).get('/widget/sites').expect(200)).body;
      expect(listed.map((s: { id: number }) => s.id)).not.toContain(site.id);
      const notFound = { statusCode: 404, error: 'Not Found', message: `Widget site ${site.id} not found` };
      expect((await context.as(other).get(`/widget/sites/${site.id}`).expect(404)).body).toEqual(notFound);
      expect((await context.as(other).patch(`/widget/sites/${site.id}`).send({ name: 'Stolen' }).expect(404)).body).toEqual(notFound);
      expect((await context.as(other).post(`/widget/sites/${site.id}/rotate-key`).expect(404)).body).toEqual(notFound);
      expect((await context.as(other).delete(`/widget/sites/${site.id}`).expect(404)).body).toEqual(notFound);
      expect((await context.as(owner).get(`/widget/sites/${site.id}`).expect(200)).body).toEqual(site);
    });

    it("another account cannot point its site at this account's agent (400), on create or PATCH", async () => {
      const agent = await createAgent(owner, "Owner's agent");
      const message = `agentId ${agent.id} is not an agent of this account`;
      const created = await context.as(other).post('/widget/sites').send({ name: 'Sneaky', agentId: agent.id }).expect(400);
      expect(created.body.details).toEqual([{ field: 'agentId', message }]);
      const own = await createSite(other, { name: 'Own' });
      const patched = await context.as(other).patch(`/widget/sites/${own.id}`).send({ agentId: agent.id }).expect(400);
      expect(patched.body.details).toEqual([{ field: 'agentId', message }]);
      expect((await context.as(other).get(`/widget/sites/${own.id}`).expect(200)).body.agentId).toBeNull();
    });

    it("patching another account's site with its own agent is still a 404", async () => {
      const agent = await createAgent(owner);
      const site = await createSite(owner, { name: 'Mine' });
      await context.as(other).patch(`/widget/sites/${site.id}`).send({ agentId: agent.id }).expect(404);
      expect((await context.as(owner).get(`/widget/sites/${site.id}`).expect(200)).body.agentId).toBeNull();
    });

    it('requires an API key on every management route', async () => {
      await context.http.get('/widget/sites').expect(401);
      await context.http.post('/widget/sites').send({ name: 'x' }).expect(401);
    });
  });
});

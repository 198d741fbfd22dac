import { DataSource } from 'typeorm';
import { accountFingerprint, createTestContext, TestAccount, TestContext } from './helpers';
import { FORM_BODY_ROUTES, registeredRoutes } from './routes';

/**
 * The names every JavaScript object inherits (`constructor`, `toString`, `__proto__`, …) and `prototype`. Nest's
 * ValidationPipe deletes `__proto__`, `prototype` and `constructor` from a body before it validates it, and
 * class-transformer skips any field whose name the new object already has as a function, so class-validator's
 * check of unknown fields never saw them: such a field was dropped with a 201 where any other unknown one is a 400.
 */
const INHERITED_NAMES = [...Object.getOwnPropertyNames(Object.prototype), 'prototype'];

describe('body fields named like the members of Object.prototype', () => {
  let context: TestContext;
  let account: TestAccount;
  const ids: Record<string, string> = {};
  let token = '';

  beforeAll(async () => {
    context = await createTestContext({ widgetRateLimit: 10_000 });
    account = await context.createAccount();
    const agent = (await context.as(account).post('/agents').send({ name: 'Target' }).expect(201)).body;
    const kb = (await context.as(account).post('/knowledge-bases').send({ name: 'KB' }).expect(201)).body;
    const source = (await context.as(account).post(`/knowledge-bases/${kb.id}/sources`).send({ content: 'Open nine to six.' }).expect(201))
      .body;
    const site = (await context.as(account).post('/widget/sites').send({ name: 'Site', agentId: agent.id }).expect(201)).body;
    const conversation = (await context.as(account).post(`/agents/${agent.id}/conversations`).send({}).expect(201)).body;
    // Last, so that no event of the account is delivered to it.
    const webhook = (
      await context
        .as(account)
        .post('/webhooks')
        .send({ url: 'https://hooks.invalid/hook', events: ['call.deleted'] })
        .expect(201)
    ).body;
    Object.assign(ids, {
      agentId: agent.id,
      kbId: kb.id,
      sourceId: source.id,
      siteId: site.id,
      webhookId: webhook.id,
      deliveryId: '1',
      conversationId: conversation.conversationId,
    });
    token = conversation.token;
  });
  afterAll(() => context.close());

  /**
   * Every route that takes a JSON body: each POST, PUT and PATCH but the recording upload (raw audio) and the
   * carrier's form-encoded webhooks (their parser keeps every name in an object without a prototype: see
   * telephony-carrier.spec.ts).
   */
  const jsonRoutes = () =>
    registeredRoutes(context)
      .filter((route) => /^(POST|PUT|PATCH) /.test(route) && route !== 'PUT /calls/:callId/recording' && !FORM_BODY_ROUTES.includes(route))
      .map((route) => route.split(' ') as [string, string]);

  it('are a 400 naming the field, like any unknown field, on every route that takes a JSON body, and nothing is stored', async () => {
    const routes = jsonRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(19);
    expect(INHERITED_NAMES).toEqual(
      expect.arrayContaining(['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty', 'prototype']),
    );
    const before = await accountFingerprint(context.app.get(DataSource), account.id);
    const wrong: string[] = [];
    for (const [method, path] of routes) {
      const url = path.replace(/:(\w+)/g, (_, name: string) => String(ids[name]));
      for (const name of INHERITED_NAMES) {
        const response = await context.http[method.toLowerCase() as 'post' | 'put' | 'patch'](url)
          .set('X-Api-Key', account.apiKey)
          .set('Authorization', `Bearer ${token}`)
          .set('Content-Type', 'application/json')
          .send(`{"${name}": {"nested": 1}}`); // as text: JSON.stringify would drop __proto__
        const named = response.body.details?.some((detail: { field: string }) => detail.field === name);
        if (response.status !== 400 || !named)
          wrong.push(`${method} ${path} ${name}: ${response.status} ${JSON.stringify(response.body.details ?? response.body)}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(await accountFingerprint(context.app.get(DataSource), account.id)).toBe(before);
  });

  it('are refused inside a nested object and a free-form JSON field too, where they would otherwise be lost', async () => {
    for (const name of INHERITED_NAMES) {
      const transcript = await context
        .as(account)
        .post('/calls')
        .set('Content-Type', 'application/json')
        .send(`{"transcript": [{"speaker": "agent", "text": "Hi", "${name}": 1}]}`);
      expect([name, transcript.status, transcript.body.details]).toEqual([
        name,
        400,
        [{ field: `transcript.0.${name}`, message: `property ${name} should not exist (a name of Object.prototype)` }],
      ]);
      const extracted = await context
        .as(account)
        .post('/calls')
        .set('Content-Type', 'application/json')
        .send(`{"extractedData": {"${name}": "kept?"}}`);
      expect([name, extracted.status, extracted.body.details]).toEqual([
        name,
        400,
        [{ field: `extractedData.${name}`, message: `property ${name} should not exist (a name of Object.prototype)` }],
      ]);
    }
    expect((await context.as(account).get('/calls').expect(200)).body).toEqual([]);
  });

  it('leaves other unknown fields to the DTO check, which names them all', async () => {
    const response = await context.as(account).post('/agents').send({ colour: 'blue', size: 2 }).expect(400);
    expect(response.body.details).toEqual([
      { field: 'colour', message: 'property colour should not exist' },
      { field: 'size', message: 'property size should not exist' },
    ]);
  });
});

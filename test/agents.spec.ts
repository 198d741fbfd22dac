import { createTestContext, TestAccount, TestContext } from './helpers';

describe('agents', () => {
  let context: TestContext;
  let owner: TestAccount;
  let other: TestAccount;
  let platform: TestAccount;

  beforeAll(async () => {
    context = await createTestContext();
    owner = await context.createAccount();
    other = await context.createAccount();
    platform = await context.createAccount({ platform: true });
  });
  afterAll(() => context.close());

  const createAgent = async (account: TestAccount, body: object = {}) => {
    const response = await context.as(account).post('/agents').send(body).expect(201);
    return response.body;
  };

  describe('create', () => {
    it('applies every default to an empty object', async () => {
      const agent = await createAgent(owner, {});
      expect(agent).toEqual({
        id: expect.any(Number),
        name: 'Unnamed agent',
        description: '',
        model: 'gpt-4.1',
        voice: 'shubh',
        language: 'hi-IN',
        systemPrompt: '',
        knowledgeBaseIds: [],
        toolIds: [],
        publishedVersion: null,
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      });
    });

    it('works with no body at all', async () => {
      const response = await context.as(owner).post('/agents').expect(201);
      expect(response.body.name).toBe('Unnamed agent');
    });

    it('stores the given fields, trimming the name', async () => {
      const agent = await createAgent(owner, {
        name: '  Reception  ',
        description: 'Front desk',
        model: 'gpt-4.1-mini',
        voice: 'anushka',
        language: 'ta-IN',
        systemPrompt: 'नमस्ते, आप कैसे हैं?',
      });
      expect(agent).toMatchObject({ name: 'Reception', voice: 'anushka', language: 'ta-IN', systemPrompt: 'नमस्ते, आप कैसे हैं?' });
      const read = await context.as(owner).get(`/agents/${agent.id}`).expect(200);
      expect(read.body).toEqual(agent);
    });
  });

  describe('validation', () => {
    const invalid: [string, object, string][] = [
      ['blank name', { name: '   ' }, 'name'],
      ['name over 200', { name: 'x'.repeat(201) }, 'name'],
      ['null name', { name: null }, 'name'],
      ['numeric name', { name: 5 }, 'name'],
      ['description over 2000', { description: 'x'.repeat(2001) }, 'description'],
      ['empty model', { model: '' }, 'model'],
      ['model over 100', { model: 'm'.repeat(101) }, 'model'],
      ['unknown voice', { voice: 'nobody' }, 'voice'],
      ['unknown language', { language: 'fr-FR' }, 'language'],
      ['systemPrompt over 50000', { systemPrompt: 'x'.repeat(50_001) }, 'systemPrompt'],
      ['unknown field', { colour: 'blue' }, 'colour'],
    ];
    it.each(invalid)('refuses %s with a 400 naming the field', async (_, body, field) => {
      const response = await context.as(owner).post('/agents').send(body).expect(400);
      expect(response.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: expect.any(String),
        details: expect.arrayContaining([expect.objectContaining({ field })]),
      });
    });

    it('lists the supported languages in the message', async () => {
      const response = await context.as(owner).post('/agents').send({ language: 'xx' }).expect(400);
      expect(response.body.message).toContain('hi-IN, en-IN, bn-IN');
    });

    it('applies the same rules to PATCH and changes nothing when refused', async () => {
      const agent = await createAgent(owner, { name: 'Stable' });
      for (const body of [{ name: '' }, { voice: 'nobody' }, { language: 'de-DE' }, { unknown: 1 }, { name: null }]) {
        await context.as(owner).patch(`/agents/${agent.id}`).send(body).expect(400);
      }
      const read = await context.as(owner).get(`/agents/${agent.id}`).expect(200);
      expect(read.body).toEqual(agent);
    });

    it.each(['abc', '-1', '1.5', '0', '99999999999999999999', '2147483648'])('answers 404 for the id %s', async (id) => {
      const response = await context.as(owner).get(`/agents/${id}`).expect(404);
      expect(response.body).toEqual({ statusCode: 404, error: 'Not Found', message: `Agent ${id} not found` });
      await context.as(owner).patch(`/agents/${id}`).send({ name: 'x' }).expect(404);
      await context.as(owner).delete(`/agents/${id}`).expect(404);
    });
  });

  describe('voices', () => {
    it.each(['ritu-preview', 'aditya-preview', 'shubh-ng', 'anushka-ng'])(
      'refuses %s to a normal account (403) on create and PATCH',
      async (voice) => {
        const response = await context.as(owner).post('/agents').send({ voice }).expect(403);
        expect(response.body).toEqual({ statusCode: 403, error: 'Forbidden', message: expect.stringContaining(voice) });
        const agent = await createAgent(owner);
        await context.as(owner).patch(`/agents/${agent.id}`).send({ voice }).expect(403);
        expect((await context.as(owner).get(`/agents/${agent.id}`)).body.voice).toBe('shubh');
      },
    );

    it('lets the platform account use every voice', async () => {
      const agent = await createAgent(platform, { voice: 'shubh-ng' });
      expect(agent.voice).toBe('shubh-ng');
      const patched = await context.as(platform).patch(`/agents/${agent.id}`).send({ voice: 'ritu-preview' }).expect(200);
      expect(patched.body.voice).toBe('ritu-preview');
    });

    it('lists the catalog with availability per account', async () => {
      const normal = (await context.as(owner).get('/voices').expect(200)).body;
      expect(normal).toHaveLength(12);
      expect(normal).toContainEqual({ id: 'shubh', name: 'Shubh', tier: 'stable', available: true });
      expect(normal).toContainEqual(expect.objectContaining({ id: 'shubh-ng', tier: 'next-generation', available: false }));
      const forPlatform = (await context.as(platform).get('/voices').expect(200)).body;
      expect(forPlatform.every((voice: { available: boolean }) => voice.available)).toBe(true);
    });
  });

  describe('update and delete', () => {
    it('changes only the given fields', async () => {
      const agent = await createAgent(owner, { name: 'Before', description: 'kept' });
      const response = await context.as(owner).patch(`/agents/${agent.id}`).send({ name: 'After' }).expect(200);
      expect(response.body).toMatchObject({ id: agent.id, name: 'After', description: 'kept' });
      expect(Date.parse(response.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(agent.updatedAt));
      // The answer (from the UPDATE itself) is the stored agent, field for field, as a GET gives it.
      expect(response.body).toEqual((await context.as(owner).get(`/agents/${agent.id}`).expect(200)).body);
      const unchanged = await context.as(owner).patch(`/agents/${agent.id}`).send({}).expect(200);
      expect(unchanged.body).toEqual(response.body);
    });

    it('deletes with 204 and an empty body', async () => {
      const agent = await createAgent(owner);
      const response = await context.as(owner).delete(`/agents/${agent.id}`).expect(204);
      expect(response.text).toBe('');
      await context.as(owner).get(`/agents/${agent.id}`).expect(404);
    });

    it('lists by id ascending', async () => {
      const account = await context.createAccount();
      const ids = [(await createAgent(account)).id, (await createAgent(account)).id, (await createAgent(account)).id];
      const listed = (await context.as(account).get('/agents').expect(200)).body;
      expect(listed.map((agent: { id: number }) => agent.id)).toEqual(ids);
    });
  });

  describe('isolation between accounts', () => {
    it('another account can neither list, read, change nor delete an agent', async () => {
      const agent = await createAgent(owner, { name: 'Private' });
      const listed = (await context.as(other).get('/agents').expect(200)).body;
      expect(listed.map((a: { id: number }) => a.id)).not.toContain(agent.id);
      const notFound = { statusCode: 404, error: 'Not Found', message: `Agent ${agent.id} not found` };
      expect((await context.as(other).get(`/agents/${agent.id}`).expect(404)).body).toEqual(notFound);
      expect((await context.as(other).patch(`/agents/${agent.id}`).send({ name: 'Stolen' }).expect(404)).body).toEqual(notFound);
      expect((await context.as(other).delete(`/agents/${agent.id}`).expect(404)).body).toEqual(notFound);
      expect((await context.as(owner).get(`/agents/${agent.id}`).expect(200)).body).toEqual(agent);
    });
  });
});

import { DataSource } from 'typeorm';
import { bearer, startConversation, Started } from './conversation-helpers';
import { FakeLlm, startFakeLlm } from './fake-llm';
import { createTestContext, TestAccount, TestContext } from './helpers';

/** Agent versions (contract section 19): publish, list, read, restore, and which settings each conversation runs. */
describe('agent versions', () => {
  let context: TestContext;
  let llm: FakeLlm;
  let owner: TestAccount;
  let dataSource: DataSource;

  beforeAll(async () => {
    llm = await startFakeLlm();
    context = await createTestContext({
      llm: { baseUrl: llm.url, apiKey: 'sk-test', timeoutMs: 10_000, maxTokens: 100 },
      widgetRateLimit: 10_000,
    });
    owner = await context.createAccount();
    dataSource = context.app.get(DataSource);
  });
  afterAll(async () => {
    await context.close();
    await llm.close();
  });
  beforeEach(() => {
    llm.behave({ kind: 'stream', pieces: ['Namaste.'] });
  });

  const createAgent = async (body: object = {}) =>
    (
      await context
        .as(owner)
        .post('/agents')
        .send({ name: 'Reception', systemPrompt: 'PROMPT-ONE', ...body })
        .expect(201)
    ).body;
  const publish = (agentId: number, body: object = {}) => context.as(owner).post(`/agents/${agentId}/versions`).send(body);
  /** Sends a message and returns the system message the model received for it. */
  const promptFor = async (started: Pick<Started, 'conversationId' | 'token'>) => {
    const before = llm.requests.length;
    await context.http
      .post(`/conversations/${started.conversationId}/messages`)
      .set(bearer(started.token))
      .send({ text: 'Hello?' })
      .expect(200);
    expect(llm.requests).toHaveLength(before + 1);
    return llm.requests.at(-1)!.body;
  };
  const widgetConversation = async (agentId: number): Promise<Started> => {
    const site = (await context.as(owner).post('/widget/sites').send({ name: 'Shop', agentId }).expect(201)).body;
    return (
      await context.http.post('/widget/sessions').set('Origin', 'https://shop.example.com').send({ siteKey: site.siteKey }).expect(201)
    ).body;
  };
  const endAndReadCall = async (started: Started) => {
    await context.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);
    return (await context.as(owner).get(`/calls/${started.conversationId}`).expect(200)).body;
  };

  it('publishes the current settings as version 1, 2…; the agent says which is published; list newest first, paged, and read one', async () => {
    const kb = (await context.as(owner).post('/knowledge-bases').send({ name: 'FAQ' }).expect(201)).body;
    const agent = await createAgent({ description: 'Front desk', model: 'gpt-4.1-mini', knowledgeBaseIds: [kb.id] });
    expect(agent.publishedVersion).toBeNull();
    const first = (await publish(agent.id, { description: 'First cut' }).expect(201)).body;
    expect(first).toEqual({
      version: 1,
      description: 'First cut',
      createdAt: expect.any(String),
      settings: {
        name: 'Reception',
        description: 'Front desk',
        model: 'gpt-4.1-mini',
        voice: 'shubh',
        language: 'hi-IN',
        systemPrompt: 'PROMPT-ONE',
        knowledgeBaseIds: [kb.id],
        toolIds: [],
      },
    });
    await context.as(owner).patch(`/agents/${agent.id}`).send({ systemPrompt: 'PROMPT-TWO' }).expect(200);
    const second = (await publish(agent.id).expect(201)).body;
    expect(second).toMatchObject({ version: 2, description: '', settings: { systemPrompt: 'PROMPT-TWO' } });
    expect((await context.as(owner).get(`/agents/${agent.id}`).expect(200)).body.publishedVersion).toBe(2);
    await publish(agent.id).expect(201);

    const all = (await context.as(owner).get(`/agents/${agent.id}/versions`).expect(200)).body;
    expect(all.map((version: { version: number }) => version.version)).toEqual([3, 2, 1]);
    const page = (await context.as(owner).get(`/agents/${agent.id}/versions?limit=1&before=3`).expect(200)).body;
    expect(page).toEqual([second]);
    expect((await context.as(owner).get(`/agents/${agent.id}/versions/1`).expect(200)).body).toEqual(first);
    // An agent without versions lists none.
    const fresh = await createAgent();
    expect((await context.as(owner).get(`/agents/${fresh.id}/versions`).expect(200)).body).toEqual([]);
  });

  it('numbers concurrent publishes apart: two at once get 1 and 2', async () => {
    const agent = await createAgent();
    const [a, b] = await Promise.all([publish(agent.id), publish(agent.id)]);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect([a.body.version, b.body.version].sort()).toEqual([1, 2]);
    expect((await context.as(owner).get(`/agents/${agent.id}`).expect(200)).body.publishedVersion).toBe(2);
  });

  it('runs the published version in widget and non-test API conversations, the current settings in test ones; a running one keeps its version', async () => {
    const agent = await createAgent();
    // Before any publish, everything runs the current settings.
    const unpublished = await startConversation(context, owner, agent.id, { test: false });
    expect((await promptFor(unpublished)).messages[0].content).toContain('PROMPT-ONE');
    expect((await endAndReadCall(unpublished)).agentVersion).toBeNull();

    await publish(agent.id).expect(201);
    await context.as(owner).patch(`/agents/${agent.id}`).send({ systemPrompt: 'PROMPT-TWO', model: 'gpt-4.1-nano' }).expect(200);

    const test = await startConversation(context, owner, agent.id, { test: true });
    const widget = await widgetConversation(agent.id);
    const live = await startConversation(context, owner, agent.id, { test: false });
    const testRequest = await promptFor(test);
    expect(testRequest.messages[0].content).toContain('PROMPT-TWO');
    expect(testRequest.model).toBe('gpt-4.1-nano');
    for (const started of [widget, live]) {
      const request = await promptFor(started);
      expect(request.messages[0].content).toContain('PROMPT-ONE');
      expect(request.messages[0].content).not.toContain('PROMPT-TWO');
      expect(request.model).toBe('gpt-4.1');
    }

    // Publishing while the widget conversation runs changes nothing for it; a new one gets version 2.
    await publish(agent.id).expect(201);
    expect((await promptFor(widget)).messages[0].content).toContain('PROMPT-ONE');
    const later = await widgetConversation(agent.id);
    expect((await promptFor(later)).messages[0].content).toContain('PROMPT-TWO');

    expect((await endAndReadCall(widget)).agentVersion).toBe(1);
    expect((await endAndReadCall(later)).agentVersion).toBe(2);
    expect((await endAndReadCall(test)).agentVersion).toBeNull();

    // Deleting the agent keeps the calls' version numbers.
    await context.as(owner).delete(`/agents/${agent.id}`).expect(204);
    expect((await context.as(owner).get(`/calls/${widget.conversationId}`).expect(200)).body).toMatchObject({
      agentId: agent.id,
      agentVersion: 1,
    });
  });

  it("restores a version's settings onto the agent, leaving out a knowledge base deleted since; publishedVersion unchanged", async () => {
    const kept = (await context.as(owner).post('/knowledge-bases').send({ name: 'Kept' }).expect(201)).body;
    const gone = (await context.as(owner).post('/knowledge-bases').send({ name: 'Gone' }).expect(201)).body;
    const agent = await createAgent({ knowledgeBaseIds: [kept.id, gone.id], language: 'en-IN' });
    await publish(agent.id).expect(201);
    await context
      .as(owner)
      .patch(`/agents/${agent.id}`)
      .send({ systemPrompt: 'PROMPT-TWO', knowledgeBaseIds: [], language: 'ta-IN' })
      .expect(200);
    await context.as(owner).delete(`/knowledge-bases/${gone.id}`).expect(204);

    const restored = (await context.as(owner).post(`/agents/${agent.id}/versions/1/restore`).expect(200)).body;
    expect(restored).toMatchObject({
      id: agent.id,
      systemPrompt: 'PROMPT-ONE',
      language: 'en-IN',
      knowledgeBaseIds: [kept.id],
      publishedVersion: 1,
    });
    expect((await context.as(owner).get(`/agents/${agent.id}`).expect(200)).body).toEqual(restored);
    // The version itself still says what was published.
    expect((await context.as(owner).get(`/agents/${agent.id}/versions/1`).expect(200)).body.settings.knowledgeBaseIds).toEqual([
      kept.id,
      gone.id,
    ]);
    await context.as(owner).post(`/agents/${agent.id}/versions/1/restore`).send({ bogus: 1 }).expect(400);
  });

  it('refuses to change a version even through SQL (a trigger), and leaves it as it was', async () => {
    const agent = await createAgent();
    const published = (await publish(agent.id).expect(201)).body;
    await expect(
      dataSource.query(`UPDATE agent_versions SET system_prompt = 'tampered' WHERE account_id = $1 AND agent_id = $2`, [
        owner.id,
        agent.id,
      ]),
    ).rejects.toThrow(/agent versions are immutable/);
    await expect(
      dataSource.query(`UPDATE agent_versions SET version = 9 WHERE account_id = $1 AND agent_id = $2`, [owner.id, agent.id]),
    ).rejects.toThrow(/agent versions are immutable/);
    expect((await context.as(owner).get(`/agents/${agent.id}/versions/1`).expect(200)).body).toEqual(published);
  });

  it('checks its bounds: description 500 characters, versions that cannot be one, limit and before', async () => {
    const agent = await createAgent();
    await publish(agent.id, { description: '😀'.repeat(500) }).expect(201);
    const refused = await publish(agent.id, { description: '😀'.repeat(501) }).expect(400);
    expect(refused.body.details).toEqual([expect.objectContaining({ field: 'description' })]);
    await publish(agent.id, { description: 5 }).expect(400);
    await publish(agent.id, { version: 3 }).expect(400);
    expect((await context.as(owner).get(`/agents/${agent.id}`).expect(200)).body.publishedVersion).toBe(1);
    for (const version of ['0', '-1', '2', '2147483647', '2147483648', '99999999999', '1.5', 'abc', '1e0']) {
      await context.as(owner).get(`/agents/${agent.id}/versions/${version}`).expect(404);
      await context.as(owner).post(`/agents/${agent.id}/versions/${version}/restore`).expect(404);
    }
    await context.as(owner).get('/agents/2147483647/versions').expect(404);
    await context.as(owner).post('/agents/2147483647/versions').send({}).expect(404);
    for (const query of ['limit=200', 'limit=1', 'before=1', 'before=2147483647'])
      await context.as(owner).get(`/agents/${agent.id}/versions?${query}`).expect(200);
    for (const query of ['limit=0', 'limit=201', 'limit=1.5', 'before=0', 'before=-1', 'before=2147483648', 'before=x'])
      await context.as(owner).get(`/agents/${agent.id}/versions?${query}`).expect(400);
  });

  it("lets another account neither see, publish nor restore an agent's versions", async () => {
    const agent = await createAgent();
    await publish(agent.id).expect(201);
    const intruder = await context.createAccount();
    await context.as(intruder).get(`/agents/${agent.id}/versions`).expect(404);
    await context.as(intruder).get(`/agents/${agent.id}/versions/1`).expect(404);
    await context.as(intruder).post(`/agents/${agent.id}/versions`).send({}).expect(404);
    await context.as(intruder).post(`/agents/${agent.id}/versions/1/restore`).expect(404);
    expect((await context.as(owner).get(`/agents/${agent.id}`).expect(200)).body.publishedVersion).toBe(1);
    expect((await context.as(owner).get(`/agents/${agent.id}/versions`).expect(200)).body).toHaveLength(1);
  });
});

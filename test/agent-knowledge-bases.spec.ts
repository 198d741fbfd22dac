import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { createTestContext, TestAccount, TestContext } from './helpers';

/** Agents' `knowledgeBaseIds` (contract section 10): same-account knowledge bases only, and never a dangling id. */
describe("agents' knowledge bases", () => {
  let context: TestContext;
  let owner: TestAccount;
  let other: TestAccount;

  beforeAll(async () => {
    context = await createTestContext();
    owner = await context.createAccount();
    other = await context.createAccount();
  });
  afterAll(() => context.close());

  const knowledgeBase = async (account: TestAccount = owner) =>
    (await context.as(account).post('/knowledge-bases').send({}).expect(201)).body.id as number;
  const createAgent = async (body: object, account: TestAccount = owner) =>
    (await context.as(account).post('/agents').send(body).expect(201)).body;
  const getAgent = async (id: number) => (await context.as(owner).get(`/agents/${id}`).expect(200)).body;

  it('defaults to [] and is returned by every route', async () => {
    const agent = await createAgent({});
    expect(agent.knowledgeBaseIds).toEqual([]);
    expect((await getAgent(agent.id)).knowledgeBaseIds).toEqual([]);
    const listed = (await context.as(owner).get('/agents').expect(200)).body.find((a: { id: number }) => a.id === agent.id);
    expect(listed.knowledgeBaseIds).toEqual([]);
  });

  it('is accepted on create, duplicates counted once, and returned by id ascending', async () => {
    const [first, second] = [await knowledgeBase(), await knowledgeBase()];
    const agent = await createAgent({ name: 'With knowledge', knowledgeBaseIds: [second, first, second] });
    expect(agent.knowledgeBaseIds).toEqual([first, second]);
    expect(await getAgent(agent.id)).toEqual(agent);
    const listed = (await context.as(owner).get('/agents').expect(200)).body.find((a: { id: number }) => a.id === agent.id);
    expect(listed).toEqual(agent);
  });

  it('PATCH replaces the list, [] clears it, and other changes keep it', async () => {
    const [first, second, third] = [await knowledgeBase(), await knowledgeBase(), await knowledgeBase()];
    const agent = await createAgent({ knowledgeBaseIds: [first, second] });
    const replaced = (
      await context
        .as(owner)
        .patch(`/agents/${agent.id}`)
        .send({ knowledgeBaseIds: [third, first] })
        .expect(200)
    ).body;
    expect(replaced.knowledgeBaseIds).toEqual([first, third]);
    expect(replaced.updatedAt >= agent.updatedAt).toBe(true);
    expect(await getAgent(agent.id)).toEqual(replaced);
    const renamed = (await context.as(owner).patch(`/agents/${agent.id}`).send({ name: 'Renamed' }).expect(200)).body;
    expect(renamed).toMatchObject({ name: 'Renamed', knowledgeBaseIds: [first, third] });
    const cleared = (await context.as(owner).patch(`/agents/${agent.id}`).send({ knowledgeBaseIds: [] }).expect(200)).body;
    expect(cleared.knowledgeBaseIds).toEqual([]);
    expect((await getAgent(agent.id)).knowledgeBaseIds).toEqual([]);
  });

  it("refuses another account's knowledge base, or an unknown one, with a 400 naming them, and stores nothing", async () => {
    const own = await knowledgeBase();
    const foreign = await knowledgeBase(other);
    const agent = await createAgent({ knowledgeBaseIds: [own] });
    const before = await getAgent(agent.id);
    const agentsBefore = (await context.as(owner).get('/agents').expect(200)).body.length;

    const refused = await context
      .as(owner)
      .patch(`/agents/${agent.id}`)
      .send({ name: 'Changed', knowledgeBaseIds: [own, foreign, 2_000_000_000] })
      .expect(400);
    expect(refused.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: `knowledgeBaseIds ${foreign}, 2000000000 are not knowledge bases of this account`,
      details: [{ field: 'knowledgeBaseIds', message: `knowledgeBaseIds ${foreign}, 2000000000 are not knowledge bases of this account` }],
    });
    expect(await getAgent(agent.id)).toEqual(before);

    await context
      .as(owner)
      .post('/agents')
      .send({ name: 'Never created', knowledgeBaseIds: [foreign] })
      .expect(400);
    expect((await context.as(owner).get('/agents').expect(200)).body).toHaveLength(agentsBefore);
  });

  it.each([
    ['a string', 'abc'],
    ['null', null],
    ['an object', { id: 1 }],
    ['strings', ['1']],
    ['a fraction', [1.5]],
    ['zero', [0]],
    ['a negative id', [-3]],
    ['an id beyond integer range', [2 ** 31]],
    ['null inside', [null]],
    ['more than 50 ids', Array.from({ length: 51 }, (_, index) => index + 1)],
  ])('refuses %s with a 400 on knowledgeBaseIds', async (_name, knowledgeBaseIds) => {
    const agent = await createAgent({});
    const response = await context.as(owner).patch(`/agents/${agent.id}`).send({ knowledgeBaseIds }).expect(400);
    expect(response.body.details.map((detail: { field: string }) => detail.field)).toEqual(expect.arrayContaining(['knowledgeBaseIds']));
    await context.as(owner).post('/agents').send({ knowledgeBaseIds }).expect(400);
  });

  it('deleting a knowledge base removes its id from every agent', async () => {
    const [kept, deleted] = [await knowledgeBase(), await knowledgeBase()];
    const first = await createAgent({ knowledgeBaseIds: [kept, deleted] });
    const second = await createAgent({ knowledgeBaseIds: [deleted] });
    await context.as(owner).delete(`/knowledge-bases/${deleted}`).expect(204);
    expect((await getAgent(first.id)).knowledgeBaseIds).toEqual([kept]);
    expect((await getAgent(second.id)).knowledgeBaseIds).toEqual([]);
  });

  it('PATCH on an unknown agent is a 404, with or without knowledge bases', async () => {
    const kb = await knowledgeBase();
    await context
      .as(owner)
      .patch('/agents/2000000000')
      .send({ knowledgeBaseIds: [kb] })
      .expect(404);
    const foreignAgent = await createAgent({}, other);
    await context
      .as(owner)
      .patch(`/agents/${foreignAgent.id}`)
      .send({ knowledgeBaseIds: [kb] })
      .expect(404);
    expect((await context.as(other).get(`/agents/${foreignAgent.id}`).expect(200)).body.knowledgeBaseIds).toEqual([]);
  });

  describe('a knowledge base deleted while an agent is being linked to it', () => {
    let client: Client;
    beforeEach(async () => {
      client = new Client({ connectionString: process.env.DATABASE_URL });
      await client.connect();
    });
    afterEach(() => client.end());

    /** Waits until a statement of the API is blocked on a lock held by `client`. */
    async function untilBlockedBy(pid: number): Promise<void> {
      for (;;) {
        const { rows } = await client.query(`SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, [pid]);
        if (rows.length) return;
        await sleep(10);
      }
    }

    it('is a 400 (not a 500) when the delete commits first, and leaves the agent unchanged', async () => {
      const kb = await knowledgeBase();
      const agent = await createAgent({ name: 'Racing' });
      const [{ pid }] = (await client.query('SELECT pg_backend_pid() AS pid')).rows;
      await client.query('BEGIN');
      await client.query('DELETE FROM knowledge_bases WHERE id = $1', [kb]);
      // The PATCH still sees the knowledge base (the delete is not committed), and its foreign key check waits on the row.
      const patch = context
        .as(owner)
        .patch(`/agents/${agent.id}`)
        .send({ knowledgeBaseIds: [kb] })
        .then((response) => response);
      await untilBlockedBy(pid);
      await client.query('COMMIT');
      const response = await patch;
      expect(response.status).toBe(400);
      expect(response.body.details).toEqual([
        { field: 'knowledgeBaseIds', message: 'knowledgeBaseIds names a knowledge base that was just deleted' },
      ]);
      expect(await getAgent(agent.id)).toEqual(agent);
    });

    it('takes the link with it when the link commits first (the delete waits for it)', async () => {
      const kb = await knowledgeBase();
      const agent = await createAgent({});
      // A link written and not yet committed, as the PATCH's transaction holds it.
      await client.query('BEGIN');
      await client.query('INSERT INTO agent_knowledge_bases (account_id, agent_id, knowledge_base_id) VALUES ($1, $2, $3)', [
        owner.id,
        agent.id,
        kb,
      ]);
      const [{ pid }] = (await client.query('SELECT pg_backend_pid() AS pid')).rows;
      const deletion = context
        .as(owner)
        .delete(`/knowledge-bases/${kb}`)
        .then((response) => response);
      await untilBlockedBy(pid);
      await client.query('COMMIT');
      expect((await deletion).status).toBe(204);
      expect((await getAgent(agent.id)).knowledgeBaseIds).toEqual([]);
    });
  });

  it("the database itself refuses a link to another account's knowledge base (the foreign keys include the account)", async () => {
    const agent = await createAgent({});
    const foreign = await knowledgeBase(other);
    const client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    try {
      await expect(
        client.query('INSERT INTO agent_knowledge_bases (account_id, agent_id, knowledge_base_id) VALUES ($1, $2, $3)', [
          owner.id,
          agent.id,
          foreign,
        ]),
      ).rejects.toMatchObject({ code: '23503' });
      await expect(
        client.query('INSERT INTO agent_knowledge_bases (account_id, agent_id, knowledge_base_id) VALUES ($1, $2, $3)', [
          other.id,
          agent.id,
          foreign,
        ]),
      ).rejects.toMatchObject({ code: '23503' });
    } finally {
      await client.end();
    }
  });
});

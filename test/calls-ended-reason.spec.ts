import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { CALL_LIST_ITEM_FIELDS } from '../src/calls/dto/call-response.dto';
import { bearer, startConversation } from './conversation-helpers';
import { createTestContext, TestAccount, TestContext } from './helpers';

/**
 * `endedReason` on every call's detail (contract section 17's last paragraph): set where conversations end (the
 * visitor's end, the idle end, an error), given by `POST /calls` or "" there, "" for calls made before; never in
 * the list, which keeps exactly the seed's fields.
 */
describe('how a call ended (endedReason)', () => {
  let context: TestContext;
  let owner: TestAccount;
  let agentId: number;

  beforeAll(async () => {
    context = await createTestContext();
    owner = await context.createAccount();
    agentId = (await context.as(owner).post('/agents').send({ name: 'Asha' }).expect(201)).body.id;
  });
  afterAll(() => context.close());

  const detail = async (id: string) => (await context.as(owner).get(`/calls/${id}`).expect(200)).body as Record<string, unknown>;
  /** A conversation of the API in which the visitor said something (so that it becomes a call). */
  const talkedConversation = async () => {
    const started = await startConversation(context, owner, agentId, { test: false });
    await context.http
      .post(`/conversations/${started.conversationId}/messages`)
      .set(bearer(started.token))
      .send({ text: 'Hello' })
      .expect(200);
    return started;
  };

  it('is "visitor-ended" for a conversation its visitor ended', async () => {
    const { conversationId, token } = await talkedConversation();
    await context.http.post(`/conversations/${conversationId}/end`).set(bearer(token)).expect(204);
    expect((await detail(conversationId)).endedReason).toBe('visitor-ended');
  });

  it('is "idle-timeout" for a conversation that ended because nobody spoke', async () => {
    const { conversationId, token } = await talkedConversation();
    await context.app
      .get(DataSource)
      .query(`UPDATE conversations SET last_message_at = now() - interval '1 day', replying_since = NULL WHERE id = $1`, [conversationId]);
    // Reading an idle conversation ends it (as its idle job or the sweep would).
    expect((await context.http.get(`/conversations/${conversationId}`).set(bearer(token)).expect(200)).body.status).toBe('ended');
    expect((await detail(conversationId)).endedReason).toBe('idle-timeout');
  });

  it('is "error" for a conversation that ended because its agent was deleted', async () => {
    const agent = (await context.as(owner).post('/agents').send({ name: 'Short-lived' }).expect(201)).body.id;
    const started = await startConversation(context, owner, agent, { test: false });
    await context.http
      .post(`/conversations/${started.conversationId}/messages`)
      .set(bearer(started.token))
      .send({ text: 'Hi' })
      .expect(200);
    await context.as(owner).delete(`/agents/${agent}`).expect(204);
    await context.http
      .post(`/conversations/${started.conversationId}/messages`)
      .set(bearer(started.token))
      .send({ text: 'Still there?' })
      .expect(410);
    expect((await detail(started.conversationId)).endedReason).toBe('error');
  });

  it('is what POST /calls says (one of the values, or "" by default), and a 400 naming it for anything else', async () => {
    for (const endedReason of ['caller-hung-up', 'agent-hung-up', 'transferred', 'max-duration', 'busy', '']) {
      const created = (await context.as(owner).post('/calls').send({ name: 'Posted', endedReason }).expect(201)).body;
      expect(created.endedReason).toBe(endedReason);
      expect((await detail(created.id)).endedReason).toBe(endedReason);
    }
    expect((await context.as(owner).post('/calls').send({ name: 'Posted' }).expect(201)).body.endedReason).toBe('');
    for (const endedReason of ['hung-up', 'BUSY', ' busy', null, 3]) {
      const refused = await context.as(owner).post('/calls').send({ endedReason }).expect(400);
      expect(refused.body.details.map((entry: { field: string }) => entry.field)).toEqual(['endedReason']);
    }
  });

  it('is "" for a call made before it was kept (the column default), and never in the list or the export', async () => {
    const id = randomUUID();
    await context.app
      .get(DataSource)
      .query(`INSERT INTO calls (account_id, id, name, call_date) VALUES ($1, $2, 'Before endedReason', now())`, [owner.id, id]);
    expect((await detail(id)).endedReason).toBe('');
    await context.as(owner).post('/calls').send({ name: 'Listed', endedReason: 'busy' }).expect(201);
    const list = (await context.as(owner).get('/calls').expect(200)).body as Record<string, unknown>[];
    expect(list.length).toBeGreaterThan(1);
    for (const item of list) expect(Object.keys(item)).toEqual([...CALL_LIST_ITEM_FIELDS]);
    const exported = (await context.as(owner).get('/calls/export?format=ndjson').expect(200)).text.trim().split('\n');
    for (const line of exported) expect(Object.keys(JSON.parse(line) as object)).toEqual([...CALL_LIST_ITEM_FIELDS]);
  });
});

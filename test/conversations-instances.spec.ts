import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { QUESTION_NOTED } from '../src/conversations/answering/answerer';
import { ConversationsRepository } from '../src/conversations/conversations.repository';
import { ConversationEnds } from '../src/conversations/conversation-ends.service';
import { JOB_END_IF_IDLE } from '../src/conversations/conversation-jobs';
import { bearer, eventually, startConversation } from './conversation-helpers';
import { createTestContext, TestAccount, TestContext } from './helpers';

/**
 * Two instances of the service on one database and one job queue: any instance serves any message of any
 * conversation, and an idle conversation is ended exactly once, whichever instance gets there.
 */

const IDLE_SECONDS = 2;

describe('conversations across two instances', () => {
  let a: TestContext;
  let b: TestContext;
  let owner: TestAccount;
  let agentId: number;

  beforeAll(async () => {
    const shared = {
      jobQueueSchema: `jobs_${randomBytes(6).toString('hex')}`,
      conversationIdleSeconds: IDLE_SECONDS,
      widgetRateLimit: 10_000,
    };
    a = await createTestContext(shared);
    b = await createTestContext(shared);
    owner = await a.createAccount();
    agentId = (await a.as(owner).post('/agents').send({ name: 'Everywhere' }).expect(201)).body.id;
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  const send = (context: TestContext, started: { conversationId: string; token: string }, text: string) =>
    context.http.post(`/conversations/${started.conversationId}/messages`).set(bearer(started.token)).send({ text });
  const callExists = async (id: string) => (await a.as(owner).get(`/calls/${id}`)).status === 200;
  /**
   * Until the database itself says the conversation is idle (no clock of ours involved), or it has already been
   * ended: the minute's idle sweep of any test context on this database may get there first (it spans every
   * account), and then the steps that follow meet an ended conversation, which they must handle alike.
   */
  const untilIdle = (id: string) =>
    eventually(async () => {
      const [row] = await a.app
        .get(DataSource)
        .query(`SELECT status = 'ended' OR last_message_at <= now() - make_interval(secs => $2) AS idle FROM conversations WHERE id = $1`, [
          id,
          IDLE_SECONDS,
        ]);
      return row?.idle ? true : undefined;
    });

  it('serves a conversation started on one instance from the other, message after message', async () => {
    const started = await startConversation(a, owner, agentId, { test: false });
    await send(b, started, 'Asked on B').expect(200);
    await send(a, started, 'Asked on A').expect(200);
    const view = (await b.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token)).expect(200)).body;
    expect(view.messages.map((m: { text: string }) => m.text)).toEqual(['Asked on B', QUESTION_NOTED, 'Asked on A', QUESTION_NOTED]);
    await b.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);
    await a.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);
    expect((await send(a, started, 'Late')).status).toBe(410);
    expect(await callExists(started.conversationId)).toBe(true);
  });

  it('ends idle conversations exactly once when both instances sweep at the same time', async () => {
    const conversations = await Promise.all(Array.from({ length: 5 }, () => startConversation(a, owner, agentId, { test: false })));
    for (const started of conversations) await send(b, started, 'Anyone there?').expect(200);
    for (const started of conversations) await untilIdle(started.conversationId);

    const sweeps = [a, b, a, b].map((context) => context.app.get(ConversationEnds).endIdleConversations());
    await expect(Promise.all(sweeps)).resolves.toBeDefined();

    const ids = conversations.map((started) => started.conversationId);
    const calls = await a.app.get(DataSource).query('SELECT id FROM calls WHERE account_id = $1 AND id = ANY($2::uuid[])', [owner.id, ids]);
    expect(calls.map((row: { id: string }) => row.id).sort()).toEqual([...ids].sort());
    const rows = await a.app
      .get(DataSource)
      .query('SELECT status, ended_at FROM conversations WHERE account_id = $1 AND id = ANY($2::uuid[])', [owner.id, ids]);
    expect(rows.every((row: { status: string; ended_at: Date | null }) => row.status === 'ended' && row.ended_at)).toBe(true);
    for (const started of conversations) expect((await send(b, started, 'Hello?')).status).toBe(410);
  });

  it('ends an idle conversation when an instance notices it first (a message gets 410, GET says ended)', async () => {
    const first = await startConversation(a, owner, agentId, { test: false });
    const second = await startConversation(a, owner, agentId, { test: false });
    for (const started of [first, second]) await send(a, started, 'Hi').expect(200);
    await untilIdle(first.conversationId);
    await untilIdle(second.conversationId);
    expect((await send(b, first, 'Still there?')).status).toBe(410);
    expect((await b.http.get(`/conversations/${second.conversationId}`).set(bearer(second.token)).expect(200)).body.status).toBe('ended');
    expect(await callExists(first.conversationId)).toBe(true);
    expect(await callExists(second.conversationId)).toBe(true);
    // The visitor's late message was not part of it.
    const call = (await a.as(owner).get(`/calls/${first.conversationId}`).expect(200)).body;
    expect(call.transcript.map((turn: { text: string }) => turn.text)).toEqual(['Hi', QUESTION_NOTED]);
  });

  it('says ended when another instance ends the idle conversation between the read of its state and the end', async () => {
    const started = await startConversation(a, owner, agentId, { test: false });
    await send(a, started, 'Hi').expect(200);
    await untilIdle(started.conversationId);
    // B reads the conversation (active, idle); A ends it right then, before B tries to.
    const repository = b.app.get(ConversationsRepository);
    const findByToken = repository.findByToken.bind(repository);
    const spy = jest.spyOn(repository, 'findByToken').mockImplementationOnce(async (...args) => {
      const access = await findByToken(...args);
      await a.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);
      return access;
    });
    try {
      const view = (await b.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token)).expect(200)).body;
      expect(view.status).toBe('ended');
    } finally {
      spy.mockRestore();
    }
    expect(await callExists(started.conversationId)).toBe(true);
  });

  it('ends a conversation at its idle time by its own job, which waits again when a message moved that time', async () => {
    const started = await startConversation(a, owner, agentId, { test: false });
    const job = async () =>
      (
        await a.app
          .get(DataSource)
          .query(
            `SELECT state, start_after FROM ${a.config.jobQueueSchema}.job WHERE name = $1 AND singleton_key = $2 ORDER BY created_on`,
            [JOB_END_IF_IDLE, started.conversationId],
          )
      ).map((row: { state: string; start_after: Date }) => ({ state: row.state, startAfter: row.start_after.getTime() }));
    const [scheduled] = await job();
    expect(scheduled).toEqual({ state: 'created', startAfter: Date.parse(started.expiresAt) });
    await send(b, started, 'One more thing').expect(200); // moves the idle time past the job's
    // Far enough past it that the first job surely runs before the new idle time, whatever the machine's load.
    const [[{ lastMessageAt }]] = await a.app
      .get(DataSource)
      .query(
        `UPDATE conversations SET last_message_at = now() + interval '8 seconds' WHERE account_id = $1 AND id = $2 RETURNING last_message_at AS "lastMessageAt"`,
        [owner.id, started.conversationId],
      );
    // The job that came at the old idle time found the conversation busy and queued the next check for the new one.
    const idleAt = lastMessageAt.getTime() + IDLE_SECONDS * 1000;
    const jobs = await eventually(async () => {
      const rows = await job();
      return rows.some((row: { startAfter: number }) => row.startAfter === idleAt) &&
        rows.slice(0, -1).every((row: { state: string }) => row.state === 'completed')
        ? rows
        : undefined;
    }, 30_000);
    expect(jobs.length).toBeGreaterThanOrEqual(2);
    expect(jobs.at(-1)!.startAfter).toBe(idleAt);
    // Ended in the background (by that job, or by a minute's sweep if one came first), not by anyone reading it.
    await eventually(async () => ((await callExists(started.conversationId)) ? true : undefined), 30_000);
    const [row] = await a.app
      .get(DataSource)
      .query(`SELECT status, extract(epoch FROM ended_at - last_message_at) AS idle FROM conversations WHERE id = $1`, [
        started.conversationId,
      ]);
    expect(row.status).toBe('ended');
    expect(Number(row.idle)).toBeGreaterThanOrEqual(IDLE_SECONDS);
  }, 60_000);
});

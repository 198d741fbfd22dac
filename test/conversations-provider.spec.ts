import { DataSource } from 'typeorm';
import { APOLOGY } from '../src/conversations/answering/answerer';
import { GENERIC_PROMPT } from '../src/conversations/answering/prompt';
import { JOB_ANALYSE } from '../src/conversations/conversation-jobs';
import { ConversationReplies } from '../src/conversations/conversation-replies.service';
import { ConversationTalk } from '../src/conversations/conversation-talk.service';
import { bearer, capturedLogger, eventually, listen, parseEventStream, startConversation, streamMessage } from './conversation-helpers';
import { Behaviour, FakeLlm, startFakeLlm } from './fake-llm';
import { createTestContext, TestAccount, TestContext } from './helpers';

/**
 * Conversations answered by an OpenAI-compatible provider: a real HTTP server on loopback speaking the Chat
 * Completions wire protocol (test/fake-llm.ts), driven through the official `openai` client.
 */

/** The LLM deadline of every case but those about the deadline: a busy machine must not turn an answer into a timeout. */
const PATIENT_MS = 30_000;
/** The deadline of the cases that expect it to pass (a stall, a stream slower than it in all). */
const DEADLINE_MS = 1_500;
/** Text the provider puts in its failures: none of it may reach the visitor or the logs. */
const PROVIDER_SECRET = 'PROVIDER-INTERNAL-9f3b';

describe('conversations answered by a Chat Completions provider', () => {
  let llm: FakeLlm;
  let context: TestContext;
  /** The same service with the short deadline, for the cases about it. */
  let hurried: TestContext;
  let owner: TestAccount;
  let agent: { id: number };
  const log = capturedLogger();

  beforeAll(async () => {
    llm = await startFakeLlm();
    const withDeadline = (timeoutMs: number) =>
      createTestContext(
        { llm: { baseUrl: llm.url, apiKey: 'sk-test-key', timeoutMs, maxTokens: 321 }, ragPassages: 3, widgetRateLimit: 10_000 },
        { logger: log.logger },
      );
    context = await withDeadline(PATIENT_MS);
    hurried = await withDeadline(DEADLINE_MS);
    owner = await context.createAccount();
    agent = (
      await context
        .as(owner)
        .post('/agents')
        .send({ name: 'Asha', model: 'llama3.1:8b', language: 'hi-IN', systemPrompt: 'You are Asha of Sharma Sweets.' })
        .expect(201)
    ).body;
  });
  afterAll(async () => {
    await context.close();
    await hurried.close();
    await llm.close();
  });
  beforeEach(() => {
    llm.behave((request) =>
      request.body.stream ? { kind: 'stream', pieces: ['Namaste', ', ', 'ji.'] } : { kind: 'completion', content: '{}' },
    );
    llm.requests.length = 0;
  });

  const message = (started: { conversationId: string; token: string }, text: string, on = context) =>
    on.http.post(`/conversations/${started.conversationId}/messages`).set(bearer(started.token)).send({ text });
  const streamed = (started: { conversationId: string; token: string }, text: string, on = context) =>
    message(started, text, on)
      .set('Accept', 'text/event-stream')
      .buffer(true)
      .parse((res, done) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (part: string) => (body += part));
        res.on('end', () => done(null, body));
      });

  it("sends the agent's model, a system message with its prompt and language, the turns, max_tokens and stream", async () => {
    const started = await startConversation(context, owner, agent.id);
    const response = await message(started, 'Do you deliver to Pune?').expect(200);
    expect(response.body).toEqual({ text: 'Namaste, ji.' });
    expect(llm.requests).toHaveLength(1);
    const [{ body, headers }] = llm.requests;
    expect(body.model).toBe('llama3.1:8b');
    expect(body.stream).toBe(true);
    expect(body.max_tokens).toBe(321);
    expect(headers.authorization).toBe('Bearer sk-test-key');
    expect(body.messages[0].role).toBe('system');
    expect(body.messages[0].content).toContain('You are Asha of Sharma Sweets.');
    expect(body.messages[0].content).toContain('Hindi (hi-IN)');
    expect(body.messages.slice(1)).toEqual([{ role: 'user', content: 'Do you deliver to Pune?' }]);
    // Only standard Chat Completions fields.
    expect(Object.keys(body).sort()).toEqual(['max_tokens', 'messages', 'model', 'stream']);
  });

  it("gives the best passages of the agent's knowledge bases for the latest message (at most RAG_PASSAGES), best first", async () => {
    const kb = (await context.as(owner).post('/knowledge-bases').send({ name: 'Sharma Sweets' }).expect(201)).body;
    const facts = [
      ['Pune', 'We deliver sweets to Pune on Tuesdays and Fridays.'],
      ['Pune shop', 'Our Pune shop on FC Road opens at 10 am.'],
      ['Pune prices', 'Delivery to Pune costs 80 rupees, free above 1,000 rupees.'],
      ['Pune festivals', 'During Diwali, Pune orders need two days more.'],
      ['Mumbai', 'Mumbai deliveries run every day.'],
    ];
    for (const [name, content] of facts)
      await context.as(owner).post(`/knowledge-bases/${kb.id}/sources`).send({ name, content }).expect(201);
    const informed = (
      await context
        .as(owner)
        .post('/agents')
        .send({ name: 'Informed', knowledgeBaseIds: [kb.id] })
        .expect(201)
    ).body;
    const question = 'When do you deliver to Pune?';
    const expected = (await context.as(owner).get(`/knowledge-bases/${kb.id}/search`).query({ q: question, limit: 3 }).expect(200)).body;
    expect(expected).toHaveLength(3);
    const started = await startConversation(context, owner, informed.id);
    await message(started, question).expect(200);
    const system = llm.requests[0].body.messages[0].content!;
    const shown = [...system.matchAll(/\[(\d+)\] From "([^"]+)":\n([^\n]+)/g)].map((match) => ({ sourceName: match[2], text: match[3] }));
    expect(shown).toEqual(expected.map(({ sourceName, text }: { sourceName: string; text: string }) => ({ sourceName, text })));
    expect(system).not.toContain('Mumbai');
  });

  it("uses the built-in generic prompt when the agent's is blank", async () => {
    const plain = (await context.as(owner).post('/agents').send({ name: 'Plain', language: 'te-IN' }).expect(201)).body;
    const started = await startConversation(context, owner, plain.id);
    await message(started, 'Hello').expect(200);
    expect(llm.requests[0].body.messages[0].content).toContain(GENERIC_PROMPT);
    expect(llm.requests[0].body.messages[0].content).toContain('Telugu (te-IN)');
    expect(llm.requests[0].body.model).toBe('gpt-4.1');
  });

  it('sends at most the last 20 turns, the latest message last, replies as assistant turns', async () => {
    llm.behave((request) => ({
      kind: 'stream',
      pieces: [`Reply ${request.body.messages.filter((m) => m.role === 'user').at(-1)!.content}`],
    }));
    const started = await startConversation(context, owner, agent.id);
    for (let index = 1; index <= 12; index++) await message(started, `M${index}`).expect(200);
    const last = llm.requests.at(-1)!.body.messages;
    expect(last[0].role).toBe('system');
    const turns = last.slice(1);
    expect(turns).toHaveLength(20);
    expect(turns.at(-1)).toEqual({ role: 'user', content: 'M12' });
    // 12 messages and 11 replies so far: the first three turns (M1, its reply, M2) are left out.
    expect(turns.slice(0, 3)).toEqual([
      { role: 'assistant', content: 'Reply M2' },
      { role: 'user', content: 'M3' },
      { role: 'assistant', content: 'Reply M3' },
    ]);
  });

  it('streams each provider piece as a delta, then done with the whole reply', async () => {
    const started = await startConversation(context, owner, agent.id);
    const response = await streamed(started, 'Hi');
    expect(response.status).toBe(200);
    const events = parseEventStream(response.body as string);
    expect(events).toEqual([
      { event: 'delta', data: '{"text":"Namaste"}' },
      { event: 'delta', data: '{"text":", "}' },
      { event: 'delta', data: '{"text":"ji."}' },
      { event: 'done', data: '{"text":"Namaste, ji."}' },
    ]);
  });

  it('records a reply with NUL or an unpaired surrogate as text PostgreSQL can store', async () => {
    llm.behave({ kind: 'stream', pieces: ['Hi\u0000 there', ' \uD800!'] });
    const started = await startConversation(context, owner, agent.id);
    expect((await message(started, 'Hello').expect(200)).body).toEqual({ text: 'Hi there \uFFFD!' });
    const view = (await context.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token)).expect(200)).body;
    expect(view.messages.at(-1).text).toBe('Hi there \uFFFD!');
  });

  describe('a provider that fails gives the visitor the fixed apology, and nothing of its own text, anywhere', () => {
    /** [name, behaviour, whether the case is about the deadline (run on `hurried`)] */
    const failures: [string, Behaviour, boolean][] = [
      ['HTTP 500', { kind: 'status', status: 500, message: PROVIDER_SECRET }, false],
      ['HTTP 401', { kind: 'status', status: 401, message: PROVIDER_SECRET }, false],
      ['HTTP 429', { kind: 'status', status: 429, message: PROVIDER_SECRET }, false],
      ['a stall past LLM_TIMEOUT_MS', { kind: 'stall' }, true],
      ['garbage chunks', { kind: 'garbage', text: `{not json ${PROVIDER_SECRET}` }, false],
      [
        'a chunk of the wrong shape',
        { kind: 'garbage', text: JSON.stringify({ choices: [{ delta: { content: { text: PROVIDER_SECRET } } }] }) },
        false,
      ],
      ['the connection cut mid-stream', { kind: 'cut', pieces: ['Namaste, ', PROVIDER_SECRET] }, false],
      [
        'a stream that is slower than LLM_TIMEOUT_MS in all',
        { kind: 'stream', pieces: ['Nam', 'aste', PROVIDER_SECRET, '!'], delayMs: 600 },
        true,
      ],
    ];

    it.each(failures)('%s (JSON)', async (_name, behaviour, aboutDeadline) => {
      const on = aboutDeadline ? hurried : context;
      llm.behave(behaviour);
      const started = await startConversation(on, owner, agent.id);
      const response = await message(started, 'Hello?', on).expect(200);
      expect(response.body).toEqual({ text: APOLOGY });
      const view = (await on.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token)).expect(200)).body;
      expect(view.messages.at(-1)).toMatchObject({ speaker: 'agent', text: APOLOGY });
      expect(JSON.stringify(view)).not.toContain(PROVIDER_SECRET);
      // The conversation goes on.
      llm.behave({ kind: 'stream', pieces: ['Back again.'] });
      expect((await message(started, 'And now?', on).expect(200)).body).toEqual({ text: 'Back again.' });
    });

    it.each(failures)('%s (stream): done carries the apology', async (_name, behaviour, aboutDeadline) => {
      const on = aboutDeadline ? hurried : context;
      llm.behave(behaviour);
      const started = await startConversation(on, owner, agent.id);
      const response = await streamed(started, 'Hello?', on);
      expect(response.status).toBe(200);
      const events = parseEventStream(response.body as string);
      expect(events.at(-1)).toEqual({ event: 'done', data: JSON.stringify({ text: APOLOGY }) });
      expect(events.slice(0, -1).every((event) => event.event === 'delta')).toBe(true);
    });

    it('and the logs say only the kind of failure', () => {
      const text = log.lines.join('\n');
      expect(text).not.toContain(PROVIDER_SECRET);
      expect(text).not.toContain('sk-test-key');
      const failuresLogged = log.lines.map((line) => JSON.parse(line)).filter((entry) => entry.provider);
      expect(new Set(failuresLogged.map((entry) => entry.provider.failure))).toEqual(
        new Set(['http-status', 'timeout', 'invalid-response', 'connection']),
      );
      expect(
        failuresLogged
          .filter((entry) => entry.provider.failure === 'http-status')
          .map((entry) => entry.provider.status)
          .sort(),
      ).toEqual(expect.arrayContaining([401, 429, 500]));
    });
  });

  it('answers 409 to a message sent while the reply to the previous one is still being produced, then takes the next', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    llm.behave({ kind: 'stream', pieces: ['Let me check'], hold });
    const server = await listen(context.app);
    try {
      const started = await startConversation(context, owner, agent.id);
      let firstDelta!: () => void;
      const delta = new Promise<void>((resolve) => (firstDelta = resolve));
      const first = streamMessage(server.url, started.conversationId, started.token, 'First', (body) => {
        if (parseEventStream(body).some((event) => event.event === 'delta')) firstDelta();
      });
      await delta;
      const second = await message(started, 'Second');
      expect(second.status).toBe(409);
      expect(second.body).toEqual({ statusCode: 409, error: 'Conflict', message: expect.stringContaining('still being produced') });
      release();
      expect(parseEventStream((await first).body).at(-1)).toEqual({ event: 'done', data: '{"text":"Let me check"}' });
      llm.behave({ kind: 'stream', pieces: ['Done.'] });
      await message(started, 'Third').expect(200);
      const view = (await context.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token))).body;
      expect(view.messages.map((m: { text: string }) => m.text)).toEqual(['First', 'Let me check', 'Third', 'Done.']);
    } finally {
      release();
      await server.close();
    }
  });

  it('produces and records the whole reply when the visitor goes away mid-stream', async () => {
    llm.behave({ kind: 'stream', pieces: ['One, ', 'two, ', 'three.'], delayMs: 50 });
    const server = await listen(context.app);
    try {
      const started = await startConversation(context, owner, agent.id);
      const result = await streamMessage(server.url, started.conversationId, started.token, 'Count', (body) =>
        parseEventStream(body).some((event) => event.event === 'delta') ? 'disconnect' : undefined,
      );
      expect(result.disconnected).toBe(true);
      expect(parseEventStream(result.body).map((event) => event.event)).not.toContain('done');
      const view = await eventually(async () => {
        const body = (await context.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token))).body;
        return body.messages.length === 2 ? body : undefined;
      });
      expect(view.messages[1]).toMatchObject({ speaker: 'agent', text: 'One, two, three.' });
    } finally {
      await server.close();
    }
  });

  it('waits, when the service shuts down, for the replies being produced, so that each is recorded', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    llm.behave({ kind: 'stream', pieces: ['Recorded ', 'anyway.'], hold });
    const instance = await createTestContext({ llm: { baseUrl: llm.url, apiKey: undefined, timeoutMs: 10_000, maxTokens: 64 } });
    const started = await startConversation(instance, owner, agent.id);
    const reply = instance.app
      .get(ConversationReplies)
      .reply(
        await instance.app
          .get(ConversationTalk)
          .accept(started.conversationId, `Bearer ${started.token}`, 'Before the restart', '127.0.0.1', () => undefined),
      );
    await eventually(async () => (llm.requests.length ? true : undefined));
    const closed = instance.close();
    setTimeout(release, 200);
    await closed;
    await expect(reply).resolves.toBe('Recorded anyway.');
    const view = (await context.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token)).expect(200)).body;
    expect(view.messages.map((m: { text: string }) => m.text)).toEqual(['Before the restart', 'Recorded anyway.']);
  });

  describe('post-call analysis (a durable job)', () => {
    /** Waits until the analysis job of the call has run (completed, or failed and waiting for its retry). */
    async function analysisSettled(callId: string): Promise<string> {
      const schema = context.config.jobQueueSchema;
      return eventually(async () => {
        const rows = await context.app
          .get(DataSource)
          .query(`SELECT state FROM ${schema}.job WHERE name = $1 AND data->>'conversationId' = $2`, [JOB_ANALYSE, callId]);
        return rows.length && ['completed', 'retry', 'failed'].includes(rows[0].state) ? (rows[0].state as string) : undefined;
      });
    }

    async function endedCall(content: Behaviour) {
      llm.behave((request) => (request.body.stream ? { kind: 'stream', pieces: ['Sure, tomorrow at 10.'] } : content));
      const started = await startConversation(context, owner, agent.id, { test: false, name: 'Ravi' });
      await message(started, 'Please call me back tomorrow').expect(200);
      await context.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);
      return started.conversationId;
    }

    it("fills sentiment, status and extractedData.summary from the provider's answer", async () => {
      const callId = await endedCall({
        kind: 'completion',
        content: '```json\n{"sentiment": "positive", "status": "callback", "summary": "Ravi asked for a call back tomorrow at 10."}\n```',
      });
      expect(await analysisSettled(callId)).toBe('completed');
      const call = (await context.as(owner).get(`/calls/${callId}`).expect(200)).body;
      expect(call).toMatchObject({
        sentiment: 'positive',
        status: 'callback',
        extractedData: { summary: 'Ravi asked for a call back tomorrow at 10.' },
      });
      const analysis = llm.requests.find((request) => !request.body.stream)!;
      expect(analysis.body.model).toBe('llama3.1:8b');
      expect(analysis.body.max_tokens).toBe(321);
      expect(JSON.stringify(analysis.body.messages)).toContain('Please call me back tomorrow');
      expect(Object.keys(analysis.body).sort()).toEqual(['max_tokens', 'messages', 'model']);
    });

    it.each<[string, Behaviour, string]>([
      [
        'an invalid answer',
        { kind: 'completion', content: '{"sentiment": "ecstatic", "status": "callback", "summary": "x"}' },
        'completed',
      ],
      ['an answer that is not JSON', { kind: 'completion', content: `I think it went well. ${PROVIDER_SECRET}` }, 'completed'],
      ['a provider failure', { kind: 'status', status: 503, message: PROVIDER_SECRET }, 'retry'],
    ])('leaves the defaults after %s', async (_name, behaviour, state) => {
      const callId = await endedCall(behaviour);
      expect(await analysisSettled(callId)).toBe(state);
      const call = (await context.as(owner).get(`/calls/${callId}`).expect(200)).body;
      expect(call).toMatchObject({ sentiment: '', status: 'new', extractedData: {} });
      expect(log.lines.join('\n')).not.toContain(PROVIDER_SECRET);
    });
  });
});

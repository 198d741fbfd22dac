import { Webhook as StandardWebhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { AppConfig, loadConfig } from '../src/config/config';
import { Answerer, APOLOGY, MAX_TOOL_ROUNDS, ReplyTools } from '../src/conversations/answering/answerer';
import { ConversationReplies } from '../src/conversations/conversation-replies.service';
import { ConversationTalk } from '../src/conversations/conversation-talk.service';
import { WebhookTargets } from '../src/webhooks/webhook-targets';
import { bearer, capturedLogger, eventually, startConversation } from './conversation-helpers';
import { Behaviour, ChatRequest, FakeLlm, FakeToolCall, startFakeLlm } from './fake-llm';
import { startToolServer, ToolAnswer, ToolServer } from './fake-tool-server';
import { createTestContext, TestAccount, TestContext } from './helpers';

/**
 * The agents' tools called in text conversations (contract section 18), end to end: the service on a provider that
 * streams `tool_calls` as real ones split them (test/fake-llm.ts) and a customer's tool endpoint on loopback
 * (test/fake-tool-server.ts) that answers, fails, hangs, floods, redirects or hangs up.
 */

/** The provider's deadline: long, so that a busy machine never turns an answer into a timeout. */
const PATIENT_MS = 30_000;
/** In a tool's answers and arguments: none of it may reach the logs. */
const TOOL_SECRET = 'TOOL-ANSWER-7c1e';
const BOOK_TABLE_PARAMETERS = {
  type: 'object',
  properties: { people: { type: 'integer', minimum: 1 }, time: { type: 'string' } },
  required: ['people'],
};

/** Webhook settings that let tools reach the stand-in endpoint on loopback. */
const privateTargets = (): Partial<AppConfig> => ({ webhooks: { ...loadConfig(process.env).webhooks, allowPrivateTargets: true } });

/** The last message of a request, and whether it is a tool's result (the model is being asked again). */
const lastMessage = (request: ChatRequest) => request.body.messages.at(-1)!;
const afterTools = (request: ChatRequest) => lastMessage(request).role === 'tool';
/** The results the model was given in a request, by call id. */
const toolResults = (request: ChatRequest) =>
  Object.fromEntries(
    request.body.messages.filter((message) => message.role === 'tool').map((message) => [message.tool_call_id!, message.content ?? '']),
  );

/** A promise and its resolver, for a test to release what it holds. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}

describe('tools called in conversations', () => {
  let llm: FakeLlm;
  let server: ToolServer;
  let context: TestContext;
  let owner: TestAccount;
  const log = capturedLogger();
  let serial = 0;

  beforeAll(async () => {
    llm = await startFakeLlm();
    server = await startToolServer();
    context = await createTestContext(
      {
        llm: { baseUrl: llm.url, apiKey: 'sk-test-key', timeoutMs: PATIENT_MS, maxTokens: 321 },
        ...privateTargets(),
        widgetRateLimit: 10_000,
      },
      { logger: log.logger },
    );
    owner = await context.createAccount();
  });
  afterAll(async () => {
    await context.close();
    await server.close();
    await llm.close();
  });
  beforeEach(() => {
    llm.requests.length = 0;
    server.requests.length = 0;
    server.answer = () => ({ kind: 'json', body: { confirmed: true, table: 7, note: TOOL_SECRET } });
  });

  const createTool = async (fields: object) =>
    (
      await context
        .as(owner)
        .post('/tools')
        .send({ name: `tool_${++serial}`, ...fields })
        .expect(201)
    ).body as {
      id: number;
      name: string;
      secret: string | null;
    };
  const webhookTool = (fields: object = {}) =>
    createTool({ type: 'webhook', description: 'Books a table.', url: server.url(), parameters: BOOK_TABLE_PARAMETERS, ...fields });
  const agentWith = async (toolIds: number[]) =>
    (await context.as(owner).post('/agents').send({ name: 'Asha', model: 'llama3.1:8b', toolIds }).expect(201)).body as { id: number };
  /** The model calls `calls` first, then (once given their results) answers `reply`. */
  const callThenSay = (calls: FakeToolCall[], reply = 'Done.', style: 'openai' | 'ollama' = 'openai', splitLabels = true) =>
    llm.behave((request): Behaviour => {
      if (!request.body.stream) return { kind: 'completion', content: '{}' };
      return afterTools(request) ? { kind: 'stream', pieces: piecesOf(reply) } : { kind: 'tool-calls', calls, style, splitLabels };
    });
  const piecesOf = (text: string) => text.match(/.{1,5}/gs) ?? [''];
  const say = (started: { conversationId: string; token: string }, text: string) =>
    context.http.post(`/conversations/${started.conversationId}/messages`).set(bearer(started.token)).send({ text });
  const messagesOf = async (started: { conversationId: string; token: string }) =>
    (await context.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token)).expect(200)).body;
  /** The result the model was given for its first call (in the request after the tool round). */
  const firstResult = () => Object.values(toolResults(llm.requests.find(afterTools)!))[0];

  it('calls a webhook tool with a signed body, gives the model its answer, and records it in the transcript', async () => {
    const tool = await webhookTool({ name: `book_table_${++serial}` });
    const agent = await agentWith([tool.id]);
    callThenSay([{ name: tool.name, arguments: '{"people":2,"time":"19:30"}' }], 'Your table for two is booked.');
    const started = await startConversation(context, owner, agent.id, { name: 'Priya Sharma', phone: '+91-98765-43210' });
    const reply = await say(started, 'A table for two at 7:30, please').expect(200);
    expect(reply.body).toEqual({ text: 'Your table for two is booked.' });

    // The model was offered the tool as a function, and asked again with its call and the tool's answer.
    expect(llm.requests.filter((request) => request.body.stream)).toHaveLength(2);
    expect(llm.requests[0].body.tools).toEqual([
      { type: 'function', function: { name: tool.name, description: 'Books a table.', parameters: BOOK_TABLE_PARAMETERS } },
    ]);
    const [call] = lastMessage(llm.requests[1]).role === 'tool' ? llm.requests[1].body.messages.slice(-2) : [];
    expect(call).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: expect.stringMatching(/^call_\d+abcdef$/),
          type: 'function',
          function: { name: tool.name, arguments: '{"people":2,"time":"19:30"}' },
        },
      ],
    });
    const answer = JSON.stringify({ confirmed: true, table: 7, note: TOOL_SECRET });
    expect(toolResults(llm.requests[1])).toEqual({ [call.tool_calls![0].id]: answer });

    // The request: signed with the tool's secret (verified as any receiver would), the body the contract's.
    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request.method).toBe('POST');
    expect(request.headers['content-type']).toBe('application/json');
    const body = new StandardWebhook(tool.secret!).verify(request.body, request.headers as Record<string, string>);
    expect(body).toEqual({
      id: request.headers['webhook-id'],
      tool: tool.name,
      arguments: { people: 2, time: '19:30' },
      conversation: { id: started.conversationId, agentId: agent.id, channel: 'api', phone: '+91-98765-43210', name: 'Priya Sharma' },
    });
    expect(request.headers['webhook-id']).toMatch(/^tc_[0-9a-f]{32}$/);

    // The transcript: the visitor, what the tool did, the reply; and the call's, once the conversation ends.
    const entry = `${tool.name} {"people":2,"time":"19:30"} → ${answer}`;
    expect((await messagesOf(started)).messages.map(({ speaker, text }: { speaker: string; text: string }) => ({ speaker, text }))).toEqual(
      [
        { speaker: 'user', text: 'A table for two at 7:30, please' },
        { speaker: 'tool', text: entry },
        { speaker: 'agent', text: 'Your table for two is booked.' },
      ],
    );
    await context.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);
    const recorded = (await context.as(owner).get(`/calls/${started.conversationId}`).expect(200)).body;
    expect(recorded.transcript.map(({ speaker }: { speaker: string }) => speaker)).toEqual(['user', 'tool', 'agent']);
    expect(recorded.transcript[1].text).toBe(entry);
  });

  it('signs with the new and the previous secret after a rotation, so that either verifies', async () => {
    const tool = await webhookTool();
    const agent = await agentWith([tool.id]);
    const rotated = (await context.as(owner).post(`/tools/${tool.id}/rotate-secret`).expect(200)).body.secret as string;
    callThenSay([{ name: tool.name, arguments: '{"people":4}' }]);
    await say(await startConversation(context, owner, agent.id), 'Four of us').expect(200);
    const [request] = server.requests;
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [rotated, tool.secret!]) {
      expect(new StandardWebhook(secret).verify(request.body, request.headers as Record<string, string>)).toMatchObject({
        arguments: { people: 4 },
      });
    }
    expect(() =>
      new StandardWebhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(
        request.body,
        request.headers as Record<string, string>,
      ),
    ).toThrow();
  });

  it.each([
    ['OpenAI', 'openai'],
    ['Ollama (every call at index 0, each whole)', 'ollama'],
  ] as const)('runs the calls of one answer at once, as %s streams them, and gives the model each result', async (_name, style) => {
    const tool = await webhookTool();
    const agent = await agentWith([tool.id]);
    const bothArrived = deferred();
    server.answer = (request) => {
      if (server.requests.length === 2) bothArrived.resolve();
      const people = (JSON.parse(request.body) as { arguments: { people: number } }).arguments.people;
      // Each answer waits for both requests: calls made one after the other would never both arrive.
      return { kind: 'json', body: { table: people }, hold: bothArrived.promise };
    };
    callThenSay(
      [
        { name: tool.name, arguments: '{"people":2}', id: 'call_first' },
        { name: tool.name, arguments: '{"people":6}', id: 'call_second' },
      ],
      'Two tables.',
      style,
    );
    await say(await startConversation(context, owner, agent.id), 'Two tables please').expect(200);
    expect(server.requests).toHaveLength(2);
    expect(toolResults(llm.requests[1])).toEqual({ call_first: '{"table":2}', call_second: '{"table":6}' });
  });

  it('sends no request for arguments that do not match the schema, or are not JSON, or for an unknown tool: the model is told why', async () => {
    const tool = await webhookTool();
    const agent = await agentWith([tool.id]);
    callThenSay([
      { name: tool.name, arguments: '{"people":0}', id: 'call_zero' },
      { name: tool.name, arguments: '{"time":"19:30"}', id: 'call_missing' },
      { name: tool.name, arguments: '{"people":', id: 'call_cut' },
      { name: 'delete_everything', arguments: '{}', id: 'call_unknown' },
    ]);
    const started = await startConversation(context, owner, agent.id);
    expect((await say(started, 'Book it').expect(200)).body.text).toBe('Done.');
    expect(server.requests).toHaveLength(0);
    const results = toolResults(llm.requests[1]);
    expect(JSON.parse(results.call_zero)).toEqual({
      error: "The arguments do not match the tool's parameters: arguments/people must be >= 1",
    });
    expect(JSON.parse(results.call_missing)).toEqual({
      error: "The arguments do not match the tool's parameters: arguments must have required property 'people'",
    });
    expect(JSON.parse(results.call_cut)).toEqual({ error: 'The arguments are not valid JSON' });
    expect(JSON.parse(results.call_unknown)).toEqual({ error: `There is no tool named delete_everything; the tools are: ${tool.name}` });
    const entries = (await messagesOf(started)).messages.filter((message: { speaker: string }) => message.speaker === 'tool');
    expect(entries.map((entry: { text: string }) => entry.text)).toEqual([
      `${tool.name} {"people":0} → ${results.call_zero}`,
      `${tool.name} {"time":"19:30"} → ${results.call_missing}`,
      `${tool.name} {"people": → ${results.call_cut}`,
      `delete_everything {} → ${results.call_unknown}`,
    ]);
  });

  it(`gives the visitor the apology when the model is still calling tools after ${MAX_TOOL_ROUNDS} rounds`, async () => {
    const tool = await webhookTool();
    const agent = await agentWith([tool.id]);
    llm.behave((request): Behaviour => ({
      kind: 'tool-calls',
      calls: [{ name: tool.name, arguments: `{"people":${request.body.messages.length}}` }],
    }));
    const started = await startConversation(context, owner, agent.id);
    expect((await say(started, 'Book it, and again').expect(200)).body.text).toBe(APOLOGY);
    expect(llm.requests).toHaveLength(MAX_TOOL_ROUNDS + 1);
    expect(server.requests).toHaveLength(MAX_TOOL_ROUNDS);
    const { messages } = await messagesOf(started);
    expect(messages.map((message: { speaker: string }) => message.speaker)).toEqual([
      'user',
      ...Array(MAX_TOOL_ROUNDS).fill('tool'),
      'agent',
    ]);
    // The conversation goes on.
    llm.behave(() => ({ kind: 'stream', pieces: ['Sorry about that.'] }));
    expect((await say(started, 'Hello?').expect(200)).body.text).toBe('Sorry about that.');
  });

  describe('a tool endpoint that fails costs the conversation at most its timeoutSeconds, and the model is told', () => {
    const failures: [string, ToolAnswer, string][] = [
      ['hangs', { kind: 'hang' }, 'The tool did not answer within 1 s'],
      ['answers 500', { kind: 'text', status: 500, body: `Internal error ${TOOL_SECRET}` }, 'The tool answered with HTTP 500'],
      ['answers 30 MB', { kind: 'huge', bytes: 30 * 1024 * 1024 }, 'The tool answered more than 16 KiB'],
      [
        'redirects to a private address',
        { kind: 'redirect', location: 'http://169.254.169.254/latest/meta-data/' },
        'The tool answered with a redirect (HTTP 302), which is not followed',
      ],
      ['closes the connection', { kind: 'close' }, 'The tool could not be reached'],
      ['answers bytes that are not text', { kind: 'bytes', body: Buffer.from([0xff, 0xfe, 0x80]) }, "The tool's answer is not UTF-8 text"],
    ];

    it.each(failures)('%s', async (_case, answer, words) => {
      const tool = await webhookTool({ timeoutSeconds: 1 });
      const agent = await agentWith([tool.id]);
      server.answer = () => answer;
      callThenSay([{ name: tool.name, arguments: `{"people":3,"time":"${TOOL_SECRET}"}` }], 'I could not book it.');
      const started = await startConversation(context, owner, agent.id);
      const sentAt = Date.now();
      expect((await say(started, 'Book it').expect(200)).body.text).toBe('I could not book it.');
      // A loose bound (the machine is shared): the tool's second, plus the provider's two answers and a margin.
      expect(Date.now() - sentAt).toBeLessThan(1_000 + 10_000);
      expect(JSON.parse(firstResult())).toEqual({ error: words });
      expect(server.requests).toHaveLength(1);
      if (answer.kind === 'huge') {
        // Read no further than the bound: the endpoint could write only what the sockets' buffers took.
        expect(await server.hugeWritten.at(-1)!).toBeLessThan(answer.bytes / 2);
      }
      // The conversation goes on.
      llm.behave(() => ({ kind: 'stream', pieces: ['Anything else?'] }));
      expect((await say(started, 'Never mind').expect(200)).body.text).toBe('Anything else?');
    });

    it('leaves no tool answer, argument or URL in the logs', () => {
      const logged = log.lines.join('\n');
      expect(logged).toContain('A tool call failed; the model was told why');
      expect(logged).not.toContain(TOOL_SECRET);
      expect(logged).not.toContain(server.url('/'));
      expect(logged).not.toContain('127.0.0.1:');
      expect(logged).not.toContain('169.254.169.254');
    });
  });

  it('ends the conversation after the reply when the model calls end_call (endedReason agent-hung-up)', async () => {
    const endCall = await createTool({ type: 'end_call', name: `end_call_${++serial}` });
    const agent = await agentWith([endCall.id]);
    callThenSay([{ name: endCall.name, arguments: '{}' }], 'Goodbye, and thank you!');
    const started = await startConversation(context, owner, agent.id);
    expect((await say(started, 'That is all, bye').expect(200)).body.text).toBe('Goodbye, and thank you!');
    expect(llm.requests[0].body.tools![0].function.description).toBe(
      'End the call once the conversation is over; your reply is the last thing the caller hears.',
    );
    const view = await messagesOf(started);
    expect(view.status).toBe('ended');
    expect(view.messages.map((message: { speaker: string }) => message.speaker)).toEqual(['user', 'tool', 'agent']);
    await say(started, 'Wait!').expect(410);
    const recorded = (await context.as(owner).get(`/calls/${started.conversationId}`).expect(200)).body;
    expect(recorded.endedReason).toBe('agent-hung-up');
    expect(recorded.transcript.at(-1)).toEqual({ speaker: 'agent', text: 'Goodbye, and thank you!' });
  });

  it('tells the model a transfer_call cannot transfer a conversation that is not a phone call', async () => {
    const transfer = await createTool({ type: 'transfer_call', description: 'To sales', number: '+919876543210' });
    const agent = await agentWith([transfer.id]);
    callThenSay([{ name: transfer.name, arguments: '' }], 'Please call +91 98765 43210.');
    const started = await startConversation(context, owner, agent.id);
    expect((await say(started, 'Sales please').expect(200)).body.text).toBe('Please call +91 98765 43210.');
    expect(JSON.parse(firstResult())).toEqual({ error: 'This conversation is not a phone call: it cannot be transferred' });
    expect((await messagesOf(started)).status).toBe('active');
  });

  it("gives the model the tool's whole answer (up to 16 KiB) and cuts its transcript entry at 1,000 characters", async () => {
    const tool = await webhookTool();
    const agent = await agentWith([tool.id]);
    const long = '😀'.repeat(3_000); // 12,000 bytes
    server.answer = () => ({ kind: 'text', body: long });
    callThenSay([{ name: tool.name, arguments: '{"people":2}' }]);
    const started = await startConversation(context, owner, agent.id);
    await say(started, 'Book it').expect(200);
    expect(firstResult() === long).toBe(true);
    const entry = (await messagesOf(started)).messages[1].text as string;
    expect([...entry]).toHaveLength(1_000);
    expect(entry.startsWith(`${tool.name} {"people":2} → 😀`)).toBe(true);
    expect(entry.endsWith('…')).toBe(true);
  });

  it('takes no other message while a tool runs, and keeps its claim on the reply past the time a claim goes stale', async () => {
    const tool = await webhookTool({ timeoutSeconds: 60 });
    const agent = await agentWith([tool.id]);
    const release = deferred();
    const arrived = deferred();
    server.answer = () => {
      arrived.resolve();
      return { kind: 'json', body: { ok: true }, hold: release.promise };
    };
    callThenSay([{ name: tool.name, arguments: '{"people":2}' }], 'Booked.');
    const started = await startConversation(context, owner, agent.id);
    // Sent now (a supertest request goes out once it is awaited).
    const first = say(started, 'Book it').then((response) => response);
    await arrived.promise;
    await say(started, 'Hello?').expect(409);
    // As if the claim had been made long ago: the reply in progress renews it (every 10 s) while its tool runs.
    const db = context.app.get(DataSource);
    await db.query(`UPDATE conversations SET replying_since = now() - interval '1 hour' WHERE id = $1`, [started.conversationId]);
    await eventually(async () => {
      const [row] = await db.query(`SELECT replying_since > now() - interval '1 minute' AS fresh FROM conversations WHERE id = $1`, [
        started.conversationId,
      ]);
      return row.fresh ? true : undefined;
    }, 30_000);
    await say(started, 'Hello?').expect(409);
    release.resolve();
    const replied = await first;
    expect([replied.status, replied.body.text]).toEqual([200, 'Booked.']);
  }, 60_000);

  it('ends the answer as soon as the reply is interrupted while its tools run, asking the model nothing more', async () => {
    llm.behave({ kind: 'tool-calls', calls: [{ name: 'lookup', arguments: '{}' }] });
    const running = deferred();
    const tools: ReplyTools = {
      functions: [{ name: 'lookup', description: 'Looks up.', parameters: { type: 'object', properties: {} } }],
      run: () => {
        running.resolve();
        return new Promise<string[]>(() => undefined); // a tool that never answers
      },
    };
    const interruption = new AbortController();
    const request = {
      agent: { model: 'm', systemPrompt: '', language: 'en-IN' },
      passages: [],
      turns: [{ speaker: 'user' as const, text: 'Hi' }],
      tools,
    };
    const pieces: string[] = [];
    const answered = (async () => {
      for await (const piece of context.app.get(Answerer).reply(request, interruption.signal)) pieces.push(piece);
    })();
    await running.promise;
    interruption.abort();
    await answered;
    expect(pieces).toEqual([]);
    expect(llm.requests).toHaveLength(1);
  });

  it('stops an interrupted reply at once, but never cancels a tool request already sent: its entry is recorded', async () => {
    const tool = await webhookTool({ timeoutSeconds: 60 });
    const agent = await agentWith([tool.id]);
    const arrived = deferred();
    const release = deferred();
    const answered = deferred<boolean>();
    server.answer = () => {
      arrived.resolve();
      return { kind: 'json', body: { booked: true }, hold: release.promise, answered: answered.resolve };
    };
    callThenSay([{ name: tool.name, arguments: '{"people":2}' }], 'Booked.');
    const started = await startConversation(context, owner, agent.id);
    const turn = await context.app
      .get(ConversationTalk)
      .accept(started.conversationId, `Bearer ${started.token}`, 'Book it', 'test', () => undefined);
    const interruption = new AbortController();
    const reply = context.app.get(ConversationReplies).reply(turn, () => undefined, { signal: interruption.signal });
    await arrived.promise;
    interruption.abort();
    release.resolve();
    expect(await answered.promise).toBe(true);
    expect(await reply).toBe('');
    // The model was not asked again; the tool's entry is in the transcript, and no reply.
    expect(llm.requests.filter((request) => request.body.stream)).toHaveLength(1);
    expect((await messagesOf(started)).messages.map(({ speaker, text }: { speaker: string; text: string }) => [speaker, text])).toEqual([
      ['user', 'Book it'],
      ['tool', `${tool.name} {"people":2} → {"booked":true}`],
    ]);
  });
});

describe('tools and the SSRF rules at each call', () => {
  it('refuses a call to a name that now resolves to a private address, sending nothing', async () => {
    const llm = await startFakeLlm();
    const context = await createTestContext({ llm: { baseUrl: llm.url, apiKey: 'sk-test-key', timeoutMs: PATIENT_MS, maxTokens: 321 } });
    try {
      const targets = context.app.get(WebhookTargets);
      const owner = await context.createAccount();
      targets.resolver = async () => [{ address: '8.8.8.8', family: 4 }];
      const tool = (
        await context
          .as(owner)
          .post('/tools')
          .send({ type: 'webhook', name: 'lookup', description: 'Looks up.', url: 'https://tools.example.test/lookup' })
          .expect(201)
      ).body;
      // The name moves to a private address after the tool was saved (DNS rebinding): checked again at the call.
      targets.resolver = async () => [{ address: '127.0.0.1', family: 4 }];
      const agent = (
        await context
          .as(owner)
          .post('/agents')
          .send({ toolIds: [tool.id] })
          .expect(201)
      ).body;
      llm.behave((request): Behaviour =>
        afterTools(request)
          ? { kind: 'stream', pieces: ['It did not work.'] }
          : { kind: 'tool-calls', calls: [{ name: 'lookup', arguments: '{}' }] },
      );
      const started = await startConversation(context, owner, agent.id);
      await context.http
        .post(`/conversations/${started.conversationId}/messages`)
        .set(bearer(started.token))
        .send({ text: 'Look it up' })
        .expect(200);
      expect(JSON.parse(Object.values(toolResults(llm.requests[1]))[0])).toEqual({ error: "The tool's address is not allowed" });
    } finally {
      await context.close();
      await llm.close();
    }
  });
});

describe('tools without a provider', () => {
  it('are never called by the built-in answerer', async () => {
    const server = await startToolServer();
    const context = await createTestContext(privateTargets());
    try {
      const owner = await context.createAccount();
      const tool = (
        await context
          .as(owner)
          .post('/tools')
          .send({ type: 'webhook', name: 'lookup', description: 'Looks up.', url: server.url() })
          .expect(201)
      ).body;
      const agent = (
        await context
          .as(owner)
          .post('/agents')
          .send({ toolIds: [tool.id] })
          .expect(201)
      ).body;
      const started = await startConversation(context, owner, agent.id);
      const reply = await context.http
        .post(`/conversations/${started.conversationId}/messages`)
        .set(bearer(started.token))
        .send({ text: 'Look it up' })
        .expect(200);
      expect(reply.body.text.length).toBeGreaterThan(0);
      const { messages } = (await context.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token)).expect(200)).body;
      expect(messages.map((message: { speaker: string }) => message.speaker)).toEqual(['user', 'agent']);
      expect(server.requests).toHaveLength(0);
    } finally {
      await context.close();
      await server.close();
    }
  });
});

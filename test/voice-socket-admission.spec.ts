import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { ConfigError, loadConfig } from '../src/config/config';
import { generateOpenApiDocument } from '../src/openapi';
import { generateConversationToken } from '../src/conversations/conversation-token';
import { VOICE_SESSION_TIMINGS } from '../src/voice/voice.gateway';
import { VoiceSessionTimings } from '../src/voice/voice-session';
import { bearer, startConversation, Started } from './conversation-helpers';
import { createListeningTestContext, eventually, TestContext, watchQueries } from './helpers';
import { recordCalls, refusedHandshake } from './support/recorded-calls';
import { VoiceClient } from './support/voice-client';

const PAGE = 'https://shop.example.com';
const DASHBOARD = 'https://dashboard.example.net';
const ELSEWHERE = 'https://evil.example.org';

const TOO_MANY = { statusCode: 429, error: 'Too Many Requests', message: expect.stringMatching(/^Too many requests; retry in \d+ s$/) };

/** A listening context with its account, an agent, RecordedCalls in the pipeline's place, and the helpers the tests share. */
async function voiceContext(overrides: Parameters<typeof createListeningTestContext>[0]) {
  // No job workers: nothing of this instance queries the database unless a request or a socket makes it.
  const { context, baseUrl } = await createListeningTestContext({ jobWorkers: false, ...overrides });
  const calls = recordCalls(context);
  const owner = await context.createAccount();
  const agentId = (await context.as(owner).post('/agents').send({ name: 'Asha', language: 'en-IN' }).expect(201)).body.id as number;
  const voiceUrl = (id: string) => `${baseUrl.replace('http', 'ws')}/conversations/${id}/voice`;
  /** A socket that has sent `start` and got `ready`. */
  const connected = async (started: Started, origin?: string) => {
    const client = await VoiceClient.connect(baseUrl, started.conversationId, origin);
    await client.start(started.token);
    return client;
  };
  /** The close code of a socket to `id` whose first frame is `first` (a `start`, by default with a token nobody has). */
  const closeCode = async (id: string, first: object = { type: 'start', token: generateConversationToken() }, origin?: string) => {
    const client = await VoiceClient.connect(baseUrl, id, origin);
    client.send(first);
    return (await client.closed).code;
  };
  return { context, baseUrl, calls, owner, agentId, voiceUrl, connected, closeCode };
}

/** The statements the application sends through its pool that name `value` among their parameters. */
function watchQueriesNaming(context: TestContext, value: string): { texts: () => string[]; restore: () => void } {
  const pool = (context.app.get(DataSource).driver as PostgresDriver).master as Pool;
  const spy = jest.spyOn(pool, 'query');
  const naming = (args: unknown[]) => {
    const [query, values] = args as [string | { text: string; values?: unknown[] }, unknown[] | undefined];
    const parameters = typeof query === 'string' ? values : query.values;
    return parameters?.includes(value) ? [typeof query === 'string' ? query : query.text] : [];
  };
  return { texts: () => spy.mock.calls.flatMap(naming), restore: () => spy.mockRestore() };
}

describe('the voice socket: guesses count against the address, as on the widget routes (UNAUTHENTICATED_RATE_LIMIT)', () => {
  const LIMIT = 3;
  let setup: Awaited<ReturnType<typeof voiceContext>>;
  let timings: VoiceSessionTimings;

  beforeEach(async () => {
    // The widget rate limit (per conversation and address) out of reach: only the count of guesses can refuse.
    setup = await voiceContext({ widgetRateLimit: 100_000, unauthenticatedRateLimit: LIMIT, rateLimitWindowSeconds: 60 });
    timings = setup.context.app.get(VOICE_SESSION_TIMINGS);
  });
  afterEach(() => setup.context.close());

  /** Each way a socket proves no token, counted; the fourth is over the limit of 3. */
  const guessFourTimes = async (started: Started) => {
    const { closeCode } = setup;
    expect(await closeCode(randomUUID(), { type: 'start', token: started.token })).toBe(4404); // no such conversation
    expect(await closeCode(started.conversationId)).toBe(4404); // a wrong token
    expect(await closeCode(started.conversationId, { type: 'start', token: 42 })).toBe(1008); // a malformed one
    const { startTimeoutMs } = timings;
    timings.startTimeoutMs = 100;
    try {
      const silent = await VoiceClient.connect(setup.baseUrl, started.conversationId);
      expect((await silent.closed).code).toBe(4408); // none
    } finally {
      timings.startTimeoutMs = startTimeoutMs;
    }
  };

  it('refuses the handshake past the limit with 429 and Retry-After, whatever the conversation, before any query; the HTTP routes too', async () => {
    const { context, owner, agentId, voiceUrl } = setup;
    const started = await startConversation(context, owner, agentId);
    await guessFourTimes(started);
    const queries = watchQueries(context.app);
    try {
      for (const id of [randomUUID(), started.conversationId]) {
        const refused = await refusedHandshake(voiceUrl(id));
        expect(refused).toMatchObject({ status: 429, body: TOO_MANY, headers: { 'ratelimit-policy': `${LIMIT};w=60` } });
        expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      expect(queries.texts()).toEqual([]);
    } finally {
      queries.restore();
    }
    // One budget with the conversation's HTTP routes.
    await context.http.get(`/conversations/${randomUUID()}`).set(bearer('vac_guess')).expect(429);
  });

  it("is refused for the HTTP routes' guesses too (one budget)", async () => {
    const { context, voiceUrl } = setup;
    for (let guess = 0; guess <= LIMIT; guess++) {
      await context.http.get(`/conversations/${randomUUID()}`).set(bearer('vac_guess')).expect(404);
    }
    expect((await refusedHandshake(voiceUrl(randomUUID()))).status).toBe(429);
  });

  it('closes with 4429 the start of a socket upgraded before its address was blocked, before any query', async () => {
    const { context, baseUrl, owner, agentId } = setup;
    const started = await startConversation(context, owner, agentId);
    const early = await VoiceClient.connect(baseUrl, started.conversationId);
    await guessFourTimes(started);
    const queries = watchQueries(context.app);
    try {
      early.send({ type: 'start', token: started.token });
      expect(await early.closed).toEqual({ code: 4429, reason: expect.stringMatching(/^Too many requests; retry in \d+ s$/) });
      expect(queries.texts()).toEqual([]);
    } finally {
      queries.restore();
    }
  });

  it('never counts a socket that proved its token, however it ends (ready, 4403, 4409, 4410)', async () => {
    const { context, owner, agentId, connected, closeCode, calls } = setup;
    const started = await startConversation(context, owner, agentId);
    for (let call = 0; call <= LIMIT; call++) {
      const client = await connected(started);
      client.close();
      await calls.get(started.conversationId)!.whenClosed(); // its lease is closing: the next socket waits for it
    }
    const live = await connected(started);
    expect(await closeCode(started.conversationId, { type: 'start', token: started.token })).toBe(4409);
    live.close();
    for (let other = 0; other <= LIMIT; other++) {
      expect(await closeCode(started.conversationId, { type: 'start', token: started.token }, ELSEWHERE)).toBe(4403);
    }
    await context.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);
    expect(await closeCode(started.conversationId, { type: 'start', token: started.token })).toBe(4410);
    // Still under the limit: one guess more is answered 4404, not refused.
    expect(await closeCode(randomUUID())).toBe(4404);
  });
});

describe('the voice socket does not tell whether a conversation exists', () => {
  let setup: Awaited<ReturnType<typeof voiceContext>>;
  beforeAll(async () => (setup = await voiceContext({ widgetRateLimit: 100_000, corsOrigins: [DASHBOARD] })));
  afterAll(() => setup.context.close());

  it('answers a widget conversation, an API conversation and a made-up id alike from any Origin: 101, then 4404 through the same query', async () => {
    const { context, owner, agentId, baseUrl } = setup;
    const site = (
      await context.as(owner).post('/widget/sites').send({ name: 'Shop', agentId, allowedDomain: 'shop.example.com' }).expect(201)
    ).body as { siteKey: string };
    const widget = (await context.http.post('/widget/sessions').set('Origin', PAGE).send({ siteKey: site.siteKey }).expect(201))
      .body as Started;
    const api = await startConversation(context, owner, agentId);
    const answers: { origin: string; id: string; code: number; handshakeQueries: string[]; startQueries: string[] }[] = [];
    for (const origin of [ELSEWHERE, PAGE, DASHBOARD, undefined]) {
      for (const id of [widget.conversationId, api.conversationId, randomUUID()]) {
        const queries = watchQueriesNaming(context, id);
        try {
          const client = await VoiceClient.connect(baseUrl, id, origin); // rejects unless upgraded (101)
          const handshakeQueries = queries.texts();
          client.send({ type: 'start', token: generateConversationToken() });
          const { code } = await client.closed;
          answers.push({ origin: origin ?? 'none', id, code, handshakeQueries, startQueries: queries.texts() });
        } finally {
          queries.restore();
        }
      }
    }
    const [first] = answers;
    expect(first.startQueries).toHaveLength(1); // the lookup by id and token
    for (const answer of answers) {
      expect({ ...answer, id: undefined, origin: undefined }).toEqual({
        ...first,
        id: undefined,
        origin: undefined,
        code: 4404,
        handshakeQueries: [],
      });
    }
  });
});

describe('the spoken calls an instance serves: at most VOICE_MAX_CALLS', () => {
  it('takes VOICE_MAX_CALLS from 0 to 10,000 (100 unset), and stops on anything else with a message naming it', () => {
    const maxCalls = (value?: string) => loadConfig(value === undefined ? {} : { VOICE_MAX_CALLS: value }).voice.maxCalls;
    expect([maxCalls(), maxCalls('0'), maxCalls('10000')]).toEqual([100, 0, 10_000]);
    for (const value of ['10001', '-1', '2.5', 'many']) {
      expect(() => maxCalls(value)).toThrow(ConfigError);
      expect(() => maxCalls(value)).toThrow('VOICE_MAX_CALLS');
    }
  });

  const MAX = 2;
  let setup: Awaited<ReturnType<typeof voiceContext>>;
  beforeAll(async () => (setup = await voiceContext({ voice: loadConfig({ ...process.env, VOICE_MAX_CALLS: String(MAX) }).voice })));
  afterAll(() => setup.context.close());

  const load = async () => ((await setup.context.http.get('/health').expect(200)).body as { voice: unknown }).voice;
  /** Once every call closed so far has given its place back. */
  const loadBecomes = (calls: number) =>
    eventually(async () => {
      const voice = await load();
      return JSON.stringify(voice) === JSON.stringify({ calls, maxCalls: MAX }) ? voice : undefined;
    });
  const conversation = () => startConversation(setup.context, setup.owner, setup.agentId);
  const closeAll = async (clients: VoiceClient[], started: Started[]) => {
    clients.forEach((client) => client.close());
    for (const { conversationId } of started) await setup.calls.get(conversationId)!.whenClosed();
    await loadBecomes(0);
  };

  it('serves MAX calls, refuses the next before the upgrade with 503 and Retry-After, and serves it once a call has ended', async () => {
    const { connected, voiceUrl, calls } = setup;
    expect(await load()).toEqual({ calls: 0, maxCalls: MAX });
    const started = [await conversation(), await conversation(), await conversation()];
    const first = await connected(started[0]);
    expect(await load()).toEqual({ calls: MAX - 1, maxCalls: MAX });
    const second = await connected(started[1]); // MAX - 1 served: one more is
    expect(await load()).toEqual({ calls: MAX, maxCalls: MAX });
    const refused = await refusedHandshake(voiceUrl(started[2].conversationId)); // MAX served: refused
    expect(refused).toMatchObject({
      status: 503,
      headers: { 'retry-after': '5' },
      body: { statusCode: 503, error: 'Service Unavailable', message: 'No room for another call on this instance; retry in 5 s' },
    });
    expect(calls.has(started[2].conversationId)).toBe(false);
    first.close();
    await calls.get(started[0].conversationId)!.whenClosed();
    await loadBecomes(MAX - 1);
    const third = await connected(started[2]);
    expect(await load()).toEqual({ calls: MAX, maxCalls: MAX });
    await closeAll([second, third], started.slice(1));
  });

  it('holds no place for a socket waiting for start, and closes with 1013 a start that finds every place taken', async () => {
    const { baseUrl, connected, calls } = setup;
    const started = [await conversation(), await conversation(), await conversation()];
    const first = await connected(started[0]);
    const waiting = [
      await VoiceClient.connect(baseUrl, started[1].conversationId),
      await VoiceClient.connect(baseUrl, started[2].conversationId),
    ];
    expect(await load()).toEqual({ calls: MAX - 1, maxCalls: MAX });
    await waiting[0].start(started[1].token);
    waiting[1].send({ type: 'start', token: started[2].token });
    expect(await waiting[1].closed).toEqual({ code: 1013, reason: 'No room for another call on this instance; try again later' });
    expect(calls.has(started[2].conversationId)).toBe(false);
    expect(await load()).toEqual({ calls: MAX, maxCalls: MAX });
    await closeAll([first, waiting[0]], started.slice(0, 2));
  });

  it('gives the place back when start is refused once it was taken (4409), and keeps /health/live as it was', async () => {
    const { connected, closeCode } = setup;
    const started = [await conversation(), await conversation()];
    const first = await connected(started[0]);
    expect(await closeCode(started[0].conversationId, { type: 'start', token: started[0].token })).toBe(4409);
    await loadBecomes(MAX - 1);
    const second = await connected(started[1]);
    await closeAll([first, second], started);
    expect((await setup.context.http.get('/health/live').expect(200)).body).toEqual({ status: 'ok' });
  });
});

describe("the voice socket's admission in the OpenAPI document", () => {
  it('documents the refusals before the upgrade (429, 503), none that would tell a conversation exists (403), and the close codes after start', async () => {
    const document = await generateOpenApiDocument(loadConfig({}));
    const socket = document.paths['/conversations/{conversationId}/voice'].get!;
    expect(Object.keys(socket.responses).sort()).toEqual(['101', '426', '429', '503']);
    const description = ` ${socket.description} `.replace(/\s+/g, ' ');
    expect(
      [' 4403 ', ' 4429 ', ' 1013 ', 'VOICE_MAX_CALLS', 'UNAUTHENTICATED_RATE_LIMIT'].filter((part) => !description.includes(part)),
    ).toEqual([]);
  });
});

import { DataSource } from 'typeorm';
import { APOLOGY } from '../src/conversations/answering/answerer';
import { callLatency } from '../src/calls/call-latency';
import type { TranscriptTurn, TurnLatency } from '../src/calls/call.entity';
import { loadConfig } from '../src/config/config';
import { FRAME_MS } from '../src/voice/voice-format';
import { bearer, startConversation } from './conversation-helpers';
import { FakeLlm, startFakeLlm } from './fake-llm';
import { FakeSpeechProviders, standInVoice, startFakeSpeechProviders } from './fake-speech-providers';
import { createListeningTestContext, TestAccount, TestContext } from './helpers';
import { fixture } from './support/voice-audio';
import { silence, VoiceClient, widgetVoiceCall } from './support/voice-client';

/**
 * Latency, per turn and per call (contract section 19), end to end: a spoken call whose stand-in providers take known
 * times (speech-to-text 120 ms, the model's first token 80 ms, the voice's first audio 60 ms) is timed as the
 * pipeline measures it. Each figure is at least its provider's time (the measure cannot be shorter than what it
 * measures) and within SLACK_MS of the time the stand-in actually took (its timer fires late on a busy machine): a
 * loopback request and the service's own scheduling, never a tight bound.
 */
const TRANSCRIPTION_MS = 120;
const FIRST_TOKEN_MS = 80;
const FIRST_AUDIO_MS = 60;
const SLACK_MS = 150;

const QUESTION = 'Do you deliver on Sundays?';
const ANSWER = ['Yes, we deliver ', 'every day. ', 'Anything else?'];

describe('latency of a spoken call (contract section 19)', () => {
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;
  let agentId: number;
  let providers: FakeSpeechProviders;
  let llm: FakeLlm;
  const endOfTurnMs = loadConfig({}).voice.endOfTurnMs;

  beforeAll(async () => {
    providers = await startFakeSpeechProviders();
    llm = await startFakeLlm();
    const voice = standInVoice(providers);
    const llmConfig = { baseUrl: llm.url, apiKey: 'sk-test-key', timeoutMs: 30_000, maxTokens: 256 };
    ({ context, baseUrl } = await createListeningTestContext({ widgetRateLimit: 10_000, voice, llm: llmConfig }));
    owner = await context.createAccount();
    await context
      .as(owner)
      .post('/webhooks')
      .send({ url: 'https://latency.invalid/hooks', events: ['call.created'] })
      .expect(201);
    agentId = (await context.as(owner).post('/agents').send({ name: 'Asha', language: 'en-IN' }).expect(201)).body.id;
  });
  afterAll(async () => {
    await context?.close();
    await providers?.close();
    await llm?.close();
  });
  beforeEach(() => {
    providers.setMode({ kind: 'ok' });
    providers.setTranscript(QUESTION);
    providers.setDelays({ transcriptionMs: TRANSCRIPTION_MS, speechMs: FIRST_AUDIO_MS });
    providers.delaysTaken.transcription.length = 0;
    providers.delaysTaken.speech.length = 0;
    llm.firstDelaysTaken.length = 0;
    // The reply streamed after the model's first-token time; the post-call analysis (not streamed) answered at once.
    llm.behave((request) =>
      request.body.stream
        ? { kind: 'stream', pieces: ANSWER, firstDelayMs: FIRST_TOKEN_MS }
        : { kind: 'completion', content: '{"sentiment":"neutral","status":"new","summary":"Asked about delivery."}' },
    );
  });

  /** The visitor asks into the microphone at real time, which stays open until the agent's reply has been heard. */
  async function askAloud(client: VoiceClient): Promise<void> {
    const from = client.messages.length;
    const done = () => client.messages.slice(from).find((message) => message.type === 'reply.done');
    await client.stream(fixture('en-question'));
    await client.stream(silence(30), 16_000, () => done() !== undefined);
    await client.until(done);
  }

  /** The visitor types (a text frame) and waits for the reply to be heard. */
  async function type(client: VoiceClient, text: string): Promise<void> {
    const from = client.messages.length;
    client.send({ type: 'text', text });
    await client.next('reply.done', from);
  }

  /** Ends the conversation from the socket: its call is recorded before `ended` is sent. */
  async function hangUp(client: VoiceClient, conversationId: string) {
    client.send({ type: 'end' });
    await client.next('ended');
    return (await context.as(owner).get(`/calls/${conversationId}`).expect(200)).body;
  }

  /** The body of the call's call.created event (in the outbox, or relayed). */
  async function createdEvent(callId: string) {
    const [row] = await context.app.get(DataSource).query<{ body: string }[]>(
      `SELECT body FROM webhook_outbox WHERE account_id = $1 AND call_id = $2 AND type = 'call.created'
         UNION ALL SELECT body FROM webhook_events WHERE account_id = $1 AND call_id = $2 AND type = 'call.created'`,
      [owner.id, callId],
    );
    return JSON.parse(row.body) as { data: { latency: unknown; transcript: unknown } };
  }

  /**
   * The longest a stand-in's delay actually took in this test (its timer fires late on a busy machine, and the figure
   * measured includes that): at least the delay asked for.
   */
  const took = (asked: number, taken: number[]) => Math.max(asked, ...taken);

  /**
   * Each provider's figure is at least its time, and within SLACK_MS of the time it actually took; the total at least
   * all of them, and (unless the turn `waited` for an earlier one to be answered) not far from their sum.
   */
  function expectTimed(latency: TurnLatency, expected: { endOfTurn: number; transcription: number; waited?: boolean }): void {
    expect(latency.endOfTurn).toBe(expected.endOfTurn);
    if (expected.transcription === 0) expect(latency.transcription).toBe(0);
    else expect(latency.transcription).toBeGreaterThanOrEqual(TRANSCRIPTION_MS);
    const transcriptionTook =
      expected.transcription === TRANSCRIPTION_MS ? took(TRANSCRIPTION_MS, providers.delaysTaken.transcription) : expected.transcription;
    expect(latency.transcription).toBeLessThanOrEqual(transcriptionTook + SLACK_MS);
    expect(latency.firstToken).toBeGreaterThanOrEqual(FIRST_TOKEN_MS);
    expect(latency.firstToken).toBeLessThanOrEqual(took(FIRST_TOKEN_MS, llm.firstDelaysTaken) + SLACK_MS);
    expect(latency.firstAudio).toBeGreaterThanOrEqual(FIRST_AUDIO_MS);
    expect(latency.firstAudio).toBeLessThanOrEqual(took(FIRST_AUDIO_MS, providers.delaysTaken.speech) + SLACK_MS);
    // Stage after stage: the total holds the silence waited and each provider's time, and is not far from their sum.
    const sum = latency.endOfTurn + latency.transcription + latency.firstToken + latency.firstAudio;
    expect(latency.total).toBeGreaterThanOrEqual(sum - 0.2); // each figure rounded to a tenth
    if (!expected.waited) expect(latency.total).toBeLessThanOrEqual(sum + SLACK_MS);
    for (const figure of Object.values(latency)) expect(Math.round(figure * 10)).toBe(figure * 10);
  }

  it('times each turn of a spoken call, spoken or typed, and sums them up on the call and in its call.created', async () => {
    const { client, session, ready } = await widgetVoiceCall(context, owner, agentId, baseUrl, 'Hello!');
    expect(ready.input).toBe('speech');
    await client.next('reply.done'); // the greeting, heard whole

    await askAloud(client);
    await type(client, 'And on holidays?');
    const call = await hangUp(client, session.conversationId);

    const reply = ANSWER.join('');
    expect(call.transcript).toEqual([
      { speaker: 'agent', text: 'Hello!', startSeconds: expect.any(Number) }, // the greeting answers no turn
      { speaker: 'user', text: QUESTION, startSeconds: expect.any(Number) },
      { speaker: 'agent', text: reply, startSeconds: expect.any(Number), latencyMs: expect.any(Object) },
      { speaker: 'user', text: 'And on holidays?', startSeconds: expect.any(Number) },
      { speaker: 'agent', text: reply, startSeconds: expect.any(Number), latencyMs: expect.any(Object) },
    ]);
    const [spoken, typed] = [call.transcript[2].latencyMs, call.transcript[4].latencyMs] as TurnLatency[];
    // The silence waited is VOICE_END_OF_TURN_MS, to a frame (the turn detector counts whole frames), in audio time.
    expectTimed(spoken, { endOfTurn: Math.round(endOfTurnMs / FRAME_MS) * FRAME_MS, transcription: TRANSCRIPTION_MS });
    // A typed message waits for no silence and is not transcribed.
    expectTimed(typed, { endOfTurn: 0, transcription: 0 });

    const totals = [spoken.total, typed.total].sort((a, b) => a - b);
    expect(call.latency).toEqual({ turns: 2, p50Ms: totals[0], p90Ms: totals[1], maxMs: totals[1] });
    // The webhook carries the detail: the same figures.
    const event = await createdEvent(session.conversationId);
    expect(event.data.latency).toEqual(call.latency);
    expect(event.data.transcript).toEqual(call.transcript);
    // The conversation's own view shows messages, not figures.
    const view = (await context.http.get(`/conversations/${session.conversationId}`).set(bearer(session.token)).expect(200)).body;
    expect(view.messages.map((message: object) => Object.keys(message))).toEqual(view.messages.map(() => ['speaker', 'text', 'at']));
  });

  it('times a turn heard while the previous one is answered by its own figures (its transcription, not its wait)', async () => {
    const started = await startConversation(context, owner, agentId);
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    await client.start(started.token);
    // The visitor asks, and asks again before the first question is transcribed: the first transcription answers once
    // the second was asked for (the fence), so the second turn waits while the first is answered aloud.
    const transcriptions = () => providers.requests.filter((request) => request.path === '/v1/audio/transcriptions').length;
    const before = transcriptions();
    const secondAsked = new Promise<void>((resolve) => {
      const check = () => {
        if (transcriptions() < before + 2) return;
        providers.events.off('request', check);
        resolve();
      };
      providers.events.on('request', check);
    });
    providers.setDelays({ transcriptionMs: TRANSCRIPTION_MS, speechMs: FIRST_AUDIO_MS, transcriptionAfter: secondAsked });
    // The first utterance is the whole question (over 2 s), the second 0.6 s of it (about 1 s with its pre-roll and tail).
    providers.setTranscript((wav) => (wav.samples.length > 1.5 * 16_000 ? QUESTION : 'And on holidays?'));
    const question = fixture('en-question');
    await client.stream(question);
    await client.stream(silence(1)); // the first utterance ends after VOICE_END_OF_TURN_MS of it
    await client.stream(question.subarray(0.3 * 16_000, 0.9 * 16_000));
    const answered = () => client.messages.filter((message) => message.type === 'reply.done').length === 2;
    await client.stream(silence(30), 16_000, answered);
    await client.until(answered);
    const call = await hangUp(client, started.conversationId);

    const reply = ANSWER.join('');
    expect(call.transcript).toEqual([
      { speaker: 'user', text: QUESTION, startSeconds: expect.any(Number) },
      { speaker: 'agent', text: reply, startSeconds: expect.any(Number), latencyMs: expect.any(Object) },
      { speaker: 'user', text: 'And on holidays?', startSeconds: expect.any(Number) },
      { speaker: 'agent', text: reply, startSeconds: expect.any(Number), latencyMs: expect.any(Object) },
    ]);
    const [first, second] = [call.transcript[1].latencyMs, call.transcript[3].latencyMs] as TurnLatency[];
    const endOfTurn = Math.round(endOfTurnMs / FRAME_MS) * FRAME_MS;
    // The first was transcribed once the second utterance had been said (over a second later): that is its figure.
    expect(first.transcription).toBeGreaterThan(1_000);
    expectTimed(first, { endOfTurn, transcription: first.transcription });
    // The second's transcription answered while the first reply played (seconds of it): its figure is its own.
    expectTimed(second, { endOfTurn, transcription: TRANSCRIPTION_MS, waited: true });
    // Its total, from the visitor's last sound, holds that wait: the first reply's audio (half of all the audio sent).
    expect(second.total).toBeGreaterThan(endOfTurn + (client.audioSeconds() / 2) * 1_000);
  });

  it('gives a spoken call whose replies were never timed (the apology of a failed model) turns 0 and no figures', async () => {
    llm.behave({ kind: 'status', status: 500, message: 'PROVIDER-SECRET-TEXT' });
    const started = await startConversation(context, owner, agentId);
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    await client.start(started.token);
    await type(client, 'Hello?');
    const call = await hangUp(client, started.conversationId);
    expect(call.transcript).toEqual([
      { speaker: 'user', text: 'Hello?', startSeconds: expect.any(Number) },
      { speaker: 'agent', text: APOLOGY, startSeconds: expect.any(Number) }, // no first token: not timed
    ]);
    expect(call.latency).toEqual({ turns: 0, p50Ms: null, p90Ms: null, maxMs: null });
  });

  it("gives a text conversation's call `latency: null` and no latencyMs, in its detail and its call.created", async () => {
    const started = await startConversation(context, owner, agentId, { test: false }); // a test call has no call.created
    await context.http
      .post(`/conversations/${started.conversationId}/messages`)
      .set(bearer(started.token))
      .send({ text: QUESTION })
      .expect(200);
    await context.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);
    const call = (await context.as(owner).get(`/calls/${started.conversationId}`).expect(200)).body;
    expect(call.transcript).toEqual([
      { speaker: 'user', text: QUESTION },
      { speaker: 'agent', text: ANSWER.join('') },
    ]);
    expect(call.latency).toBeNull();
    expect((await createdEvent(started.conversationId)).data.latency).toBeNull();
  });

  it('gives a call posted through the API `latency: null`', async () => {
    const posted = (
      await context
        .as(owner)
        .post('/calls')
        .send({ name: 'Posted', transcript: [{ speaker: 'agent', text: 'Hello' }] })
        .expect(201)
    ).body;
    expect(posted.latency).toBeNull();
    expect((await context.as(owner).get(`/calls/${posted.id}`).expect(200)).body.latency).toBeNull();
  });
});

describe('callLatency: a call summed up from its timed turns', () => {
  const timed = (total: number): TranscriptTurn => ({
    speaker: 'agent',
    text: 'Yes.',
    latencyMs: { endOfTurn: 700, transcription: 100, firstToken: 100, firstAudio: 100, total },
  });

  it('takes the median and the 90th percentile by nearest rank, and the slowest, of the agent entries with a latencyMs', () => {
    // Out of order, with entries that have no figures (the visitor's, the greeting) in between.
    const totals = [1_500, 1_100, 1_900, 1_000, 1_300, 1_700, 1_200, 1_800, 1_400, 2_500.5];
    const transcript = [
      { speaker: 'agent' as const, text: 'Hello!' },
      ...totals.flatMap((total) => [{ speaker: 'user' as const, text: 'Hm?' }, timed(total)]),
    ];
    expect(callLatency(transcript)).toEqual({ turns: 10, p50Ms: 1_400, p90Ms: 1_900, maxMs: 2_500.5 });
    expect(callLatency([timed(900)])).toEqual({ turns: 1, p50Ms: 900, p90Ms: 900, maxMs: 900 });
    expect(callLatency([timed(900), timed(1_000)])).toEqual({ turns: 2, p50Ms: 900, p90Ms: 1_000, maxMs: 1_000 });
  });

  it('gives turns 0 and null figures for a transcript without a timed turn', () => {
    expect(callLatency([{ speaker: 'user', text: 'Hi' }])).toEqual({ turns: 0, p50Ms: null, p90Ms: null, maxMs: null });
  });
});

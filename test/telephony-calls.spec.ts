import { Webhook as StandardWebhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/config';
import { ConversationEnds } from '../src/conversations/conversation-ends.service';
import { MEDIA_STREAM_TIMINGS } from '../src/telephony/twilio-stream.gateway';
import type { MediaStreamTimings } from '../src/telephony/twilio-media-stream';
import { Behaviour, ChatRequest, FakeLlm, startFakeLlm } from './fake-llm';
import { FakeSpeechProviders, standInVoice, startFakeSpeechProviders, synthesised } from './fake-speech-providers';
import { openingHoursTool, startToolServer, ToolServer } from './fake-tool-server';
import { binaryBody, eventually, TestAccount, TestContext } from './helpers';
import { FakeCall, FakeTwilio } from './support/fake-twilio';
import type { MediaStreamCall } from './support/fake-twilio-media';
import { ConnectedNumber, connectNumber, createAgent, telephonyContext } from './support/telephony';
import { decodeMp3, fixture, levelDbfs } from './support/voice-audio';

/**
 * Phone calls end to end (contract section 17): the stand-in carrier dials the number (or is asked to place a call),
 * runs the TwiML the service answered with, and connects its media stream; the caller speaks μ-law at real time and
 * the stand-in plays the agent's voice at real time, echoing marks. Stand-in speech providers and model answer. What
 * is checked is what a customer sees: the call record (transcript, duration, how it ended, the stereo recording) and
 * what the carrier was asked.
 */
const CALLER = '+919876543210';
const GREETING = 'Namaste, how can I help?';
const QUESTION = 'Do you deliver on Sundays?';
const ANSWER = 'Yes, we deliver every day.';
const GOODBYE = 'Thank you for calling, goodbye!';
const SALES = '+919800000099';
const MOVING = 'I am putting you through to sales now.';
const WHILE_RUNNING = 'One moment, let me check.';
const HOURS = 'We open at nine on Sundays.';
/** Closing a service with spoken calls waits for their recordings: seconds, more on a busy machine. */
const CLOSE_TIMEOUT_MS = 90_000;

jest.setTimeout(120_000);

const afterTools = (request: ChatRequest) => request.body.messages.at(-1)?.role === 'tool';

describe('a phone call end to end', () => {
  let twilio: FakeTwilio;
  let providers: FakeSpeechProviders;
  let llm: FakeLlm;
  let context: TestContext;
  let owner: TestAccount;
  let connected: ConnectedNumber;
  let hangingUp: ConnectedNumber;
  let transferring: ConnectedNumber;
  let helping: ConnectedNumber;
  let toolSecret: string;
  let tools: ToolServer;
  let timings: MediaStreamTimings;

  beforeAll(async () => {
    twilio = await FakeTwilio.start();
    providers = await startFakeSpeechProviders();
    llm = await startFakeLlm();
    tools = await startToolServer();
    const voice = standInVoice(providers);
    const llmConfig = { baseUrl: llm.url, apiKey: 'sk-test-key', timeoutMs: 30_000, maxTokens: 256 };
    // Tools may reach the stand-in tool endpoint on loopback.
    const webhooks = { ...loadConfig(process.env).webhooks, allowPrivateTargets: true };
    ({ context } = await telephonyContext(twilio, { voice, llm: llmConfig, webhooks }));
    timings = context.app.get(MEDIA_STREAM_TIMINGS);
    Object.assign(timings, { keypadGapMs: 1_000 });
    owner = await context.createAccount();
    await context
      .as(owner)
      .post('/webhooks')
      .send({ url: 'https://phone-calls.invalid/hooks', events: ['call.created'] })
      .expect(201);
    const agentId = await createAgent(context, owner, { name: 'Reception', language: 'en-IN' });
    connected = await connectNumber(context, owner, twilio, { agentId, greeting: GREETING });
    const endCall = (await context.as(owner).post('/tools').send({ type: 'end_call' }).expect(201)).body as { id: number; name: string };
    const closer = await createAgent(context, owner, { name: 'Closer', language: 'en-IN', toolIds: [endCall.id] });
    hangingUp = await connectNumber(context, owner, twilio, { agentId: closer, greeting: GREETING });
    const transfer = (
      await context
        .as(owner)
        .post('/tools')
        .send({ type: 'transfer_call', name: 'to_sales', description: 'To a person in sales', number: SALES })
        .expect(201)
    ).body as { id: number };
    const mover = await createAgent(context, owner, { name: 'Mover', language: 'en-IN', toolIds: [transfer.id] });
    transferring = await connectNumber(context, owner, twilio, { agentId: mover, greeting: GREETING });
    const hours = (await context.as(owner).post('/tools').send(openingHoursTool(tools, WHILE_RUNNING)).expect(201)).body as {
      id: number;
      secret: string;
    };
    toolSecret = hours.secret;
    const helper = await createAgent(context, owner, { name: 'Helper', language: 'en-IN', toolIds: [hours.id] });
    helping = await connectNumber(context, owner, twilio, { agentId: helper, greeting: GREETING });
  });
  afterAll(async () => {
    await context?.close();
    await twilio?.close();
    await providers?.close();
    await llm?.close();
    await tools?.close();
  }, CLOSE_TIMEOUT_MS);
  beforeEach(() => {
    providers.setMode({ kind: 'ok' });
    providers.setTranscript(QUESTION);
    answerWith(() => ({ kind: 'stream', pieces: [ANSWER] }));
    Object.assign(timings, { maxCallSeconds: 1_800 });
  });

  /** The model's streamed answers (`reply`); the post-call analysis is answered at once. */
  function answerWith(reply: (request: ChatRequest) => Behaviour): void {
    llm.behave((request) =>
      request.body.stream ? reply(request) : { kind: 'completion', content: '{"sentiment":"neutral","status":"new","summary":"A call."}' },
    );
  }

  /** A caller dials the number; the stream the carrier connects once the service has answered with its TwiML. */
  async function dialIn(number = connected): Promise<{ call: FakeCall; stream: MediaStreamCall; conversationId: string }> {
    const { call, answer } = await twilio.dialIn(number.carrierNumber, CALLER);
    expect(answer.status).toBe(200);
    const stream = await twilio.connect(call);
    return { call, stream, conversationId: await conversationOf(call) };
  }

  async function conversationOf(call: FakeCall): Promise<string> {
    const [row] = await context.app
      .get(DataSource)
      .query<{ id: string }[]>(`SELECT conversation_id AS id FROM phone_calls WHERE call_sid = $1`, [call.sid]);
    return row.id;
  }

  /** The greeting has played to the caller (its last mark echoed once its audio played). */
  async function greeted(stream: MediaStreamCall): Promise<void> {
    await stream.message((message) => message.event === 'media');
    await eventually(async () => (stream.playedMs > 500 && stream.bufferedMs === 0 ? true : undefined), 30_000);
  }

  /** The caller asks the question; resolves once the agent's entry answering it is stored. */
  async function ask(stream: MediaStreamCall, conversationId: string, reply = ANSWER): Promise<void> {
    stream.say(fixture('en-question'), 16_000); // silence follows: the stand-in sends it when the caller says nothing
    await agentSaid(conversationId, reply);
  }

  async function agentSaid(conversationId: string, text: string): Promise<void> {
    await eventually(async () => {
      const rows = await context.app
        .get(DataSource)
        .query(`SELECT 1 FROM conversation_messages WHERE conversation_id = $1 AND speaker = 'agent' AND text = $2`, [
          conversationId,
          text,
        ]);
      return rows.length > 0 ? true : undefined;
    }, 60_000);
  }

  /** The call as the API serves it, once its recording is stored. */
  async function recordedCall(conversationId: string) {
    return eventually(async () => {
      const response = await context.as(owner).get(`/calls/${conversationId}`);
      return response.status === 200 && response.body.hasRecording ? response.body : undefined;
    }, 60_000);
  }

  /** The body of the call's call.created event (in the outbox, or relayed). */
  async function createdEvent(callId: string) {
    const [row] = await context.app.get(DataSource).query<{ body: string }[]>(
      `SELECT body FROM webhook_outbox WHERE account_id = $1 AND call_id = $2 AND type = 'call.created'
         UNION ALL SELECT body FROM webhook_events WHERE account_id = $1 AND call_id = $2 AND type = 'call.created'`,
      [owner.id, callId],
    );
    return row && (JSON.parse(row.body) as Record<string, unknown>);
  }

  /** The agent's entries of the conversation after the greeting, in order. */
  async function agentEntries(conversationId: string): Promise<string[]> {
    const rows = await context.app
      .get(DataSource)
      .query<{ text: string }[]>(`SELECT text FROM conversation_messages WHERE conversation_id = $1 AND speaker = 'agent' ORDER BY seq`, [
        conversationId,
      ]);
    return rows.slice(1).map((row) => row.text);
  }

  const completions = (call: FakeCall) =>
    twilio.requests.filter((request) => request.path.endsWith(`/Calls/${call.sid}.json`) && request.form.get('Status') === 'completed');

  it('answers a call: the greeting, the caller heard and answered aloud, the caller hangs up; a call with its stereo recording', async () => {
    const { call, stream, conversationId } = await dialIn();
    await greeted(stream);
    const greetingMs = stream.playedMs;
    await ask(stream, conversationId);
    await eventually(async () => (stream.bufferedMs === 0 && stream.playedMs > greetingMs + 500 ? true : undefined), 30_000);

    // What the model was asked: the caller's words, as speech-to-text heard them from the carrier's μ-law.
    const transcription = providers.requests.find((request) => request.path.endsWith('/audio/transcriptions'));
    expect(transcription).toBeDefined();
    // The agent's voice reached the caller: audible μ-law, 8 kHz.
    const heard = Float32Array.from(stream.receivedPcm(), (sample) => sample / 32_768);
    expect(levelDbfs(heard, 8_000, 0, heard.length / 8_000)).toBeGreaterThan(-40);

    await stream.hangUp();
    expect((await twilio.ended(call))?.status).toBe(204);
    const recorded = await recordedCall(conversationId);
    expect(recorded).toMatchObject({ channel: 'phone', phone: CALLER, callStatus: 'completed', endedReason: 'caller-hung-up' });
    expect(recorded.transcript).toEqual([
      { speaker: 'agent', text: GREETING, startSeconds: expect.any(Number) },
      { speaker: 'user', text: QUESTION, startSeconds: expect.any(Number) },
      { speaker: 'agent', text: ANSWER, startSeconds: expect.any(Number), latencyMs: expect.any(Object) },
    ]);
    expect(recorded.durationSeconds).toBeGreaterThanOrEqual(2);
    expect(completions(call)).toEqual([]); // the caller hung up: nothing to ask the carrier
    expect(await createdEvent(conversationId)).toMatchObject({
      type: 'call.created',
      data: { id: conversationId, channel: 'phone', phone: CALLER },
    });

    const download = await context.as(owner).get(`/calls/${conversationId}/recording/download`).buffer(true).parse(binaryBody);
    expect(download.status).toBe(200);
    const mp3 = await decodeMp3(download.body as Buffer);
    expect(mp3.channels).toHaveLength(2);
    expect(mp3.sampleRate).toBe(8_000); // the line's rate: all that the call carried
    const [caller, agent] = mp3.channels;
    const [, question, answer] = recorded.transcript.map((entry: { startSeconds: number }) => entry.startSeconds);
    // The caller's question in the left channel only; the agent's greeting and answer in the right.
    expect(levelDbfs(caller, mp3.sampleRate, question + 0.3, question + 1.5)).toBeGreaterThan(-40);
    expect(levelDbfs(agent, mp3.sampleRate, question + 0.3, question + 1.5)).toBeLessThan(-60);
    expect(levelDbfs(agent, mp3.sampleRate, 0.1, 1)).toBeGreaterThan(-40);
    expect(levelDbfs(agent, mp3.sampleRate, answer + 0.1, answer + 0.6)).toBeGreaterThan(-40);
  });

  it('stops at once when the caller speaks over the agent: clear, and the transcript keeps what the caller heard', async () => {
    const long = 'We deliver every day of the week, from nine in the morning. '.repeat(6).trim();
    answerWith(() => ({ kind: 'stream', pieces: [long] }));
    const { call, stream, conversationId } = await dialIn();
    await greeted(stream);
    const greetingMs = stream.playedMs;
    stream.say(fixture('en-question'), 16_000);
    await stream.played(greetingMs + 1_500); // the answer is being heard
    stream.say(fixture('en-long'), 16_000);
    await stream.cleared();
    const [heard] = await eventually(async () => {
      const entries = await agentEntries(conversationId);
      return entries.length > 0 ? entries : undefined;
    }, 60_000);
    expect(heard.length).toBeGreaterThan(0);
    expect(heard.length).toBeLessThan(long.length);
    expect(long.startsWith(heard)).toBe(true);
    await stream.hangUp();
    await twilio.ended(call);
  });

  it('takes keypad digits pressed together as one turn of the caller', async () => {
    answerWith(() => ({ kind: 'stream', pieces: ['You pressed one, two, three.'] }));
    const { call, stream, conversationId } = await dialIn();
    await greeted(stream);
    stream.press('123');
    await agentSaid(conversationId, 'You pressed one, two, three.');
    await stream.hangUp();
    await twilio.ended(call);
    const recorded = await recordedCall(conversationId);
    expect(recorded.transcript.map((entry: { speaker: string; text: string }) => [entry.speaker, entry.text])).toEqual([
      ['agent', GREETING],
      ['user', '(keypad) 1 2 3'],
      ['agent', 'You pressed one, two, three.'],
    ]);
  });

  it('hangs up when the agent ends the call: its last sentence plays, then the carrier is asked to complete the call', async () => {
    answerWith((request) =>
      afterTools(request) ? { kind: 'stream', pieces: [GOODBYE] } : { kind: 'tool-calls', calls: [{ name: 'end_call', arguments: '{}' }] },
    );
    const { call, stream, conversationId } = await dialIn(hangingUp);
    await greeted(stream);
    stream.say(fixture('en-question'), 16_000);
    const completed = await twilio.ended(call); // the stream stopped by the REST request, then the completed callback
    expect(completed?.status).toBe(204);
    expect(completions(call)).toHaveLength(1);
    // The goodbye was not cut: what the service sent had played when the carrier was asked to end the call.
    expect(stream.bufferedMs).toBeLessThanOrEqual(100);
    const recorded = await recordedCall(conversationId);
    expect(recorded.endedReason).toBe('agent-hung-up');
    expect(recorded.transcript.at(-1)).toMatchObject({ speaker: 'agent', text: GOODBYE });
  });

  it('transfers the call when the agent calls transfer_call: its sentence plays, then the carrier is given <Dial> for the number', async () => {
    answerWith((request) =>
      afterTools(request) ? { kind: 'stream', pieces: [MOVING] } : { kind: 'tool-calls', calls: [{ name: 'to_sales', arguments: '{}' }] },
    );
    const { call, stream, conversationId } = await dialIn(transferring);
    await greeted(stream);
    stream.say(fixture('en-question'), 16_000);
    await stream.closed; // the carrier left the stream for the new TwiML
    const redirects = twilio.requests.filter((request) => request.path.endsWith(`/Calls/${call.sid}.json`) && request.form.has('Twiml'));
    expect(redirects).toHaveLength(1);
    expect(redirects[0].form.get('Twiml')).toBe(
      `<?xml version="1.0" encoding="UTF-8"?><Response><Dial><Number>${SALES}</Number></Dial></Response>`,
    );
    expect(stream.bufferedMs).toBeLessThanOrEqual(100); // the sentence announcing it had played
    expect(completions(call)).toEqual([]); // moved, not hung up
    const recorded = await recordedCall(conversationId);
    expect(recorded.endedReason).toBe('transferred');
    expect(recorded.transcript.slice(-2)).toEqual([
      { speaker: 'tool', text: expect.stringContaining(SALES) },
      expect.objectContaining({ speaker: 'agent', text: MOVING }),
    ]);
  });

  it('calls a webhook tool, signed, saying its speakWhileRunning while it runs, then speaks the reply made with its answer', async () => {
    answerWith((request) =>
      afterTools(request)
        ? { kind: 'stream', pieces: [HOURS] }
        : { kind: 'tool-calls', calls: [{ name: 'opening_hours', arguments: '{"day":"sunday"}' }] },
    );
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    tools.answer = () => ({ kind: 'json', body: { opens: '09:00' }, hold: held });
    const said = synthesised(providers, WHILE_RUNNING);
    const { call, stream, conversationId } = await dialIn(helping);
    await greeted(stream);
    const greetingMs = stream.playedMs;
    stream.say(fixture('en-question'), 16_000);
    // Said, and played to the caller, while the tool's answer is held.
    await said;
    await stream.played(greetingMs + 300);
    expect(tools.requests).toHaveLength(1);
    release();
    await agentSaid(conversationId, HOURS);

    const [request] = tools.requests;
    const body = new StandardWebhook(toolSecret).verify(request.body, request.headers as Record<string, string>);
    expect(body).toMatchObject({
      tool: 'opening_hours',
      arguments: { day: 'sunday' },
      conversation: { id: conversationId, channel: 'phone', phone: CALLER },
    });
    await stream.hangUp();
    await twilio.ended(call);
    const recorded = await recordedCall(conversationId);
    expect(recorded.transcript.slice(-2)).toEqual([
      { speaker: 'tool', text: 'opening_hours {"day":"sunday"} → {"opens":"09:00"}' },
      expect.objectContaining({ speaker: 'agent', text: HOURS }),
    ]);
  });

  it('ends a call that runs past PHONE_MAX_CALL_SECONDS (max-duration), through the carrier', async () => {
    Object.assign(timings, { maxCallSeconds: 10 });
    const { call, stream, conversationId } = await dialIn();
    await greeted(stream);
    stream.press('1'); // the caller says something: a call without a word from the caller is not kept (section 10)
    await agentSaid(conversationId, ANSWER);
    await twilio.ended(call);
    expect(completions(call)).toHaveLength(1);
    const [row] = await context.app
      .get(DataSource)
      .query<{ status: string }[]>(`SELECT status FROM conversations WHERE id = $1`, [conversationId]);
    expect(row.status).toBe('ended');
    const recorded = await recordedCall(conversationId);
    expect(recorded.endedReason).toBe('max-duration');
  });

  it("places a call: answered, the stream joins it, the request's greeting plays; an end the stream did not make (the idle sweep) hangs it up", async () => {
    const placed = await context
      .as(owner)
      .post(`/phone-numbers/${connected.phone.id}/calls`)
      .send({ to: '+919800000001', greeting: 'Hello, this is Acme.' });
    expect(placed.status).toBe(201);
    const call = twilio.lastCallTo('+919800000001')!;
    const stream = await twilio.connect(call); // initiated, ringing, in-progress, then the stream
    await greeted(stream);
    stream.press('1');
    await agentSaid(placed.body.conversationId, ANSWER);
    // Ended by something other than the stream (the idle sweep, which may run on any instance): the holder hangs up.
    await context.app.get(ConversationEnds).endNow(owner.id, placed.body.conversationId, 'idle-timeout');
    await twilio.ended(call);
    expect(completions(call)).toHaveLength(1);
    const recorded = await recordedCall(placed.body.callId);
    expect(recorded).toMatchObject({ callType: 'outbound', endedReason: 'idle-timeout' });
  });
});

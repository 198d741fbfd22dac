import { mulaw } from 'alawmulaw';
import { DataSource } from 'typeorm';
import { Resampler } from '../src/voice/audio/resample';
import { MEDIA_STREAM_TIMINGS } from '../src/telephony/twilio-stream.gateway';
import { MediaStreamTimings } from '../src/telephony/twilio-media-stream';
import { VoiceCapacity } from '../src/voice/voice-capacity';
import { eventually, TestAccount, TestContext } from './helpers';
import { FakeTwilio } from './support/fake-twilio';
import { MediaStreamClient } from './support/media-stream-client';
import { RecordedCall, recordCalls, refusedHandshake } from './support/recorded-calls';
import { ConnectedNumber, connectNumber, createAgent, telephonyContext, telephonyRows } from './support/telephony';

/** The token of the `<Parameter name="token">` of a `<Connect><Stream>` answer. */
const streamTokenOf = (twiml: string) => /<Parameter name="token" value="([^"]+)"\/>/.exec(twiml)![1];

/** `count` bytes of μ-law that decode to a ramp (each byte different from its neighbour). */
const mulawRamp = (count: number, from = 0) => Uint8Array.from({ length: count }, (_, index) => (from + index * 7) % 256);

/**
 * The media stream (contract section 17) at the protocol's level: the carrier's messages, checked and turned into
 * the call's audio, marks, keypad turns and ends; the call's voice, marks and clears turned into the carrier's. The
 * pipeline's place is taken by RecordedCall (what the stream hands the call is what these tests read); the spoken
 * calls end to end are below.
 */
describe('the media stream: the carrier protocol', () => {
  let twilio: FakeTwilio;
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;
  let connected: ConnectedNumber;
  let calls: Map<string, RecordedCall>;
  let timings: MediaStreamTimings;

  beforeAll(async () => {
    twilio = await FakeTwilio.start();
    ({ context, baseUrl } = await telephonyContext(twilio));
    timings = context.app.get(MEDIA_STREAM_TIMINGS);
    Object.assign(timings, { keypadGapMs: 1_000, startTimeoutMs: 2_000 }); // a gap a busy machine cannot open between digits sent at once
    calls = recordCalls(context);
    owner = await context.createAccount();
    const agentId = await createAgent(context, owner, { name: 'Reception', language: 'en-IN' });
    connected = await connectNumber(context, owner, twilio, { agentId, greeting: 'Namaste, how can I help?' });
  });
  afterAll(async () => {
    await context.close();
    await twilio.close();
  });

  /** A call to the number: its CallSid, its conversation and the stream token of the TwiML it was answered with. */
  const dialIn = async () => {
    const { call, answer } = await twilio.dialIn(connected.carrierNumber, '+919876543210');
    const [row] = await context.app
      .get(DataSource)
      .query<{ id: string }[]>(`SELECT conversation_id AS id FROM phone_calls WHERE call_sid = $1`, [call.sid]);
    return { callSid: call.sid, conversationId: row.id, token: streamTokenOf(answer.body) };
  };
  const statusOf = async (conversationId: string) =>
    (await context.app.get(DataSource).query<{ status: string }[]>(`SELECT status FROM conversations WHERE id = $1`, [conversationId]))[0]
      .status;
  /** A stream started with the token of a new call, once the call is open; the call the pipeline was given. */
  const streaming = async (playout: 'real-time' | 'instant' = 'instant') => {
    const dialled = await dialIn();
    const client = await MediaStreamClient.connect(baseUrl, playout);
    client.start(dialled.token, dialled.callSid);
    const call = await eventually(async () => (calls.get(dialled.conversationId)?.begun ? calls.get(dialled.conversationId) : undefined));
    return { ...dialled, client, call };
  };

  it('joins the call to its conversation with the token of the first start, and gives the call the caller’s μ-law as 8 kHz PCM', async () => {
    const { client, call, conversationId, token } = await streaming();
    expect(call.context.access.id).toBe(conversationId);
    expect(call.context.access.accountId).toBe(owner.id);
    expect(call.context.inputSampleRate).toBe(8_000);
    const frames = [mulawRamp(160), mulawRamp(160, 3), mulawRamp(80, 5)];
    for (const frame of frames) client.media(frame);
    await eventually(async () => (call.audioFrames.length === frames.length ? true : undefined));
    expect(call.audioFrames).toEqual(frames.map((frame) => mulaw.decode(frame)));
    // The token opened it once: another stream presenting it is closed, and this one goes on.
    const again = await MediaStreamClient.connect(baseUrl);
    again.start(token);
    expect((await again.closed).code).toBe(1008);
    expect(await statusOf(conversationId)).toBe('active');
    await client.hangUp();
  });

  it('closes a stream whose start proves no token (none, malformed, unknown, used), or that sends none in time: nothing is created or changed', async () => {
    const { token, conversationId } = await dialIn();
    const before = await telephonyRows(context, owner.id);
    const attempts: [string, (client: MediaStreamClient) => void][] = [
      ['no token', (client) => client.start(undefined)],
      ['malformed', (client) => client.start('vst_short')],
      ['unknown', (client) => client.start(`vst_${'A'.repeat(43)}`)],
      [
        'another format',
        (client) => client.start(token, undefined, { mediaFormat: { encoding: 'audio/x-l16', sampleRate: 16000, channels: 1 } }),
      ],
      ['no streamSid', (client) => client.start(token, undefined, { streamSid: 7 })],
      ['media first', (client) => client.media(mulawRamp(160))],
    ];
    for (const [name, attempt] of attempts) {
      if (name === 'media first') timings.startTimeoutMs = 200; // then no start comes
      const client = await MediaStreamClient.connect(baseUrl);
      attempt(client);
      expect([name, (await client.closed).code]).toEqual([name, 1008]);
      timings.startTimeoutMs = 2_000;
    }
    expect(await telephonyRows(context, owner.id)).toEqual(before);
    expect(calls.has(conversationId)).toBe(false);
    // The token is still good for its own stream.
    const client = await MediaStreamClient.connect(baseUrl);
    client.start(token);
    await eventually(async () => calls.get(conversationId)?.begun || undefined);
    await client.hangUp();
  });

  it('ignores what is not the protocol (not JSON, binary, unknown events, bad payloads and digits) and goes on; never a crash or a close', async () => {
    const { client, call } = await streaming();
    const garbage: (string | Buffer)[] = [
      'not json',
      '[1,2,3]',
      'null',
      '{"event":"media"}',
      '{"event":"media","media":{"payload":42}}',
      '{"event":"media","media":{"payload":"!!!not base64!!!"}}',
      `{"event":"media","media":{"payload":"${'A'.repeat(8_000)}"}}`,
      '{"event":"media","media":{"track":"outbound","payload":"AAAA"}}',
      '{"event":"mark"}',
      '{"event":"mark","mark":{"name":{"x":1}}}',
      `{"event":"mark","mark":{"name":"${'9'.repeat(100)}"}}`,
      '{"event":"dtmf","dtmf":{"digit":"12"}}',
      '{"event":"dtmf","dtmf":{"digit":"x"}}',
      '{"event":"start","start":{"customParameters":{"token":"vst_again"}}}',
      '{"event":"__proto__","constructor":{"prototype":{"polluted":true}}}',
      '{"event":"unknown"}',
      Buffer.from([0, 1, 2, 3]),
    ];
    for (const message of garbage) client.socket.send(message);
    client.media(mulawRamp(160)); // a fence: every message before it has been handled
    await eventually(async () => (call.audioFrames.length > 0 ? true : undefined));
    expect(call.audioFrames).toEqual([mulaw.decode(mulawRamp(160))]);
    expect(call.marks).toEqual([]);
    expect(call.texts).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(client.socket.readyState).toBe(client.socket.OPEN);
    await client.hangUp();
  });

  it('closes a message over 64 KiB (1009): the call ends as if the caller hung up', async () => {
    const { client, call, conversationId } = await streaming();
    client.socket.send(JSON.stringify({ event: 'media', media: { payload: 'A'.repeat(64 * 1024) } }));
    expect((await client.closed).code).toBe(1009);
    await call.whenClosed();
    expect(await statusOf(conversationId)).toBe('ended');
  });

  it("sends the call's voice as 8 kHz μ-law media, marks and clears with the stream's id, and tells the call of each mark echoed", async () => {
    const { client, call } = await streaming();
    const tone = Int16Array.from({ length: 16_000 }, (_, index) => Math.round(8_000 * Math.sin((2 * Math.PI * 440 * index) / 16_000)));
    for (let offset = 0; offset < tone.length; offset += 320) expect(call.link.sendAudio(tone.subarray(offset, offset + 320))).toBe(true);
    call.link.mark('7:50');
    call.link.clear();
    await client.next((message) => message.event === 'clear');
    const sent = client.messages.filter((message) => message.event !== 'clear');
    expect(sent.every((message) => message.streamSid === client.streamSid)).toBe(true);
    expect(sent.at(-1)).toEqual({ event: 'mark', streamSid: client.streamSid, mark: { name: '7:50' } });
    // The codec: what the carrier got is the tone taken to 8 kHz frame by frame and encoded, sample for sample.
    const down = new Resampler(16_000, 8_000);
    const expected = [];
    for (let offset = 0; offset < tone.length; offset += 320)
      expected.push(...mulaw.encode(down.process(tone.subarray(offset, offset + 320))));
    expect([...mulaw.encode(client.agentPcm())]).toEqual(expected);
    expect(client.agentPcm().length).toBeGreaterThan(8_000 - 40);
    await eventually(async () => (call.marks.includes('7:50') ? true : undefined));
    await client.hangUp();
  });

  it('takes digits pressed within the gap as one caller turn, "(keypad) 1 2 3", and the next ones as another', async () => {
    const { client, call } = await streaming();
    client.press('123');
    await eventually(async () => (call.texts.length === 1 ? true : undefined));
    client.press('#');
    await eventually(async () => (call.texts.length === 2 ? true : undefined));
    expect(call.texts).toEqual(['(keypad) 1 2 3', '(keypad) #']);
    await client.hangUp();
  });

  it('ends the conversation when the carrier says stop, or when its socket closes: the caller hung up', async () => {
    const stopped = await streaming();
    await stopped.client.hangUp();
    await stopped.call.whenClosed();
    expect(await statusOf(stopped.conversationId)).toBe('ended');

    const dropped = await streaming();
    dropped.client.socket.terminate();
    await dropped.call.whenClosed();
    expect(await statusOf(dropped.conversationId)).toBe('ended');
  });

  it('hangs up when the call is over for the pipeline (close 1000): the call finishes its sentence, the carrier completes the call, the stream closes', async () => {
    const { client, call, callSid } = await streaming();
    call.link.close(1000, 'Conversation ended');
    expect((await client.closed).code).toBe(1000);
    expect(call.finished).toBe(1);
    const completed = twilio.requests.filter((request) => request.method === 'POST' && request.path.endsWith(`/Calls/${callSid}.json`));
    expect(completed.map((request) => request.form.get('Status'))).toEqual(['completed']);
  });

  it('is refused before the upgrade while the instance has no room for another call (503, Retry-After), as the voice socket', async () => {
    const capacity = context.app.get(VoiceCapacity);
    // The earlier tests' calls give their places back once stored: none may come back while the instance is full.
    await eventually(async () => (capacity.load().calls === 0 ? true : undefined));
    const places: (() => void)[] = [];
    for (let place = capacity.take(); place; place = capacity.take()) places.push(place);
    try {
      const refused = await refusedHandshake(`${baseUrl.replace('http', 'ws')}/telephony/twilio/stream`);
      expect(refused).toMatchObject({ status: 503, headers: { 'retry-after': '5' }, body: { statusCode: 503 } });
    } finally {
      places.forEach((giveBack) => giveBack());
    }
    const plain = await context.http.get('/telephony/twilio/stream');
    expect(plain.status).toBe(426);
    expect(plain.headers.upgrade).toBe('websocket');
  });
});

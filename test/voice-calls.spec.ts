import { binaryBody, createListeningTestContext, eventually, TestAccount, TestContext } from './helpers';
import { createShopAgent, KNOWLEDGE } from './browser/harness';
import { APOLOGY, QUESTION_NOTED } from '../src/conversations/answering/answerer';
import { loadConfig } from '../src/config/config';
import { bearer, capturedLogger, startConversation } from './conversation-helpers';
import { FAKE_SPEECH_KEY, FakeSpeechProviders, PROVIDER_SECRET, startFakeSpeechProviders } from './fake-speech-providers';
import { decodeMp3, fixture, levelDbfs } from './support/voice-audio';
import { silence, VoiceClient, widgetVoiceCall } from './support/voice-client';
import { concatPcm } from '../src/voice/audio/pcm';
import { TURN_MS } from '../src/voice/pipeline/audio-work';
import { SpokenCalls } from '../src/voice/pipeline/spoken-calls.service';
import { VoiceActivity } from '../src/voice/vad/fvad';
import { TurnDetector } from '../src/voice/vad/turn-detector';
import { VoiceCalls } from '../src/voice/voice-call';

/**
 * Closing a service with spoken calls waits for their recordings to be stored and the voice's threads to stop: usually
 * seconds, but past the 30 s default on a machine whose cores the rest of the suite shares (seen at load 5).
 * Left open, the service's job workers then ran on in the jest worker and broke the next file it ran.
 */
const CLOSE_TIMEOUT_MS = 90_000;

/**
 * Spoken conversations end to end (contract section 15), offline: the built-in voice for real, the browser's
 * text input (no speech-to-text configured), the recording decoded.
 */
describe('a spoken conversation with the built-in voice', () => {
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;
  let agentId: number;

  beforeAll(async () => {
    ({ context, baseUrl } = await createListeningTestContext({ widgetRateLimit: 10_000 }));
    owner = await context.createAccount();
    agentId = (await createShopAgent(context, owner)).id;
  });
  afterAll(() => context?.close(), CLOSE_TIMEOUT_MS);

  it('answers a text frame aloud, records both sides in a stereo MP3 that the call serves, with startSeconds', async () => {
    const started = await startConversation(context, owner, agentId);
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    expect(await client.start(started.token)).toEqual({ type: 'ready', sampleRate: 16_000, input: 'text' });

    // The visitor speaks (the recording's left channel) while the browser sends what it recognised.
    const spoken = fixture('en-question');
    await client.stream(spoken);
    client.send({ type: 'text', text: 'How long does delivery take?' });
    const done = await client.next('reply.done');
    expect(done).toEqual({ type: 'reply.done', text: KNOWLEDGE.delivery, interrupted: false });
    const replyAt = client.messages.findIndex((message) => message.type === 'transcript');
    expect(client.messages[replyAt]).toEqual({ type: 'transcript', text: 'How long does delivery take?', final: true });
    const pieces = client.messages.filter((message) => message.type === 'reply').map((message) => message.text);
    expect(pieces.join('')).toBe(KNOWLEDGE.delivery);
    // The agent's voice: about as long as espeak takes to say the passage (a dozen seconds), in 20 ms frames.
    expect(client.audio.every((frame) => frame.pcm.length === 320)).toBe(true);
    expect(client.audioSeconds()).toBeGreaterThan(5);

    await client.stream(silence(0.5));
    client.send({ type: 'end' });
    await client.next('ended');
    expect(await client.closed).toEqual({ code: 1000, reason: 'Conversation ended' });

    const call = await eventually(async () => {
      const response = await context.as(owner).get(`/calls/${started.conversationId}`).expect(200);
      return response.body.hasRecording ? response.body : undefined;
    });
    expect(call.transcript).toEqual([
      { speaker: 'user', text: 'How long does delivery take?', startSeconds: expect.any(Number) },
      { speaker: 'agent', text: KNOWLEDGE.delivery, startSeconds: expect.any(Number), latencyMs: expect.any(Object) },
    ]);
    const [visitorAt, agentAt] = call.transcript.map((entry: { startSeconds: number }) => entry.startSeconds);
    // The question starts where its speech does (the VAD's), not where its text came (after the speech).
    expect(visitorAt).toBeGreaterThanOrEqual(0);
    expect(visitorAt).toBeLessThan(spoken.length / 16_000 / 2); // its speech begins at 0.3 s, its text comes after 2.4 s
    expect(agentAt).toBeGreaterThan(visitorAt);

    const download = await context.as(owner).get(`/calls/${started.conversationId}/recording/download`).buffer(true).parse(binaryBody);
    expect(download.status).toBe(200);
    expect(download.headers['content-type']).toBe('audio/mpeg');
    const mp3 = await decodeMp3(download.body as Buffer);
    expect(mp3.sampleRate).toBe(16_000);
    expect(mp3.channels).toHaveLength(2);
    const [left, right] = mp3.channels;
    const spokenSeconds = spoken.length / 16_000;
    // The visitor's question is in the left channel only, during its first seconds; the agent's reply in the right.
    expect(levelDbfs(left, 16_000, 0.4, spokenSeconds - 0.4)).toBeGreaterThan(-40);
    expect(levelDbfs(right, 16_000, 0.4, spokenSeconds - 0.4)).toBeLessThan(-60);
    expect(levelDbfs(right, 16_000, agentAt + 0.5, agentAt + 3)).toBeGreaterThan(-40);
    expect(levelDbfs(left, 16_000, agentAt + 0.5, agentAt + 3)).toBeLessThan(-60);
    expect(mp3.seconds).toBeGreaterThan(agentAt + client.audioSeconds() - 0.5);
  });

  it('stops at once when the visitor speaks over the agent: clear, reply.done interrupted, and only what was heard is kept', async () => {
    const started = await startConversation(context, owner, agentId);
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    await client.start(started.token);
    client.send({ type: 'text', text: 'What about returns?' });
    // Once the agent has been heard for a second, the visitor talks over it (a microphone: silence, then speech).
    await client.until(() => client.audioSeconds() > 1.5);
    const speechFrom = client.messages.length;
    await client.stream(fixture('en-long'), 16_000, () => client.messages.slice(speechFrom).some((message) => message.type === 'clear'));
    const cleared = client.messages.findIndex((message) => message.type === 'clear');
    expect(cleared).toBeGreaterThanOrEqual(speechFrom);
    const done = await client.next('reply.done');
    expect(done.interrupted).toBe(true);
    const heard = done.text as string;
    expect(heard.length).toBeGreaterThan(0);
    expect(KNOWLEDGE.returns.startsWith(heard)).toBe(true);
    expect(heard.length).toBeLessThan(KNOWLEDGE.returns.length);
    // No more of the agent's voice after the clear (frames already on their way excepted: at most the lead).
    const audioAtClear = client.audio.length;
    await client.stream(silence(0.5));
    expect(client.audio.length - audioAtClear).toBeLessThanOrEqual(10);
    const view = (await context.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token)).expect(200)).body;
    expect(view.messages.map((message: { speaker: string; text: string }) => [message.speaker, message.text])).toEqual([
      ['user', 'What about returns?'],
      ['agent', heard],
    ]);
    client.close();
  });

  /** The call of an ended conversation once its recording is stored. */
  const recordedCall = (conversationId: string) =>
    eventually(async () => {
      const response = await context.as(owner).get(`/calls/${conversationId}`).expect(200);
      return response.body.hasRecording ? response.body : undefined;
    });

  it('records the audio sent at once after ready from its first frame', async () => {
    const started = await startConversation(context, owner, agentId);
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    await client.start(started.token);
    const tone = new Int16Array(3_200).map((_, index) => Math.round(12_000 * Math.sin((2 * Math.PI * 440 * index) / 16_000)));
    for (let offset = 0; offset < tone.length; offset += 320) client.socket.send(Buffer.from(tone.buffer, offset * 2, 640));
    await client.stream(silence(0.6));
    client.send({ type: 'text', text: 'Hello?' }); // a conversation without a message leaves no call
    await client.next('reply.done');
    client.send({ type: 'end' });
    await client.next('ended');
    await recordedCall(started.conversationId);
    const download = await context.as(owner).get(`/calls/${started.conversationId}/recording/download`).buffer(true).parse(binaryBody);
    const [left] = (await decodeMp3(download.body as Buffer)).channels;
    // The tone's 200 ms are all in the recording, not lost while the call was set up. Where: the recording's clock
    // takes the visitor's audio as the pipeline has it, and on a busy machine frames that come a few ticks late are
    // recorded a few ticks later, after silence; so the tone is counted in 10 ms windows of the first 2 s.
    const loudWindows = Array.from({ length: 200 }, (_, index) => levelDbfs(left, 16_000, index / 100, (index + 1) / 100)).filter(
      (level) => level > -20,
    ).length;
    expect(loudWindows).toBeGreaterThanOrEqual(18);
    expect(loudWindows).toBeLessThanOrEqual(22);
  });

  it("speaks a widget conversation's greeting first; cut off, its transcript entry keeps what was heard, placed in the recording", async () => {
    const greeting = 'Welcome to the shop! I can tell you about delivery, returns and our opening hours. What would you like to know?';
    const { client, session } = await widgetVoiceCall(context, owner, agentId, baseUrl, greeting);
    expect(await client.next('reply')).toEqual({ type: 'reply', text: greeting });
    // Once its first sentence has been heard (the transcript keeps whole sentences), the visitor cuts in.
    await client.until(() => client.audioSeconds() > 3);
    client.send({ type: 'text', text: 'What about returns?' });
    const cut = await client.next('reply.done');
    expect(cut.interrupted).toBe(true);
    const heard = cut.text as string;
    expect(heard.length).toBeGreaterThan(0);
    expect(heard.length).toBeLessThan(greeting.length);
    expect(greeting.startsWith(heard)).toBe(true);
    await client.next('reply.done', client.messages.indexOf(cut) + 1);
    client.send({ type: 'end' });
    await client.next('ended');
    const call = await recordedCall(session.conversationId);
    expect(call.transcript).toEqual([
      { speaker: 'agent', text: heard, startSeconds: expect.any(Number) }, // the greeting answers no turn: not timed
      { speaker: 'user', text: 'What about returns?', startSeconds: expect.any(Number) },
      { speaker: 'agent', text: KNOWLEDGE.returns, startSeconds: expect.any(Number), latencyMs: expect.any(Object) },
    ]);
    const [greetingAt, questionAt] = call.transcript.map((entry: { startSeconds: number }) => entry.startSeconds);
    expect(greetingAt).toBeGreaterThanOrEqual(0);
    expect(questionAt).toBeGreaterThan(greetingAt + 2.5); // asked once 3 s of the greeting had been sent
  });

  it('answers ended, then closes with 1000, when the visitor speaks to a conversation ended elsewhere', async () => {
    const started = await startConversation(context, owner, agentId);
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    await client.start(started.token);
    await context.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);
    client.send({ type: 'text', text: 'Still there?' });
    await client.next('ended');
    expect(await client.closed).toEqual({ code: 1000, reason: 'Conversation ended' });
  });

  describe('GET /voices/{voiceId}/preview', () => {
    it('speaks a sample in the voice and language asked for, as MP3, the same each time', async () => {
      const mp3 = async (path: string) => {
        const response = await context.as(owner).get(path).buffer(true).parse(binaryBody).expect(200);
        expect(response.headers['content-type']).toBe('audio/mpeg');
        return response.body as Buffer;
      };
      const tamil = await mp3('/voices/anushka/preview?language=ta-IN');
      const decoded = await decodeMp3(tamil);
      expect(decoded.seconds).toBeGreaterThan(1);
      expect(levelDbfs(decoded.channels[0], decoded.sampleRate, 0, decoded.seconds)).toBeGreaterThan(-40);
      expect((await mp3('/voices/anushka/preview?language=ta-IN')).equals(tamil)).toBe(true);
      const hindi = await mp3('/voices/shubh/preview'); // hi-IN by default
      expect(hindi.equals(tamil)).toBe(false);
    });

    it('answers 404 for an unknown voice, 403 for a reserved one, 400 for a language not supported, 401 without a key', async () => {
      expect((await context.as(owner).get('/voices/nobody/preview').expect(404)).body.statusCode).toBe(404);
      expect((await context.as(owner).get('/voices/ritu-preview/preview').expect(403)).body.statusCode).toBe(403);
      expect((await context.as(owner).get('/voices/shubh/preview?language=fr-FR').expect(400)).body.statusCode).toBe(400);
      await context.http.get('/voices/shubh/preview').expect(401);
    });
  });
});

describe('a spoken conversation through speech providers (their local stand-ins)', () => {
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;
  let agentId: number;
  let providers: FakeSpeechProviders;
  const log = capturedLogger();

  /** A service that listens through the fake (speech-to-text) and speaks with the built-in voice. */
  const listening = (sttTimeoutMs: number) => {
    const base = loadConfig({});
    const voice = {
      ...base.voice,
      sttProvider: 'openai' as const,
      openAiStt: { baseUrl: providers.openAiUrl, apiKey: FAKE_SPEECH_KEY, model: 'whisper-1' },
      sttTimeoutMs,
    };
    return createListeningTestContext({ widgetRateLimit: 10_000, voice }, { logger: log.logger });
  };

  beforeAll(async () => {
    providers = await startFakeSpeechProviders();
    // A patient deadline: a busy machine must not turn the fake's answer into a timeout (the stall has its own).
    ({ context, baseUrl } = await listening(30_000));
    owner = await context.createAccount();
    agentId = (await context.as(owner).post('/agents').send({ name: 'Asha', language: 'hi-IN' }).expect(201)).body.id;
  });
  afterAll(async () => {
    await context?.close();
    await providers?.close();
  }, CLOSE_TIMEOUT_MS);
  beforeEach(() => providers.setMode({ kind: 'ok' }));

  const speakAndWait = async (client: VoiceClient, type: string) => {
    const from = client.messages.length;
    const arrived = () => client.messages.slice(from).find((message) => message.type === type);
    await client.stream(fixture('hi-question'));
    // The microphone stays open: the utterance ends after VOICE_END_OF_TURN_MS of this silence.
    await client.stream(silence(5), 16_000, () => arrived() !== undefined);
    return client.until(arrived, 20_000);
  };

  it('hears the visitor through speech-to-text: the utterance as a 16 kHz WAV in the agent language, its transcript answered aloud', async () => {
    providers.setTranscript((wav) => `heard ${wav.samples.length} samples`);
    const started = await startConversation(context, owner, agentId);
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    expect((await client.start(started.token)).input).toBe('speech');
    const transcript = await speakAndWait(client, 'transcript');
    const request = providers.requests.at(-1)!;
    expect(request.path).toBe('/v1/audio/transcriptions');
    expect(request.fields).toEqual({ model: 'whisper-1', language: 'hi', response_format: 'json' });
    expect(request.file).toMatchObject({ filename: 'audio.wav', sampleRate: 16_000, channels: 1 });
    // The utterance: the question's speech with its pre-roll, not the silence around it.
    const seconds = request.file!.samples / 16_000;
    expect(seconds).toBeGreaterThan(1.5);
    expect(seconds).toBeLessThan(fixture('hi-question').length / 16_000 + 0.4);
    expect(transcript).toEqual({ type: 'transcript', text: `heard ${request.file!.samples} samples`, final: true });
    const done = await client.next('reply.done');
    expect(done).toEqual({ type: 'reply.done', text: QUESTION_NOTED, interrupted: false });
    expect(client.audioSeconds()).toBeGreaterThan(1);
    client.close();
  });

  it('takes a short sound over the agent ("mm", a cough) for no turn: neither transcribed nor answered, the reply goes on', async () => {
    providers.setTranscript((wav) => `heard ${wav.samples.length} samples`);
    const started = await startConversation(context, owner, agentId);
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    await client.start(started.token);
    const from = providers.requests.length;
    const transcribed = () =>
      providers.requests.slice(from).flatMap((request) => (request.path === '/v1/audio/transcriptions' ? [request.file!.samples] : []));
    client.send({ type: 'text', text: 'Hello?' });
    await client.until(() => client.audioSeconds() > 0.3);
    // 200 ms of speech: long enough to be speech (100 ms), too short to interrupt (300 ms); then the turn's end.
    await client.stream(fixture('en-question').subarray(0.6 * 16_000, 0.8 * 16_000));
    await client.stream(silence(1));
    expect(await client.next('reply.done')).toEqual({ type: 'reply.done', text: QUESTION_NOTED, interrupted: false });
    // The fence: a real question afterwards is transcribed; the short sound's utterance, had it been a turn, was
    // sent to speech-to-text as it ended, before the reply was done.
    await client.stream(fixture('hi-question'));
    const question = () => transcribed().find((samples) => samples > 1.5 * 16_000);
    await client.stream(silence(5), 16_000, () => question() !== undefined);
    const samples = await client.until(question);
    expect(transcribed()).toEqual([samples]);
    const transcript = await client.until(() => client.messages.find((message) => message.text === `heard ${samples} samples`));
    expect(client.messages.filter((message) => message.type === 'transcript')).toEqual([
      { type: 'transcript', text: 'Hello?', final: true },
      transcript,
    ]);
    client.close();
  });

  it('works a burst (seconds of audio sent at once) through a slice at a time, in order: its utterance is heard whole', async () => {
    providers.setTranscript((wav) => `heard ${wav.samples.length} samples`);
    const frame = 0.2 * 16_000; // 200 ms, the longest frame a client may send
    const speech = concatPcm([silence(6), fixture('hi-question'), silence(1.5)]);
    const audio = concatPcm([speech, new Int16Array((frame - (speech.length % frame)) % frame)]);
    // The utterance the turn detector finds in it, 20 ms at a time, as in a call streamed at real time.
    const vad = await VoiceActivity.create();
    const detector = new TurnDetector(vad, { endOfTurnMs: loadConfig({}).voice.endOfTurnMs });
    const utterances: number[] = [];
    for (let offset = 0; offset + 320 <= audio.length; offset += 320) {
      for (const event of detector.push(audio.subarray(offset, offset + 320)))
        if (event.type === 'utterance') utterances.push(event.audio.length);
    }
    vad.free();
    expect(utterances).toHaveLength(1);

    const work = context.app.get<VoiceCalls, SpokenCalls>(VoiceCalls).audioWork;
    const started = await startConversation(context, owner, agentId);
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    await client.start(started.token);
    const turnsBefore = work.turns;
    work.largestTurnMs = 0;
    for (let offset = 0; offset < audio.length; offset += frame) client.socket.send(Buffer.from(audio.buffer, offset * 2, frame * 2));
    const transcript = await client.next('transcript');
    expect(transcript.text).toBe(`heard ${utterances[0]} samples`);
    // Worked through in turns of the event loop of TURN_MS of audio at most, not as the frames arrived.
    expect(work.largestTurnMs).toBeLessThanOrEqual(TURN_MS);
    expect(work.turns - turnsBefore).toBeGreaterThanOrEqual(Math.ceil(audio.length / 16 / TURN_MS));
    client.close();
  });

  it('speaks the apology when speech-to-text stalls past STT_TIMEOUT_MS, and keeps the socket', async () => {
    const hurried = await listening(1_000);
    try {
      const started = await startConversation(hurried.context, owner, agentId);
      const client = await VoiceClient.connect(hurried.baseUrl, started.conversationId);
      await client.start(started.token);
      providers.setMode({ kind: 'stall' });
      expect(await speakAndWait(client, 'reply.done')).toEqual({ type: 'reply.done', text: APOLOGY, interrupted: false });
      expect(client.messages.some((message) => message.type === 'transcript')).toBe(false);
      expect(client.socket.readyState).toBe(client.socket.OPEN);
      expect(log.lines.some((line) => line.includes('"failure":"timeout"'))).toBe(true);
      client.close();
    } finally {
      await hurried.context.close();
    }
  });

  it('speaks the apology when speech-to-text fails, keeps the socket, records nothing, and logs no provider text', async () => {
    const started = await startConversation(context, owner, agentId);
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    await client.start(started.token);
    for (const mode of [
      { kind: 'status', status: 500 },
      { kind: 'garbage', body: 'html' },
    ] as const) {
      providers.setMode(mode);
      const from = client.messages.length;
      const done = await speakAndWait(client, 'reply.done');
      expect(done).toEqual({ type: 'reply.done', text: APOLOGY, interrupted: false });
      expect(client.messages.slice(from).some((message) => message.type === 'transcript')).toBe(false);
    }
    expect(client.socket.readyState).toBe(client.socket.OPEN);
    const view = (await context.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token)).expect(200)).body;
    expect(view.messages).toEqual([]);
    expect(log.lines.join('\n')).not.toContain(PROVIDER_SECRET);
    expect(log.lines.some((line) => line.includes('"failure":"http-status"'))).toBe(true);
    client.close();
  });
});

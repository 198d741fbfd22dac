import { setTimeout as pause } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { QUESTION_NOTED } from '../src/conversations/answering/answerer';
import { loadConfig } from '../src/config/config';
import { JOB_ASSEMBLE } from '../src/voice/recording/recording-assembly';
import { startConversation, Started } from './conversation-helpers';
import { FAKE_SPEECH_KEY, FakeSpeechProviders, startFakeSpeechProviders } from './fake-speech-providers';
import { binaryBody, createListeningTestContext, eventually, TestAccount, TestContext } from './helpers';
import { localTestStorage, TestStorage } from './recordings-helpers';
import { decodeMp3, DecodedMp3, fixture, levelDbfs } from './support/voice-audio';
import { ServerMessage, silence, VoiceClient } from './support/voice-client';

/**
 * Issue 32, "two instances: a spoken conversation started on one continues over a socket to the other" (contract
 * section 15): two instances of the app on one PostgreSQL, each listening on its own port, with the same providers
 * (speech-to-text through its local stand-in, the built-in voice) and the same storage. The visitor talks to the
 * agent over a socket on A, goes away, and comes back over a socket on B; the call has one recording of both.
 */

const LOUD = -40; // dBFS: speech, as voice-calls.spec measures it
const QUIET = -60;
/** The decoded MP3 is longer than its timeline by the encoder's delay and padding (about 84 ms a part). */
const PART_PADDING = 0.1;
/** How much a socket's part of the timeline may exceed the socket's life as its client saw it (close handling, a tick). */
const CLOSE_SLACK = 0.3;
/**
 * How much shorter than the socket's life its part may be: the clock starts once the call is set up (after `ready`),
 * and skips the ticks of a stall over 200 ms rather than catching up (a busy machine).
 */
const SETUP_AND_STALLS = 2;
/** The visitor is away this long between the sockets: time the recording leaves out (longer than CLOSE_SLACK and the padding). */
const AWAY_SECONDS = 2;
/** The agent's frames sent ahead of playback (0.2 s) and a catch-up burst after a stall (at most 0.2 s), with room to spare. */
const PACING_SLACK = 1;

const FIRST_QUESTION = 'Do you open on Sundays?';
const SECOND_QUESTION = 'And what about public holidays?';

describe('a spoken conversation that moves from one instance to another (issue 32)', () => {
  let storage: TestStorage;
  let providers: FakeSpeechProviders;
  let a: TestContext;
  let aUrl: string;
  let b: TestContext;
  let bUrl: string;
  let owner: TestAccount;
  let agentId: number;

  beforeAll(async () => {
    storage = await localTestStorage();
    providers = await startFakeSpeechProviders();
    const voice = {
      ...loadConfig({}).voice,
      sttProvider: 'openai' as const,
      openAiStt: { baseUrl: providers.openAiUrl, apiKey: FAKE_SPEECH_KEY, model: 'whisper-1' },
    };
    // The same configuration, the same data directory and recordings (as two instances behind one load balancer
    // share a bucket), each instance with a job queue of its own (createTestContext's rule).
    const config = { ...storage.config, widgetRateLimit: 10_000, voice };
    ({ context: a, baseUrl: aUrl } = await createListeningTestContext(config));
    ({ context: b, baseUrl: bUrl } = await createListeningTestContext(config));
    owner = await a.createAccount();
    agentId = (await a.as(owner).post('/agents').send({ name: 'Asha', language: 'en-IN' }).expect(201)).body.id;
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await providers?.close();
    await storage?.stop();
  });

  const database = () => a.app.get(DataSource);

  /** The conversation's voice lease (null: no socket holds it, on any instance). */
  const leaseOf = async (started: Started) =>
    (
      await database().query<{ lease: string | null }[]>('SELECT voice_lease_id AS lease FROM conversations WHERE id = $1', [
        started.conversationId,
      ])
    )[0].lease;

  /** Resolves once no socket holds the conversation's lease; fails (after 20 s) if it was never released. */
  const released = (started: Started) =>
    eventually(async () => ((await leaseOf(started)) === null ? true : undefined)).catch(() => {
      throw new Error('The voice lease was not released after its socket closed');
    });

  /** The parts of the recording listed so far (a closed socket's part is listed before its lease is released). */
  const parts = (started: Started) =>
    database().query<{ seq: number; seconds: number }[]>(
      'SELECT seq, seconds FROM conversation_recording_segments WHERE conversation_id = $1 ORDER BY seq',
      [started.conversationId],
    );

  /** A socket on the instance at `baseUrl`: `start` sent, and what came first, `ready` or the close (a refusal). */
  async function open(baseUrl: string, started: Started): Promise<{ client: VoiceClient; first: ServerMessage | { code: number } }> {
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    let closed: { code: number } | undefined;
    void client.closed.then(({ code }) => (closed = { code }));
    client.send({ type: 'start', token: started.token, sampleRate: 16_000 });
    const first = await client.until(() => client.messages.find((message) => message.type === 'ready') ?? closed);
    return { client, first };
  }

  /**
   * The visitor asks a question into the microphone at real time; the microphone stays open (silence), which ends
   * the utterance after VOICE_END_OF_TURN_MS, until the agent has answered aloud. What the socket got meanwhile.
   */
  async function askAloud(client: VoiceClient) {
    const from = client.messages.length;
    const audioFrom = client.audio.length;
    const since = (type: string) => client.messages.slice(from).find((message) => message.type === type);
    await client.stream(fixture('en-question'));
    await client.stream(silence(60), 16_000, () => since('reply.done') !== undefined);
    const done = await client.until(() => since('reply.done'));
    const audio = client.audio.slice(audioFrom);
    return {
      transcript: since('transcript'),
      done,
      audioSeconds: client.audioSeconds(audioFrom),
      /** From the reply's first frame's arrival to its last's: about its length when paced as it plays, not sent at once. */
      arrivalSeconds: audio.length ? (audio[audio.length - 1].at - audio[0].at) / 1000 : 0,
    };
  }

  /**
   * The fence: every assembly job of the conversation in `instance`'s queue (at least one) has completed. The
   * recording is joined once the conversation ended and no socket is left; a run while the last socket still
   * stores its part fails and is retried. Its parts' objects are removed after the recording is attached.
   */
  const assembled = (instance: TestContext, started: Started) =>
    eventually(async () => {
      const [{ total, unsettled }] = await database().query<{ total: number; unsettled: number }[]>(
        `SELECT count(*)::int AS total, count(*) FILTER (WHERE state <> 'completed')::int AS unsettled
           FROM ${instance.config.jobQueueSchema}.job WHERE name = $1 AND data->>'conversationId' = $2`,
        [JOB_ASSEMBLE, started.conversationId],
      );
      return total > 0 && unsettled === 0 ? true : undefined;
    }, 60_000);

  const level = (mp3: DecodedMp3, channel: 0 | 1, from: number, to: number) => levelDbfs(mp3.channels[channel], mp3.sampleRate, from, to);

  it('continues on B once the socket on A has closed: one transcript in order, one stereo recording of both sockets', async () => {
    const started = await startConversation(a, owner, agentId);

    // On A: ready, and a socket on B for the same conversation is refused with 4409 while A's is open.
    const onA = await open(aUrl, started);
    expect(onA.first).toEqual({ type: 'ready', sampleRate: 16_000, input: 'speech' });
    const openedA = performance.now();
    expect(await leaseOf(started)).not.toBeNull();
    const refused = await open(bUrl, started);
    expect(refused.first).toMatchObject({ code: 4409 });
    expect(onA.client.socket.readyState).toBe(onA.client.socket.OPEN);

    // The first keeps going: the visitor is heard and answered aloud, the audio paced as it plays (within the frames sent
    // ahead and a catch-up after a stall: PACING_SLACK).
    providers.setTranscript(FIRST_QUESTION);
    const first = await askAloud(onA.client);
    expect(first.transcript).toEqual({ type: 'transcript', text: FIRST_QUESTION, final: true });
    expect(first.done).toEqual({ type: 'reply.done', text: QUESTION_NOTED, interrupted: false });
    expect(first.audioSeconds).toBeGreaterThan(3);
    expect(first.arrivalSeconds).toBeGreaterThan(first.audioSeconds - PACING_SLACK);

    // The visitor's client closes the socket; A stores its part of the recording, then releases the lease.
    onA.client.close();
    expect((await onA.client.closed).code).toBe(1000);
    const spanA = (performance.now() - openedA) / 1000;
    await released(started);
    const [firstPart, ...otherParts] = await parts(started);
    expect(otherParts).toEqual([]);
    expect(firstPart.seq).toBe(1);
    const partA = firstPart.seconds;
    expect(partA).toBeLessThanOrEqual(spanA + CLOSE_SLACK);
    expect(partA).toBeGreaterThan(spanA - SETUP_AND_STALLS);

    // The visitor comes back a little later, through the other instance: ready this time, not 4409.
    await pause(AWAY_SECONDS * 1000);
    const onB = await open(bUrl, started);
    expect(onB.first).toEqual({ type: 'ready', sampleRate: 16_000, input: 'speech' });
    const openedB = performance.now();
    providers.setTranscript(SECOND_QUESTION);
    const second = await askAloud(onB.client);
    expect(second.transcript).toEqual({ type: 'transcript', text: SECOND_QUESTION, final: true });
    expect(second.done).toEqual({ type: 'reply.done', text: QUESTION_NOTED, interrupted: false });
    expect(second.audioSeconds).toBeGreaterThan(3);
    expect(second.arrivalSeconds).toBeGreaterThan(second.audioSeconds - PACING_SLACK);

    // The visitor ends the conversation on B.
    onB.client.send({ type: 'end' });
    await onB.client.next('ended');
    expect(await onB.client.closed).toEqual({ code: 1000, reason: 'Conversation ended' });
    const spanB = (performance.now() - openedB) / 1000;

    // Both turns in order, on one timeline: the second socket's clock starts where the first socket's part ended.
    await assembled(b, started);
    const call = (await a.as(owner).get(`/calls/${started.conversationId}`).expect(200)).body;
    expect(call.hasRecording).toBe(true);
    expect(call.transcript).toEqual([
      { speaker: 'user', text: FIRST_QUESTION, startSeconds: expect.any(Number) },
      { speaker: 'agent', text: QUESTION_NOTED, startSeconds: expect.any(Number), latencyMs: expect.any(Object) },
      { speaker: 'user', text: SECOND_QUESTION, startSeconds: expect.any(Number) },
      { speaker: 'agent', text: QUESTION_NOTED, startSeconds: expect.any(Number), latencyMs: expect.any(Object) },
    ]);
    const [askedA, answeredA, askedB, answeredB] = call.transcript.map((entry: { startSeconds: number }) => entry.startSeconds);
    expect(askedA).toBeLessThan(answeredA);
    expect(answeredA + first.audioSeconds).toBeLessThanOrEqual(partA + 0.05);
    expect(askedB).toBeGreaterThanOrEqual(partA);
    expect(askedB).toBeLessThan(answeredB);
    expect(answeredB + second.audioSeconds).toBeLessThanOrEqual(partA + spanB + CLOSE_SLACK);

    // One recording, assembled from both parts: the parts' rows and objects are gone, the recording is the one object.
    expect(await parts(started)).toEqual([]);
    expect(await storage.objects()).toHaveLength(1);
    const download = await a
      .as(owner)
      .get(`/calls/${started.conversationId}/recording/download`)
      .buffer(true)
      .parse(binaryBody)
      .expect(200);
    expect(download.headers['content-type']).toBe('audio/mpeg');
    const mp3 = await decodeMp3(download.body as Buffer);
    expect(mp3.sampleRate).toBe(16_000);
    expect(mp3.channels).toHaveLength(2);
    // Both sockets' time, and not the time between them (the visitor away is longer than every slack here).
    expect(mp3.seconds).toBeLessThanOrEqual(partA + spanB + CLOSE_SLACK + 2 * PART_PADDING);
    expect(mp3.seconds).toBeGreaterThan(partA + spanB - SETUP_AND_STALLS);

    // In each half, the visitor's question in the left channel only, the agent's answer in the right only. The
    // fixture's speech lasts 1.8 s from 0.1 s before its startSeconds (the detector's 100 ms); windows clear of the
    // edges (the encoder shifts the audio by a few tens of ms a part).
    for (const [asked, answered, reply] of [
      [askedA, answeredA, first.audioSeconds],
      [askedB, answeredB, second.audioSeconds],
    ]) {
      expect(level(mp3, 0, asked + 0.2, asked + 1.4)).toBeGreaterThan(LOUD);
      expect(level(mp3, 1, asked + 0.2, asked + 1.4)).toBeLessThan(QUIET);
      const replyEnd = answered + Math.min(3, reply - 0.3);
      expect(level(mp3, 1, answered + 0.5, replyEnd)).toBeGreaterThan(LOUD);
      expect(level(mp3, 0, answered + 0.5, replyEnd)).toBeLessThan(QUIET);
    }
  }, 180_000);
});

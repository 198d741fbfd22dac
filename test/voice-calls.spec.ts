import { createListeningTestContext, eventually, TestAccount, TestContext } from './helpers';
import { createShopAgent, KNOWLEDGE } from './browser/harness';
import { startConversation } from './conversation-helpers';
import { decodeMp3, fixture, levelDbfs } from './support/voice-audio';
import { silence, VoiceClient } from './support/voice-client';

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
  afterAll(() => context?.close());

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
      { speaker: 'agent', text: KNOWLEDGE.delivery, startSeconds: expect.any(Number) },
    ]);
    const [visitorAt, agentAt] = call.transcript.map((entry: { startSeconds: number }) => entry.startSeconds);
    expect(agentAt).toBeGreaterThan(visitorAt);

    const download = await context
      .as(owner)
      .get(`/calls/${started.conversationId}/recording/download`)
      .buffer(true)
      .parse((response, done) => {
        const parts: Buffer[] = [];
        response.on('data', (part: Buffer) => parts.push(part));
        response.on('end', () => done(null, Buffer.concat(parts)));
      });
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
});

import { Logger } from '@nestjs/common';
import { AgentVoice } from '../src/voice/pipeline/agent-voice';
import { SpokenReply } from '../src/voice/pipeline/spoken-reply';
import type { VoiceServerMessage } from '../src/voice/voice-call';

/** SpokenReply with no voice (the text alone), its messages kept. */
function textOnlyReply(): { reply: SpokenReply; sent: VoiceServerMessage[] } {
  const sent: VoiceServerMessage[] = [];
  const transport = {
    playback: 'clock' as const,
    send: (message: VoiceServerMessage) => sent.push(message),
    sendAudio: () => true,
    mark: () => undefined,
    clear: () => sent.push({ type: 'clear' }),
  };
  const reply = new SpokenReply({
    transport,
    voice: new AgentVoice(transport, 250),
    tts: null,
    speaker: { voice: 'shubh', language: 'en-IN' },
    logger: new Logger('Voice'),
  });
  return { reply, sent };
}

describe('a spoken reply', () => {
  it('is not interrupted once done: the visitor ending the call right after reply.done gets no clear', async () => {
    const { reply, sent } = textOnlyReply();
    reply.piece('Hello.');
    expect(await reply.deliver('Hello.')).toEqual({ text: 'Hello.', interrupted: false, startSeconds: undefined });
    reply.interrupt();
    expect(sent).toEqual([
      { type: 'reply', text: 'Hello.' },
      { type: 'reply.done', text: 'Hello.', interrupted: false },
    ]);
    expect(reply.signal.aborted).toBe(false);
  });

  it('is interrupted before it is done: clear, and reply.done says so', async () => {
    const { reply, sent } = textOnlyReply();
    reply.piece('Hello.');
    reply.interrupt();
    expect((await reply.deliver('Hello.')).interrupted).toBe(true);
    expect(sent.map((message) => message.type)).toEqual(['reply', 'clear', 'reply.done']);
  });
});

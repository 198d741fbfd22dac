import { Logger } from '@nestjs/common';
import { AgentVoice } from '../src/voice/pipeline/agent-voice';
import { SpokenReply } from '../src/voice/pipeline/spoken-reply';
import { SpeechRequest, TextToSpeech } from '../src/voice/tts/text-to-speech';
import type { VoiceServerMessage } from '../src/voice/voice-call';
import { FRAME_SAMPLES, VOICE_SAMPLE_RATE } from '../src/voice/voice-format';

/** A voice that says every sentence as `frames` frames at the pipeline's rate, and keeps the requests it was given. */
class RequestsKept extends TextToSpeech {
  readonly name = 'kept';
  readonly sampleRate = VOICE_SAMPLE_RATE;
  readonly requests: SpeechRequest[] = [];
  constructor(private readonly frames: number) {
    super();
  }
  async *synthesize(request: SpeechRequest): AsyncGenerator<Int16Array> {
    this.requests.push(request);
    yield new Int16Array(this.frames * FRAME_SAMPLES).fill(1000);
  }
}

/** A SpokenReply, with `tts` or without a voice (the text alone), its messages kept. */
function spokenReply(tts: TextToSpeech | null = null): { reply: SpokenReply; sent: VoiceServerMessage[]; voice: AgentVoice } {
  const sent: VoiceServerMessage[] = [];
  const transport = {
    playback: 'clock' as const,
    send: (message: VoiceServerMessage) => sent.push(message),
    sendAudio: () => true,
    mark: () => undefined,
    clear: () => sent.push({ type: 'clear' }),
  };
  const voice = new AgentVoice(transport, 250);
  const reply = new SpokenReply({
    transport,
    voice,
    tts,
    speaker: { voice: 'shubh', language: 'en-IN' },
    logger: new Logger('Voice'),
  });
  return { reply, sent, voice };
}

describe('a spoken reply', () => {
  it('is not interrupted once done: the visitor ending the call right after reply.done gets no clear', async () => {
    const { reply, sent } = spokenReply();
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
    const { reply, sent } = spokenReply();
    reply.piece('Hello.');
    reply.interrupt();
    expect((await reply.deliver('Hello.')).interrupted).toBe(true);
    expect(sent.map((message) => message.type)).toEqual(['reply', 'clear', 'reply.done']);
  });

  it('asks for each sentence with the audio still to play before it: none for the first, the first one for the next', async () => {
    const tts = new RequestsKept(25);
    const { reply, voice } = spokenReply(tts);
    reply.piece('We open at nine every morning. ');
    reply.piece('We close at six on weekdays. ');
    const delivered = reply.deliver('We open at nine every morning. We close at six on weekdays. ');
    while (tts.requests.length < 2) await new Promise(setImmediate);
    expect(tts.requests.map((request) => request.slackMs)).toEqual([0, 25 * 20]);
    for (let tick = 0; tick < 50; tick++) voice.tick();
    await expect(delivered).resolves.toMatchObject({ interrupted: false });
  });
});

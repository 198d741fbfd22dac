import { Logger } from '@nestjs/common';
import { VoicePipeline, VoiceServices } from '../../src/voice/pipeline/voice-pipeline';
import { AudioWorkQueue } from '../../src/voice/pipeline/audio-work';
import { VoiceActivity } from '../../src/voice/vad/fvad';
import { TurnDetector } from '../../src/voice/vad/turn-detector';
import type { VoiceCallContext, VoiceServerMessage } from '../../src/voice/voice-call';

/**
 * A VoicePipeline on its own, with the clock in the test's hands (`tick`): what it sends and records is kept, and
 * the services it is given (`services`) stand in for the conversation's; those it is not given are not called.
 */
export async function testPipeline(options: {
  queue?: AudioWorkQueue;
  inputSampleRate?: number;
  services?: Partial<Omit<VoiceServices, 'audioWork' | 'logger'>>;
}) {
  const recorded: Int16Array[] = [];
  const sent: VoiceServerMessage[] = [];
  const recorder = { seconds: 0, write: (left: Int16Array) => void recorded.push(left.slice()), close: () => Promise.resolve() };
  const vad = await VoiceActivity.create();
  let tick: () => void = () => undefined;
  const pipeline = new VoicePipeline(
    { access: {} as VoiceCallContext['access'], authorization: 'Bearer -', address: '127.0.0.1', inputSampleRate: options.inputSampleRate },
    {
      playback: 'clock',
      send: (message) => void sent.push(message),
      sendAudio: () => true,
      mark: () => undefined,
      clear: () => undefined,
      close: () => undefined,
    },
    {
      ...({} as Omit<VoiceServices, 'audioWork' | 'tts' | 'stt' | 'logger'>),
      tts: null,
      stt: null,
      ...options.services,
      audioWork: options.queue ?? new AudioWorkQueue(),
      logger: new Logger('Voice'),
    },
    {
      speaker: { voice: 'shubh', language: 'en-IN' },
      greeting: null,
      recorder,
      detector: new TurnDetector(vad, { endOfTurnMs: 700 }),
      release: () => vad.free(),
    },
    (onTick) => {
      tick = onTick;
      return () => (tick = () => undefined);
    },
  );
  return { pipeline, recorded, sent, tick: () => tick() };
}

/**
 * Writes the speech the voice tests stream as a microphone would (test/fixtures/voice/*.wav, committed): 16 kHz
 * mono WAV made by the built-in synthesizer, with silence before and after, so that the tests do not need the
 * optional synthesizer and hear the same speech every run; and a second of faint noise, which is not speech.
 *   node -r ./scripts/register.js scripts/voice-fixtures.ts
 */
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { ReplyLanguage } from '../src/agents/voices';
import { loadConfig } from '../src/config/config';
import { concatPcm } from '../src/voice/audio/pcm';
import { resample } from '../src/voice/audio/resample';
import { encodeWav } from '../src/voice/audio/wav';
import { BuiltinTextToSpeech } from '../src/voice/tts/builtin-tts';
import { VOICE_SAMPLE_RATE } from '../src/voice/voice-format';

export const FIXTURES = path.join(__dirname, '..', 'test', 'fixtures', 'voice');

/** What each fixture says, in which voice and language. */
export const SPEECH: Record<string, { text: string; voice: string; language: ReplyLanguage }> = {
  'en-question': { text: 'What are your opening hours on Sunday?', voice: 'anushka', language: 'en-IN' },
  'en-long': {
    text: 'Hello, I would like to know whether you deliver to Pune, and how long the delivery usually takes for a big order.',
    voice: 'karun',
    language: 'en-IN',
  },
  'hi-question': { text: 'क्या आप रविवार को खुले रहते हैं?', voice: 'vidya', language: 'hi-IN' },
};

const PADDING_SECONDS = 0.3;

/** The fixture's speech at 16 kHz with silence around it. */
export async function speak(tts: BuiltinTextToSpeech, name: string): Promise<Int16Array> {
  const { text, voice, language } = SPEECH[name];
  const chunks: Int16Array[] = [];
  for await (const chunk of tts.synthesize({ text, voice, language, signal: new AbortController().signal })) chunks.push(chunk);
  const speech = resample(concatPcm(chunks), tts.sampleRate, VOICE_SAMPLE_RATE);
  const padding = PADDING_SECONDS * VOICE_SAMPLE_RATE;
  const padded = new Int16Array(speech.length + 2 * padding);
  padded.set(speech, padding);
  return padded;
}

/** Peak of the noise fixture: a quiet room, which fvad's modes 0–2 took for speech (docs/design/voice.md §3). */
const NOISE_PEAK = 30;

/** A second of uniform noise within ±NOISE_PEAK, the same every run (a seeded generator). */
export function faintNoise(): Int16Array {
  let seed = 0x2545f491;
  const next = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
  return Int16Array.from({ length: VOICE_SAMPLE_RATE }, () => Math.round((2 * next() - 1) * NOISE_PEAK));
}

function write(name: string, pcm: Int16Array): void {
  const wav = encodeWav(pcm, VOICE_SAMPLE_RATE);
  writeFileSync(path.join(FIXTURES, `${name}.wav`), wav);
  console.log(`${name}.wav: ${(pcm.length / VOICE_SAMPLE_RATE).toFixed(2)} s, ${wav.length} bytes`);
}

async function main(): Promise<void> {
  write('noise-1s', faintNoise());
  const tts = BuiltinTextToSpeech.load(loadConfig({}));
  if (!tts) throw new Error('The built-in synthesizer (@echogarden/espeak-ng-emscripten) is not installed');
  try {
    for (const name of Object.keys(SPEECH)) {
      write(name, await speak(tts, name));
    }
  } finally {
    await tts.onApplicationShutdown();
  }
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

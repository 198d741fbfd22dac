import { resample } from '../audio/resample';
import { InvalidWav, parseWav } from '../audio/wav';
import { SpeechProviderFailure } from '../provider-failure';
import { SpeechHttp } from '../speech-http';
import { VOICE_SAMPLE_RATE } from '../voice-format';
import { bulbulVoice, sarvamLanguage } from './sarvam-voices';
import { SpeechRequest, TextToSpeech } from './text-to-speech';

/**
 * Sarvam AI's Bulbul, `POST {SARVAM_BASE_URL}/text-to-speech`: the agent's voice as its speaker on the model that
 * has it, asked for 16 kHz (the pipeline's rate); each answer is base64 WAV, one per text given.
 */
export class SarvamTextToSpeech extends TextToSpeech {
  readonly name = 'sarvam';
  readonly sampleRate = VOICE_SAMPLE_RATE;

  constructor(
    private readonly config: { baseUrl: string; apiKey: string | undefined },
    private readonly http: SpeechHttp,
  ) {
    super();
  }

  async *synthesize({ text, voice, language, signal }: SpeechRequest): AsyncIterable<Int16Array> {
    const { speaker, model, maxText } = bulbulVoice(voice);
    for (const part of splitText(text, maxText)) {
      const body = JSON.stringify({
        text: part,
        target_language_code: sarvamLanguage(language),
        speaker,
        model,
        speech_sample_rate: VOICE_SAMPLE_RATE,
      });
      const headers: Record<string, string> = { 'Content-Type': 'application/json' };
      if (this.config.apiKey) headers['api-subscription-key'] = this.config.apiKey;
      let answer: unknown;
      try {
        const exchange = await this.http.post(`${this.config.baseUrl}/text-to-speech`, headers, body, signal);
        answer = JSON.parse((await this.http.bytes(exchange, signal)).toString('utf8'));
      } catch (error) {
        if (signal.aborted) return;
        throw error instanceof SyntaxError ? new SpeechProviderFailure('invalid-response') : error;
      }
      for (const audio of audiosOf(answer)) yield audio;
    }
  }
}

/** The PCM of each WAV in `{ audios: [base64, …] }`, at the pipeline's rate. */
function audiosOf(answer: unknown): Int16Array[] {
  const audios = (answer as { audios?: unknown } | null)?.audios;
  if (!Array.isArray(audios) || audios.length === 0 || !audios.every((audio) => typeof audio === 'string')) {
    throw new SpeechProviderFailure('invalid-response');
  }
  return audios.map((audio: string) => {
    try {
      const wav = parseWav(Buffer.from(audio, 'base64'));
      if (wav.samples.length === 0) throw new SpeechProviderFailure('empty');
      return resample(wav.samples, wav.sampleRate, VOICE_SAMPLE_RATE);
    } catch (error) {
      throw error instanceof InvalidWav ? new SpeechProviderFailure('invalid-response') : error;
    }
  });
}

/** Text within the model's limit: cut at the last sentence end or space before it (code points, never mid-character). */
export function splitText(text: string, max: number): string[] {
  const parts: string[] = [];
  let rest = [...text];
  while (rest.length > max) {
    const head = rest.slice(0, max).join('');
    const cut = Math.max(head.lastIndexOf('. '), head.lastIndexOf('। '), head.lastIndexOf('? '), head.lastIndexOf('! '));
    const at = cut > 0 ? cut + 2 : head.lastIndexOf(' ') > 0 ? head.lastIndexOf(' ') + 1 : head.length;
    const taken = head.slice(0, at);
    parts.push(taken.trim());
    rest = rest.slice([...taken].length);
  }
  parts.push(rest.join('').trim());
  return parts.filter(Boolean);
}

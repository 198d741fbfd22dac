import { ReplyLanguage } from '../../agents/voices';
import { OpenAiSpeechConfig } from '../../config/config';
import { encodeWav } from '../audio/wav';
import { SpeechProviderFailure } from '../provider-failure';
import { multipart, SpeechHttp } from '../speech-http';
import { VOICE_SAMPLE_RATE } from '../voice-format';
import { SpeechToText, TranscriptionRequest } from './speech-to-text';

/** ISO-639-1, as Whisper-style APIs take the language. */
const ISO_639_1: Record<ReplyLanguage, string> = {
  'hi-IN': 'hi',
  'en-IN': 'en',
  'en-US': 'en',
  'bn-IN': 'bn',
  'gu-IN': 'gu',
  'kn-IN': 'kn',
  'ml-IN': 'ml',
  'mr-IN': 'mr',
  'od-IN': 'or',
  'pa-IN': 'pa',
  'ta-IN': 'ta',
  'te-IN': 'te',
};

/** An OpenAI-compatible `POST /audio/transcriptions` (OpenAI, speaches, vLLM): the utterance as a 16 kHz WAV. */
export class OpenAiSpeechToText extends SpeechToText {
  constructor(
    private readonly config: OpenAiSpeechConfig,
    private readonly http: SpeechHttp,
  ) {
    super();
  }

  async transcribe({ audio, language, signal }: TranscriptionRequest): Promise<string> {
    const { body, contentType } = multipart(
      { model: this.config.model, language: ISO_639_1[language], response_format: 'json' },
      { field: 'file', filename: 'audio.wav', type: 'audio/wav', data: encodeWav(audio, VOICE_SAMPLE_RATE) },
    );
    const headers: Record<string, string> = { 'Content-Type': contentType };
    if (this.config.apiKey) headers.Authorization = `Bearer ${this.config.apiKey}`;
    const exchange = await this.http.post(`${this.config.baseUrl}/audio/transcriptions`, headers, body, signal);
    return textField(await this.http.bytes(exchange, signal), 'text');
  }
}

/** A JSON answer's text field; anything else is an invalid response. */
export function textField(bytes: Buffer, field: string): string {
  let answer: unknown;
  try {
    answer = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new SpeechProviderFailure('invalid-response');
  }
  const text = (answer as Record<string, unknown> | null)?.[field];
  if (typeof text !== 'string') throw new SpeechProviderFailure('invalid-response');
  return text;
}

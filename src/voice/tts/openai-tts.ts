import { OpenAiSpeechConfig } from '../../config/config';
import { SpeechProviderFailure } from '../provider-failure';
import { failure, SpeechHttp } from '../speech-http';
import { SpeechRequest, TextToSpeech } from './text-to-speech';

/** The API's limit on `input`; the pipeline sends sentences, far shorter. */
const MAX_INPUT = 4_096;

/**
 * An OpenAI-compatible `POST /audio/speech` (OpenAI, speaches, Kokoro-FastAPI): the agent's catalog voice as
 * `voice`, raw 16-bit PCM back (`response_format: "pcm"`, TTS_SAMPLE_RATE), streamed as it arrives.
 */
export class OpenAiTextToSpeech extends TextToSpeech {
  readonly name = 'openai';
  readonly sampleRate: number;

  constructor(
    private readonly config: OpenAiSpeechConfig & { sampleRate: number },
    private readonly http: SpeechHttp,
  ) {
    super();
    this.sampleRate = config.sampleRate;
  }

  async *synthesize({ text, voice, signal }: SpeechRequest): AsyncIterable<Int16Array> {
    const headers: Record<string, string> = { 'Content-Type': 'application/json', Accept: 'audio/pcm' };
    if (this.config.apiKey) headers.Authorization = `Bearer ${this.config.apiKey}`;
    const input = [...text].slice(0, MAX_INPUT).join('');
    const body = JSON.stringify({ model: this.config.model, input, voice, response_format: 'pcm' });
    let exchange;
    try {
      exchange = await this.http.post(`${this.config.baseUrl}/audio/speech`, headers, body, signal);
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    }
    const reader: ReadableStreamDefaultReader<Uint8Array> | undefined = exchange.response.body?.getReader();
    if (!reader) throw new SpeechProviderFailure('empty');
    let carry: number | undefined; // an odd byte, the first half of the next chunk's first sample
    let samples = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const bytes: Uint8Array = carry === undefined ? value : Buffer.concat([Uint8Array.of(carry), value]);
        carry = bytes.length % 2 === 1 ? bytes[bytes.length - 1] : undefined;
        const even = bytes.length - (bytes.length % 2);
        if (even === 0) continue;
        const pcm = new Int16Array(even / 2);
        new Uint8Array(pcm.buffer).set(bytes.subarray(0, even));
        samples += pcm.length;
        yield pcm;
      }
    } catch (error) {
      if (signal.aborted) return;
      throw failure(error, signal, exchange.signal);
    } finally {
      await reader.cancel().catch(() => undefined);
    }
    if (carry !== undefined) throw new SpeechProviderFailure('invalid-response');
    if (samples === 0) throw new SpeechProviderFailure('empty');
  }
}

import { OpenAiSpeechConfig } from '../../config/config';
import { SpeechProviderFailure } from '../provider-failure';
import { failure, SpeechHttp } from '../speech-http';
import { splitText } from './sarvam-tts';
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
    for (const input of splitText(text, MAX_INPUT)) {
      const spoken = yield* this.speak(input, voice, signal);
      if (!spoken) return;
    }
  }

  /** One request's PCM, chunk by chunk; false when the caller aborted it. */
  private async *speak(input: string, voice: string, signal: AbortSignal): AsyncGenerator<Int16Array, boolean> {
    const headers: Record<string, string> = { 'Content-Type': 'application/json', Accept: 'audio/pcm' };
    if (this.config.apiKey) headers.Authorization = `Bearer ${this.config.apiKey}`;
    const body = JSON.stringify({ model: this.config.model, input, voice, response_format: 'pcm' });
    let exchange;
    try {
      exchange = await this.http.post(`${this.config.baseUrl}/audio/speech`, headers, body, signal);
    } catch (error) {
      if (signal.aborted) return false;
      throw error;
    }
    if (!isAudio(exchange.response.headers.get('content-type'))) {
      await exchange.response.body?.cancel().catch(() => undefined);
      throw new SpeechProviderFailure('invalid-response');
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
      if (signal.aborted) return false;
      throw failure(error, signal, exchange.signal);
    } finally {
      // Ends the request when the consumer stops early (an interruption) or the body failed.
      await reader.cancel().catch(() => undefined);
    }
    if (carry !== undefined) throw new SpeechProviderFailure('invalid-response');
    if (samples === 0) throw new SpeechProviderFailure('empty');
    return true;
  }
}

/** A page or a JSON error answered with 200 (a proxy, a misconfigured server) would otherwise be played as noise. */
function isAudio(contentType: string | null): boolean {
  return !contentType || !/^(text\/|application\/(problem\+)?json)/i.test(contentType);
}

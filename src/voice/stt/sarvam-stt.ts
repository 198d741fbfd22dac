import { sarvamLanguage } from '../tts/sarvam-voices';
import { encodeWav } from '../audio/wav';
import { multipart, SpeechHttp } from '../speech-http';
import { VOICE_SAMPLE_RATE } from '../voice-format';
import { textField } from './openai-stt';
import { SpeechToText, TranscriptionRequest } from './speech-to-text';

/** Sarvam AI's `POST {SARVAM_BASE_URL}/speech-to-text` (Saaras, transcribing in the agent's language). */
export class SarvamSpeechToText extends SpeechToText {
  constructor(
    private readonly config: { baseUrl: string; apiKey: string | undefined },
    private readonly http: SpeechHttp,
  ) {
    super();
  }

  async transcribe({ audio, language, signal }: TranscriptionRequest): Promise<string> {
    const { body, contentType } = multipart(
      { model: 'saaras:v3', mode: 'transcribe', language_code: sarvamLanguage(language) },
      { field: 'file', filename: 'audio.wav', type: 'audio/wav', data: encodeWav(audio, VOICE_SAMPLE_RATE) },
    );
    const headers: Record<string, string> = { 'Content-Type': contentType };
    if (this.config.apiKey) headers['api-subscription-key'] = this.config.apiKey;
    const exchange = await this.http.post(`${this.config.baseUrl}/speech-to-text`, headers, body, signal);
    return textField(await this.http.bytes(exchange, signal), 'transcript');
  }
}

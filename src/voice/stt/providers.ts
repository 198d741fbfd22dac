import { AppConfig } from '../../config/config';
import { ProviderHttp } from '../../conversations/answering/provider-http';
import { SpeechHttp } from '../speech-http';
import { OpenAiSpeechToText } from './openai-stt';
import { SarvamSpeechToText } from './sarvam-stt';
import { SpeechToText } from './speech-to-text';

/** Who listens, after STT_PROVIDER; null for none (the browser recognises speech and sends text). */
export function createSpeechToText(config: AppConfig, http: ProviderHttp): SpeechToText | null {
  const speechHttp = new SpeechHttp(http, config.voice.sttTimeoutMs);
  switch (config.voice.sttProvider) {
    case 'openai':
      return new OpenAiSpeechToText(config.voice.openAiStt, speechHttp);
    case 'sarvam':
      return new SarvamSpeechToText(config.voice.sarvam, speechHttp);
    case 'none':
      return null;
  }
}

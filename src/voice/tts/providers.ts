import { AppConfig } from '../../config/config';
import { ProviderHttp } from '../../conversations/answering/provider-http';
import { SpeechHttp } from '../speech-http';
import { OpenAiTextToSpeech } from './openai-tts';
import { SarvamTextToSpeech } from './sarvam-tts';
import { TextToSpeech } from './text-to-speech';

/** Who speaks, after TTS_PROVIDER; null for none (or a built-in voice that is not installed). */
export function createTextToSpeech(config: AppConfig, http: ProviderHttp, builtin: () => TextToSpeech | null): TextToSpeech | null {
  const speechHttp = new SpeechHttp(http, config.voice.ttsTimeoutMs);
  switch (config.voice.ttsProvider) {
    case 'builtin':
      return builtin();
    case 'openai':
      return new OpenAiTextToSpeech(config.voice.openAiTts, speechHttp);
    case 'sarvam':
      return new SarvamTextToSpeech(config.voice.sarvam, speechHttp);
    case 'none':
      return null;
  }
}

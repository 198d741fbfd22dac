import { Provider } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ProviderHttp } from '../conversations/answering/provider-http';
import { createSpeechToText } from './stt/providers';
import { BuiltinTextToSpeech } from './tts/builtin-tts';
import { createTextToSpeech } from './tts/providers';

/** Who speaks (TTS_PROVIDER): a TextToSpeech, or null when there is no voice (none configured, or no built-in synthesizer installed). */
export const TEXT_TO_SPEECH = Symbol('TEXT_TO_SPEECH');
/** Who listens (STT_PROVIDER): a SpeechToText, or null (the browser sends text). */
export const SPEECH_TO_TEXT = Symbol('SPEECH_TO_TEXT');

export const speechProviders: Provider[] = [
  {
    provide: TEXT_TO_SPEECH,
    inject: [APP_CONFIG, ProviderHttp],
    useFactory: (config: AppConfig, http: ProviderHttp) => createTextToSpeech(config, http, () => BuiltinTextToSpeech.load(config)),
  },
  {
    provide: SPEECH_TO_TEXT,
    inject: [APP_CONFIG, ProviderHttp],
    useFactory: (config: AppConfig, http: ProviderHttp) => createSpeechToText(config, http),
  },
];

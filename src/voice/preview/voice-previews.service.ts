import { ForbiddenException, Inject, Injectable, Logger, NotFoundException, ServiceUnavailableException } from '@nestjs/common';
import { CallerAccount } from '../../auth/caller-account';
import { mayUseVoice, ReplyLanguage, VOICES } from '../../agents/voices';
import { logProviderFailure } from '../../conversations/answering/failure-log';
import { resample } from '../audio/resample';
import { Mp3Encoding } from '../recording/mp3-encoding';
import { TEXT_TO_SPEECH } from '../speech-providers';
import { TextToSpeech } from '../tts/text-to-speech';
import { VOICE_SAMPLE_RATE } from '../voice-format';
import { PREVIEW_SENTENCES } from './preview-sentences';

const unavailable = () => new ServiceUnavailableException('No text-to-speech is available to speak this voice right now');

/**
 * The voice samples of the dashboard's "hear this voice" button: the sentence of the language in the voice,
 * from the configured text-to-speech, as MP3; made once per voice, language and provider and kept (a failed one
 * is not kept, so the next request tries again).
 */
@Injectable()
export class VoicePreviews {
  private readonly logger = new Logger('Voice');
  private readonly samples = new Map<string, Promise<Buffer>>();

  constructor(
    @Inject(TEXT_TO_SPEECH) private readonly tts: TextToSpeech | null,
    private readonly mp3: Mp3Encoding,
  ) {}

  /** 404 for a voice not in the catalog, 403 for one this account may not use, 503 without a voice. */
  preview(account: CallerAccount, voiceId: string, language: ReplyLanguage): Promise<Buffer> {
    if (!VOICES.some((voice) => voice.id === voiceId)) throw new NotFoundException(`Voice ${voiceId.slice(0, 64)} not found`);
    if (!mayUseVoice(voiceId, account)) throw new ForbiddenException(`The voice ${voiceId} is reserved for the platform's own account`);
    const tts = this.tts;
    if (!tts) throw unavailable();
    const key = `${tts.name}|${voiceId}|${language}`;
    let sample = this.samples.get(key);
    if (!sample) {
      sample = this.make(tts, voiceId, language);
      this.samples.set(key, sample);
      sample.catch(() => this.samples.delete(key));
    }
    return sample;
  }

  private async make(tts: TextToSpeech, voice: string, language: ReplyLanguage): Promise<Buffer> {
    const chunks: Int16Array[] = [];
    try {
      const signal = new AbortController().signal;
      for await (const chunk of tts.synthesize({ text: PREVIEW_SENTENCES[language], voice, language, signal })) chunks.push(chunk);
    } catch (error) {
      logProviderFailure(this.logger, error, 'No voice preview; the dashboard got a 503');
      throw unavailable();
    }
    const pcm = new Int16Array(chunks.reduce((total, chunk) => total + chunk.length, 0));
    chunks.reduce((offset, chunk) => (pcm.set(chunk, offset), offset + chunk.length), 0);
    return this.mp3.encodeMono(resample(pcm, tts.sampleRate, VOICE_SAMPLE_RATE));
  }
}

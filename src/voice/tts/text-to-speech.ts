import { ReplyLanguage } from '../../agents/voices';

export interface SpeechRequest {
  text: string;
  /** A voice id of the catalog (src/agents/voices.ts). */
  voice: string;
  language: ReplyLanguage;
  /** Aborted when the visitor interrupts or the turn is abandoned: the synthesis stops and the iteration ends. */
  signal: AbortSignal;
  /**
   * How long the listener can wait for this audio without hearing a gap: the audio still to play before it (0, the
   * default: they are waiting now). A provider that queues requests serves the one with the least slack first.
   */
  slackMs?: number;
}

/**
 * Who speaks (TTS_PROVIDER). Yields 16-bit mono PCM at `sampleRate`, chunk by chunk as it is produced, so that
 * the first audio leaves before the sentence is finished. Throws SpeechProviderFailure when it cannot speak.
 */
export abstract class TextToSpeech {
  /** Which provider this is (the preview cache's key). */
  abstract readonly name: string;
  abstract readonly sampleRate: number;
  abstract synthesize(request: SpeechRequest): AsyncIterable<Int16Array>;
}

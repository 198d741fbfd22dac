import { ReplyLanguage } from '../../agents/voices';

export interface TranscriptionRequest {
  /** One utterance: 16-bit mono PCM at VOICE_SAMPLE_RATE (16 kHz), at most 30 s. */
  audio: Int16Array;
  /** The agent's language: what the visitor is expected to speak. */
  language: ReplyLanguage;
  signal: AbortSignal;
}

/**
 * Who listens (STT_PROVIDER): the text of one utterance ('' when nothing was said). Throws
 * SpeechProviderFailure when it cannot transcribe.
 */
export abstract class SpeechToText {
  abstract transcribe(request: TranscriptionRequest): Promise<string>;
}

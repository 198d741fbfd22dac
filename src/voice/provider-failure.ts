import { FailureKind, ProviderFailure } from '../conversations/answering/answerer';

/**
 * Why a speech provider (text-to-speech or speech-to-text) gave nothing usable; deliberately only a kind and an
 * HTTP status, as for the reply providers: provider text, audio and bodies are never kept or logged.
 */
export class SpeechProviderFailure extends ProviderFailure {
  constructor(kind: FailureKind, status?: number) {
    super(kind, status, 'The speech provider');
  }
}

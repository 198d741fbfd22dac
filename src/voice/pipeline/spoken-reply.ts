import { Logger } from '@nestjs/common';
import { ReplyLanguage } from '../../agents/voices';
import { logProviderFailure } from '../../conversations/answering/failure-log';
import type { Delivery } from '../../conversations/conversation-replies.service';
import { Resampler } from '../audio/resample';
import { SentenceCutter } from '../sentences';
import { TextToSpeech } from '../tts/text-to-speech';
import { VOICE_SAMPLE_RATE } from '../voice-format';
import type { CallTransport } from '../voice-call';
import { AgentVoice } from './agent-voice';
import type { TurnStage } from './turn-timing';

/** What the visitor reads when the agent's voice fails in the middle of a reply (its text still arrives). */
export const VOICE_UNAVAILABLE = 'The agent cannot speak right now; its reply is shown as text.';

export interface SpokenReplyOptions {
  /** Where its text messages go (the browser protocol's `reply`, `reply.done`, `error`). */
  transport: Pick<CallTransport, 'send'>;
  voice: AgentVoice;
  /** Null: no text-to-speech (the reply is text only). */
  tts: TextToSpeech | null;
  speaker: { voice: string; language: ReplyLanguage };
  /** Notes when the reply's first text came, its first synthesis started and its first audio came (the turn's latency). */
  mark?: (stage: Extract<TurnStage, 'firstTextMs' | 'synthesisMs' | 'firstSpeechMs'>) => void;
  logger: Logger;
}

/**
 * One reply of the agent, spoken: its pieces are shown as they come (`reply`), cut into sentences, each
 * synthesised as soon as it is complete while the previous one plays, and queued on the agent's voice. One abort
 * signal stops everything at once when the visitor interrupts: the answerer, the synthesis, and the audio not yet
 * played (`clear`). `deliver` resolves, once the audio has played or been cut off, with what the visitor heard.
 */
export class SpokenReply {
  private readonly controller = new AbortController();
  private readonly cutter = new SentenceCutter();
  private streamed = '';
  private speaking: Promise<void> = Promise.resolve();
  private voiceFailed = false;
  private startSeconds: number | undefined;
  /** `reply.done` has been sent: all of it was heard or it was cut off, and nothing is left to interrupt. */
  private done = false;
  /** The call is ending: no sentence after the one being spoken. */
  private concluding = false;

  constructor(private readonly options: SpokenReplyOptions) {
    options.voice.reset();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get interrupted(): boolean {
    return this.controller.signal.aborted;
  }

  /** A piece of the reply as the answerer produces it. */
  readonly piece = (piece: string): void => {
    if (this.interrupted) return;
    this.options.mark?.('firstTextMs');
    this.streamed += piece;
    this.options.transport.send({ type: 'reply', text: piece });
    for (const sentence of this.cutter.push(piece)) this.speak(sentence);
  };

  /**
   * Words said between the reply's sentences that are not part of its text (a tool's `speakWhileRunning`, while it
   * runs): spoken in turn, but neither shown as the reply nor kept in what the visitor heard of it.
   */
  readonly interject = (words: string): void => {
    if (!this.interrupted) this.speak(words, '');
  };

  /** The reply is complete (`produced`: the apology when the answerer failed): resolves once it was heard or cut off. */
  readonly deliver = async (produced: string): Promise<Delivery> => {
    if (!this.interrupted) {
      if (produced !== this.streamed) {
        // Not what was streamed: the apology of a failed answerer, said instead of the rest.
        this.cutter.flush();
        this.options.transport.send({ type: 'reply', text: produced });
        this.speak(produced);
      } else {
        for (const sentence of this.cutter.flush()) this.speak(sentence);
      }
      await this.speaking;
      await this.options.voice.idle();
    }
    const interrupted = this.interrupted;
    const text = interrupted ? this.options.voice.heard() : produced;
    this.done = true;
    this.options.transport.send({ type: 'reply.done', text, interrupted });
    return { text, interrupted, startSeconds: this.startSeconds };
  };

  /** Told each tick while this reply is the one playing, with the recording's clock: notes where its first frame is. */
  played(recordingSeconds: number): void {
    if (this.startSeconds === undefined && this.options.voice.started) this.startSeconds = recordingSeconds;
  }

  /** The visitor interrupted: everything stops, the client drops what it has not played. */
  interrupt(): void {
    if (this.interrupted || this.done) return;
    this.controller.abort();
    this.options.voice.clear();
  }

  /** The call is ending: the sentence being spoken plays to its end, nothing after it is said. */
  conclude(): void {
    this.concluding = true;
  }

  /** Resolves once what it has to say has been synthesised and played (or cut off). */
  async spoken(): Promise<void> {
    await this.speaking;
    await this.options.voice.idle();
  }

  /** Says a text that is not a reply of the answerer (the greeting, an apology); resolves, once heard or cut off, with what was heard. */
  async say(text: string): Promise<Delivery> {
    this.options.transport.send({ type: 'reply', text });
    this.speak(text);
    await this.speaking;
    await this.options.voice.idle();
    const interrupted = this.interrupted;
    const heard = interrupted ? this.options.voice.heard() : text;
    this.done = true;
    this.options.transport.send({ type: 'reply.done', text: heard, interrupted });
    return { text: heard, interrupted, startSeconds: this.startSeconds };
  }

  /** Says `sentence` after what is being said; `text` is what the visitor heard of it once played (the sentence itself by default). */
  private speak(sentence: string, text = sentence): void {
    if (!this.options.tts || !sentence.trim()) return;
    this.speaking = this.speaking.then(() => this.synthesize(this.options.tts!, sentence, text));
  }

  private async synthesize(tts: TextToSpeech, sentence: string, text: string): Promise<void> {
    if (this.interrupted || this.voiceFailed || this.concluding) return;
    const { voice, speaker, transport, logger } = this.options;
    const resampler = new Resampler(tts.sampleRate, VOICE_SAMPLE_RATE);
    this.options.mark?.('synthesisMs');
    try {
      const speech = { text: sentence, ...speaker, signal: this.signal, slackMs: voice.aheadMs };
      for await (const chunk of tts.synthesize(speech)) {
        if (this.interrupted) return;
        this.options.mark?.('firstSpeechMs');
        voice.enqueue(resampler.process(chunk));
        await voice.room();
      }
      if (!this.interrupted) {
        voice.enqueue(resampler.flush()); // the filter's last samples of the sentence
        voice.endSentence(text);
      }
    } catch (error) {
      if (this.interrupted) return;
      this.voiceFailed = true;
      voice.flush(); // what was said of the sentence plays to its end
      logProviderFailure(logger, error, 'The agent could not speak; its reply went as text');
      transport.send({ type: 'error', message: VOICE_UNAVAILABLE });
    }
  }
}

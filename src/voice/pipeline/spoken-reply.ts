import { Logger } from '@nestjs/common';
import { ReplyLanguage } from '../../agents/voices';
import { logProviderFailure } from '../../conversations/answering/failure-log';
import type { Delivery } from '../../conversations/conversation-replies.service';
import { Resampler } from '../audio/resample';
import { SentenceCutter } from '../sentences';
import { TextToSpeech } from '../tts/text-to-speech';
import { VOICE_SAMPLE_RATE } from '../voice-format';
import type { VoiceLink } from '../voice-call';
import { AgentVoice } from './agent-voice';
import type { TurnStage } from './turn-timing';

/** What the visitor reads when the agent's voice fails in the middle of a reply (its text still arrives). */
export const VOICE_UNAVAILABLE = 'The agent cannot speak right now; its reply is shown as text.';

export interface SpokenReplyOptions {
  link: VoiceLink;
  voice: AgentVoice;
  /** Null: no text-to-speech (the reply is text only). */
  tts: TextToSpeech | null;
  speaker: { voice: string; language: ReplyLanguage };
  /** The recording's clock now, in seconds (the reply's startSeconds is read when its first frame plays). */
  recordingSeconds: () => number;
  /** Sends what may be sent of the agent's voice now (the first frames without waiting for the clock's tick). */
  sendAhead: () => void;
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
    this.options.link.send({ type: 'reply', text: piece });
    for (const sentence of this.cutter.push(piece)) this.speak(sentence);
  };

  /** The reply is complete (`produced`: the apology when the answerer failed): resolves once it was heard or cut off. */
  readonly deliver = async (produced: string): Promise<Delivery> => {
    if (!this.interrupted) {
      if (produced !== this.streamed) {
        // Not what was streamed: the apology of a failed answerer, said instead of the rest.
        this.cutter.flush();
        this.options.link.send({ type: 'reply', text: produced });
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
    this.options.link.send({ type: 'reply.done', text, interrupted });
    return { text, interrupted, startSeconds: this.startSeconds };
  };

  /** Called each tick while this reply is the one playing: notes when its first frame is heard. */
  played(): void {
    if (this.startSeconds === undefined && this.options.voice.started) this.startSeconds = this.options.recordingSeconds();
  }

  /** The visitor interrupted: everything stops, the client drops what it has not played. */
  interrupt(): void {
    if (this.interrupted || this.done) return;
    this.controller.abort();
    this.options.voice.clear();
    this.options.link.send({ type: 'clear' });
  }

  /** Says a text that is not a reply of the answerer (the greeting, an apology); resolves, once heard or cut off, with what was heard. */
  async say(text: string): Promise<Delivery> {
    this.options.link.send({ type: 'reply', text });
    this.speak(text);
    await this.speaking;
    await this.options.voice.idle();
    const interrupted = this.interrupted;
    const heard = interrupted ? this.options.voice.heard() : text;
    this.done = true;
    this.options.link.send({ type: 'reply.done', text: heard, interrupted });
    return { text: heard, interrupted, startSeconds: this.startSeconds };
  }

  private speak(sentence: string): void {
    if (!this.options.tts || !sentence.trim()) return;
    this.speaking = this.speaking.then(() => this.synthesize(this.options.tts!, sentence));
  }

  private async synthesize(tts: TextToSpeech, sentence: string): Promise<void> {
    if (this.interrupted || this.voiceFailed) return;
    const { voice, speaker, link, logger } = this.options;
    const resampler = new Resampler(tts.sampleRate, VOICE_SAMPLE_RATE);
    this.options.mark?.('synthesisMs');
    try {
      for await (const chunk of tts.synthesize({ text: sentence, ...speaker, signal: this.signal })) {
        if (this.interrupted) return;
        this.options.mark?.('firstSpeechMs');
        voice.enqueue(resampler.process(chunk));
        this.options.sendAhead();
        await voice.room();
      }
      if (!this.interrupted) {
        voice.enqueue(resampler.flush()); // the filter's last samples of the sentence
        voice.endSentence(sentence);
      }
    } catch (error) {
      if (this.interrupted) return;
      this.voiceFailed = true;
      logProviderFailure(logger, error, 'The agent could not speak; its reply went as text');
      link.send({ type: 'error', message: VOICE_UNAVAILABLE });
    }
  }
}

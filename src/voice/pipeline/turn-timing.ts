import type { TurnLatency } from '../../calls/call.entity';

/**
 * The stages of a turn's way to its reply, in their order, each noted in ms since the turn ended (the debug log's
 * `voiceTurn`): speech-to-text answered (0 for a typed message); the visitor's message accepted; the model's first
 * piece of the reply; the reply's first synthesis request started; its first synthesised audio came; the reply's
 * first frame sent to the visitor.
 */
export const TURN_STAGES = ['heardMs', 'acceptedMs', 'firstTextMs', 'synthesisMs', 'firstSpeechMs', 'firstAudioMs'] as const;
export type TurnStage = (typeof TURN_STAGES)[number];

const tenth = (ms: number) => Math.round(ms * 10) / 10;

/**
 * One turn's timing, from the moment it ended (the turn detector's utterance, or a text frame taken) to the first
 * frame of its reply sent: each stage is a performance.now() noted once, the first time it is reached, and nothing
 * else is done on the way. One instance per turn, carried along with it (turns may overlap: one is transcribed while
 * the previous is answered).
 */
export class TurnTiming {
  private readonly from = performance.now();
  private readonly stages: Partial<Record<TurnStage, number>> = {};

  /** `endOfTurnMs`: the silence the turn detector waited for, in audio time (it is before `from`). */
  private constructor(private readonly endOfTurnMs: number) {}

  /** A spoken utterance that ended after `silenceMs` of silence; its transcription starts now. */
  static spoken(silenceMs: number): TurnTiming {
    return new TurnTiming(silenceMs);
  }

  /** A typed message (a text frame): no silence waited, nothing to transcribe. */
  static typed(): TurnTiming {
    const timing = new TurnTiming(0);
    timing.stages.heardMs = 0;
    return timing;
  }

  /** The first time a stage is reached counts. */
  mark(stage: TurnStage): void {
    this.stages[stage] ??= performance.now() - this.from;
  }

  /** The reply's first frame was sent: noted, and the stages so far, for the debug log. */
  firstAudio(): Partial<Record<TurnStage, number>> {
    this.mark('firstAudioMs');
    return Object.fromEntries(Object.entries(this.stages).map(([stage, ms]) => [stage, tenth(ms)]));
  }

  /** Where the turn's time went (contract section 19); undefined unless every stage was reached (its first audio sent). */
  latency(): TurnLatency | undefined {
    const { heardMs, acceptedMs, firstTextMs, synthesisMs, firstSpeechMs, firstAudioMs } = this.stages;
    if (
      heardMs === undefined ||
      acceptedMs === undefined ||
      firstTextMs === undefined ||
      synthesisMs === undefined ||
      firstSpeechMs === undefined ||
      firstAudioMs === undefined
    )
      return undefined;
    return {
      endOfTurn: tenth(this.endOfTurnMs),
      transcription: tenth(heardMs),
      firstToken: tenth(firstTextMs - acceptedMs),
      firstAudio: tenth(firstSpeechMs - synthesisMs),
      total: tenth(this.endOfTurnMs + firstAudioMs),
    };
  }
}

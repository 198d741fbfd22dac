import { concatPcm } from '../audio/pcm';
import { FRAME_MS } from '../voice-format';

export type TurnEvent =
  /** The visitor began to speak (after `startMs` of speech). */
  | { type: 'speech-start' }
  /** The utterance under way has had `bargeInMs` of speech: enough to interrupt the agent. Once per utterance. */
  | { type: 'barge-in' }
  /**
   * An utterance ended (`endOfTurnMs` of silence), or was cut at `maxUtteranceMs` of audio, pre-roll included (`cut`):
   * its audio, and the silence heard since its last speech (`silenceMs`, audio time: the wait for the end of the turn;
   * for a cut one, 0 while the visitor spoke, or the pause so far).
   */
  | { type: 'utterance'; audio: Int16Array; cut: boolean; silenceMs: number };

export interface TurnDetectorOptions {
  endOfTurnMs: number;
  startMs?: number;
  bargeInMs?: number;
  maxUtteranceMs?: number;
  preRollMs?: number;
  /** Silence kept at the end of an utterance's audio. */
  tailMs?: number;
}

type State = 'quiet' | 'starting' | 'speaking' | 'stopping';

/**
 * Turn-taking from a voice activity detector's verdict on each 20 ms frame, as Pipecat's VADAnalyzer does it
 * (quiet → starting → speaking → stopping): speech counts once it lasted `startMs`, and the utterance ends after
 * `endOfTurnMs` of silence. The audio before the start (`preRollMs`) is kept, since the detector is late by
 * `startMs` and the first syllable would be lost. Frames are held only while someone speaks: silence, however
 * long, holds no more than the pre-roll.
 */
export class TurnDetector {
  private readonly endFrames: number;
  private readonly startFrames: number;
  private readonly bargeInFrames: number;
  private readonly maxFrames: number;
  private readonly preRollFrames: number;
  private readonly tailFrames: number;
  private state: State = 'quiet';
  /** Quiet: the last pre-roll frames. Otherwise: the utterance so far. */
  private frames: Int16Array[] = [];
  private run = 0;
  private voiced = 0;
  private bargedIn = false;

  constructor(
    private readonly vad: { isSpeech(frame: Int16Array): boolean },
    options: TurnDetectorOptions,
  ) {
    const frames = (ms: number) => Math.max(1, Math.round(ms / FRAME_MS));
    this.endFrames = frames(options.endOfTurnMs);
    this.startFrames = frames(options.startMs ?? 100);
    this.bargeInFrames = frames(options.bargeInMs ?? 300);
    this.maxFrames = frames(options.maxUtteranceMs ?? 30_000);
    this.preRollFrames = Math.round((options.preRollMs ?? 300) / FRAME_MS);
    this.tailFrames = Math.round((options.tailMs ?? 100) / FRAME_MS);
  }

  /** How long the speech had lasted when `speech-start` is told (it began that long before the frame that tells it). */
  get startDelayMs(): number {
    return this.startFrames * FRAME_MS;
  }

  /** Frames held now (the pre-roll while quiet, the utterance while speaking). */
  get heldFrames(): number {
    return this.frames.length;
  }

  /** Takes one 20 ms frame (a copy is kept when needed: the caller may reuse its buffer). */
  push(frame: Int16Array): TurnEvent[] {
    const speech = this.vad.isSpeech(frame);
    this.frames.push(frame.slice());
    const events: TurnEvent[] = [];
    if (this.state === 'quiet') {
      if (!speech) {
        if (this.frames.length > this.preRollFrames) this.frames.shift();
        return events;
      }
      this.state = 'starting';
      this.run = this.voiced = 0;
      this.bargedIn = false;
    }
    if (speech) this.voiced++;
    if (this.state === 'starting') {
      if (!speech) {
        this.state = 'quiet';
        this.frames.splice(0, Math.max(0, this.frames.length - this.preRollFrames));
        return events;
      }
      if (++this.run < this.startFrames) return events;
      this.state = 'speaking';
      this.run = 0;
      events.push({ type: 'speech-start' });
    } else if (speech) {
      this.state = 'speaking';
      this.run = 0;
    } else {
      this.state = 'stopping';
      this.run++;
      if (this.run >= this.endFrames) {
        events.push(this.finish(false));
        return events;
      }
    }
    if (!this.bargedIn && this.voiced >= this.bargeInFrames) {
      this.bargedIn = true;
      events.push({ type: 'barge-in' });
    }
    if (this.frames.length >= this.maxFrames) events.push(this.finish(true)); // pre-roll included: what is transcribed
    return events;
  }

  /** The utterance's audio (trailing silence cut to `tailMs`), and back to quiet. */
  private finish(cut: boolean): TurnEvent {
    const silent = this.state === 'stopping' ? this.run : 0;
    const audio = concatPcm(this.frames.slice(0, this.frames.length - Math.max(0, silent - this.tailFrames)));
    this.state = 'quiet';
    this.frames = [];
    this.run = this.voiced = 0;
    return { type: 'utterance', audio, cut, silenceMs: silent * FRAME_MS };
  }
}

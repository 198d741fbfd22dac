import type { CallTransport } from '../voice-call';
import { FRAME_MS, FRAME_SAMPLES } from '../voice-format';

/**
 * Frames sent ahead of what the far end has played: enough to ride out network jitter, little to drop on a
 * `clear`. A browser plays by the clock, so 10 frames; a carrier says what played only every MARK_EVERY_FRAMES,
 * so it is sent up to a second ahead (the contract's bound), counted against the marks it echoed.
 */
export const LEAD_FRAMES = 10;
export const MARKS_LEAD_FRAMES = 50;
/** With `marks` playback, a mark after every this many frames (and at each sentence's end): what played is known to 200 ms. */
export const MARK_EVERY_FRAMES = 10;

/** A sentence's place in the agent's audio, in frames since the reply's first. */
interface SpokenSentence {
  text: string;
  firstFrame: number;
  endFrame: number;
}

/** A frame sent, on its way into the recording, with the reply (generation) it belongs to. */
interface SentFrame {
  frame: Int16Array;
  generation: number;
}

/** Where the agent's voice goes: the call's transport (sendAudio may refuse a frame: it is sent later). */
export type VoiceSink = Pick<CallTransport, 'playback' | 'sendAudio' | 'mark' | 'clear'>;

const MARK_NAME = /^(\d{1,9}):(\d{1,9})$/;

/**
 * The agent's voice on one call: 20 ms frames waiting to be sent, the frames sent ahead of the far end's playback,
 * and which sentence each belongs to, so that an interruption knows what the visitor heard. It is paced by the
 * voice clock: each tick the recording's right channel takes the next frame sent (the mixing clock), and the next
 * frames are sent, at most the lead ahead of what has played. What has played comes from the clock (`clock`
 * playback: the frame the recording takes is the one playing) or from the marks the transport echoes (`marks`:
 * each mark's name carries the reply's generation and the frames sent before it; an echo of an earlier
 * generation, such as those a carrier sends for every mark pending when it is told to clear, is ignored). The
 * frames still to send are bounded by the reply's synthesis, which waits (`room`) while more than a few seconds
 * are queued.
 */
export class AgentVoice {
  private readonly leadFrames: number;
  private queued: Int16Array[] = [];
  /** Sent and not yet taken by the recording, oldest first. */
  private unrecorded: SentFrame[] = [];
  private partial = new Int16Array(FRAME_SAMPLES);
  private partialLength = 0;
  private sentences: SpokenSentence[] = [];
  private sentenceStart = 0;
  /** The reply's generation: a new reply, or a clear, starts the next; marks carry it. */
  private generation = 0;
  /** Of the reply: frames queued (the next sentence's first frame), sent, played, and whether the recording took one. */
  private framesQueued = 0;
  private framesSent = 0;
  private framesPlayed = 0;
  private recordedAny = false;
  /** Of the reply (`marks` playback): the frame counts after which a mark is due (each flush), and that of the last mark sent. */
  private markPoints: number[] = [];
  private lastMark = 0;
  private roomWaiters: (() => void)[] = [];
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly sink: VoiceSink,
    private readonly maxQueuedFrames: number,
  ) {
    this.leadFrames = sink.playback === 'marks' ? MARKS_LEAD_FRAMES : LEAD_FRAMES;
  }

  /**
   * Appends the agent's speech (16 kHz PCM, any length), cut into frames (the last partial one kept for the next),
   * and sends what may be sent at once, so that a reply's first audio does not wait for the next tick.
   */
  enqueue(pcm: Int16Array): void {
    let offset = 0;
    while (offset < pcm.length) {
      const take = Math.min(FRAME_SAMPLES - this.partialLength, pcm.length - offset);
      this.partial.set(pcm.subarray(offset, offset + take), this.partialLength);
      this.partialLength += take;
      offset += take;
      if (this.partialLength === FRAME_SAMPLES) this.pushFrame();
    }
    this.sendAhead();
  }

  /** The sentence whose audio was enqueued since the previous one ends here (its last partial frame padded). */
  endSentence(text: string): void {
    this.flush();
    this.sentences.push({ text, firstFrame: this.sentenceStart, endFrame: this.framesQueued });
    this.sentenceStart = this.framesQueued;
  }

  /**
   * The audio enqueued so far is whole (a sentence's end, or what there is of one whose synthesis failed): its last
   * partial frame is padded, and with `marks` playback a mark follows its last frame, so that its end is heard of.
   */
  flush(): void {
    if (this.partialLength > 0) {
      this.partial.fill(0, this.partialLength);
      this.pushFrame();
    }
    if (this.sink.playback !== 'marks' || this.framesQueued === 0) return this.sendAhead();
    if (this.framesSent === this.framesQueued) return this.markSent(); // its last frame went already
    if (this.markPoints.at(-1) !== this.framesQueued) this.markPoints.push(this.framesQueued);
    this.sendAhead();
  }

  /** Resolves once there is room for more speech (synthesis waits here rather than queueing without bound). */
  room(): Promise<void> {
    if (this.queued.length < this.maxQueuedFrames) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  /** Resolves once everything enqueued so far has been played (or dropped by `clear`). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * One tick of the clock: returns the frame the recording takes now (undefined: silence), which with `clock`
   * playback is the one the far end plays, and sends the next ones while fewer than the lead are ahead of it.
   */
  tick(): Int16Array | undefined {
    const taken = this.unrecorded.shift();
    if (taken && taken.generation === this.generation) {
      this.recordedAny = true;
      if (this.sink.playback === 'clock') this.framesPlayed++;
    }
    this.sendAhead();
    this.wakeWaiters();
    return taken?.frame;
  }

  /** A mark came back (`marks` playback): the frames sent before it have played, unless it is of an earlier generation. */
  played(mark: string): void {
    const match = MARK_NAME.exec(mark);
    if (!match || Number(match[1]) !== this.generation) return;
    this.framesPlayed = Math.min(this.framesSent, Math.max(this.framesPlayed, Number(match[2])));
    this.sendAhead();
    this.wakeWaiters();
  }

  /** How long the audio enqueued and not yet played lasts: the silence a sentence synthesised now may take to come. */
  get aheadMs(): number {
    const frames = this.queued.length + this.framesSent - this.framesPlayed + this.partialLength / FRAME_SAMPLES;
    return frames * FRAME_MS;
  }

  /** Whether any of the reply has reached the recording yet (its first frame): where it starts in it. */
  get started(): boolean {
    return this.recordedAny;
  }

  /**
   * What the visitor has heard of the reply: every sentence played to its end, and of the one being played its
   * first words in proportion to the frames played.
   */
  heard(): string {
    const parts: string[] = [];
    for (const sentence of this.sentences) {
      if (sentence.endFrame <= this.framesPlayed) parts.push(sentence.text);
      else if (sentence.firstFrame < this.framesPlayed) parts.push(firstWords(sentence, this.framesPlayed));
      else break;
    }
    return parts.filter(Boolean).join(' ').trim();
  }

  /** The visitor interrupted: every frame not yet played is dropped, here and (told to clear) at the far end. */
  clear(): void {
    this.drop();
    this.unrecorded = [];
    this.framesSent = this.framesPlayed; // what was sent and not played is gone
    this.generation++; // the marks still pending are not playback
    this.sink.clear();
    this.wakeWaiters();
  }

  /**
   * A new reply: it counts its frames from zero, in a generation of its own. What the previous one sent and the
   * recording has not taken yet (a carrier's marks may come back before the recording's clock took the last frames)
   * is still recorded.
   */
  reset(): void {
    this.drop();
    this.generation++;
    this.sentences = [];
    this.sentenceStart = this.framesQueued = this.framesSent = this.framesPlayed = this.lastMark = 0;
    this.recordedAny = false;
    this.wakeWaiters();
  }

  /** Sends queued frames while fewer than the lead are ahead of what has played (and the transport takes them). */
  private sendAhead(): void {
    while (this.framesSent - this.framesPlayed < this.leadFrames && this.queued.length > 0) {
      const frame = this.queued[0];
      if (!this.sink.sendAudio(frame)) break;
      this.queued.shift();
      this.unrecorded.push({ frame, generation: this.generation });
      this.framesSent++;
      if (this.markPoints[0] === this.framesSent) this.markPoints.shift();
      else if (this.framesSent % MARK_EVERY_FRAMES !== 0) continue;
      this.markSent();
    }
  }

  /** With `marks` playback, a mark after the frames sent so far (once per point). */
  private markSent(): void {
    if (this.sink.playback !== 'marks' || this.framesSent === this.lastMark) return;
    this.lastMark = this.framesSent;
    this.sink.mark(`${this.generation}:${this.framesSent}`);
  }

  private drop(): void {
    this.queued = [];
    this.partialLength = 0;
    this.markPoints = [];
  }

  private pushFrame(): void {
    this.queued.push(this.partial);
    this.partial = new Int16Array(FRAME_SAMPLES);
    this.partialLength = 0;
    this.framesQueued++;
  }

  private isIdle(): boolean {
    return this.queued.length === 0 && this.partialLength === 0 && this.framesPlayed >= this.framesSent;
  }

  private wakeWaiters(): void {
    if (this.queued.length < this.maxQueuedFrames) wake(this.roomWaiters);
    if (this.isIdle()) wake(this.idleWaiters);
  }
}

function wake(waiters: (() => void)[]): void {
  for (const resolve of waiters.splice(0)) resolve();
}

/** The first words of a sentence cut off after `played` frames, in proportion to the frames of it played. */
function firstWords(sentence: SpokenSentence, played: number): string {
  const words = sentence.text.split(/\s+/u).filter(Boolean);
  const share = (played - sentence.firstFrame) / Math.max(1, sentence.endFrame - sentence.firstFrame);
  return words.slice(0, Math.floor(words.length * share)).join(' ');
}

import { FRAME_SAMPLES } from '../voice-format';

/** Frames sent ahead of what the client is playing: enough to ride out network jitter, little to drop on a `clear`. */
export const LEAD_FRAMES = 10;

/** A sentence's place in the agent's audio, in frames since the reply's first. */
interface SpokenSentence {
  text: string;
  firstFrame: number;
  endFrame: number;
}

/**
 * The agent's voice on one socket: 20 ms frames waiting to be sent, the few sent ahead of the client's playback,
 * and which sentence each belongs to, so that an interruption knows what the visitor heard. It is paced by the
 * voice clock: each tick the client plays one sent frame (the one the recording's right channel gets) and the
 * next are sent, at most LEAD_FRAMES ahead. The frames still to send are bounded by the reply's synthesis,
 * which waits (`room`) while more than a few seconds are queued.
 */
export class AgentVoice {
  private queued: Int16Array[] = [];
  private inFlight: Int16Array[] = [];
  private partial = new Int16Array(FRAME_SAMPLES);
  private partialLength = 0;
  private sentences: SpokenSentence[] = [];
  private sentenceStart = 0;
  /** Frames queued since the reply began (the next sentence's first frame), and frames played of them. */
  private framesQueued = 0;
  private framesPlayed = 0;
  private roomWaiters: (() => void)[] = [];
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly maxQueuedFrames: number) {}

  /** Appends the agent's speech (16 kHz PCM, any length); cut into frames, the last partial one kept for the next. */
  enqueue(pcm: Int16Array): void {
    let offset = 0;
    while (offset < pcm.length) {
      const take = Math.min(FRAME_SAMPLES - this.partialLength, pcm.length - offset);
      this.partial.set(pcm.subarray(offset, offset + take), this.partialLength);
      this.partialLength += take;
      offset += take;
      if (this.partialLength === FRAME_SAMPLES) this.pushFrame();
    }
  }

  /** The sentence whose audio was enqueued since the previous mark ends here (its last partial frame padded). */
  endSentence(text: string): void {
    if (this.partialLength > 0) {
      this.partial.fill(0, this.partialLength);
      this.pushFrame();
    }
    this.sentences.push({ text, firstFrame: this.sentenceStart, endFrame: this.framesQueued });
    this.sentenceStart = this.framesQueued;
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
   * One tick of the clock: returns the frame the client plays now (undefined: silence), and sends the next ones
   * through `send` while fewer than LEAD_FRAMES are ahead of the client (and `send` accepts them).
   */
  tick(send: (frame: Int16Array) => boolean): Int16Array | undefined {
    const playing = this.inFlight.shift();
    if (playing) this.framesPlayed++;
    this.sendAhead(send);
    if (this.queued.length < this.maxQueuedFrames) this.wake(this.roomWaiters);
    if (this.isIdle()) this.wake(this.idleWaiters);
    return playing;
  }

  /**
   * Sends queued frames while fewer than LEAD_FRAMES are ahead of the client (and `send` accepts them): each tick,
   * and as soon as a reply's first audio is queued, so that it does not wait for the next tick.
   */
  sendAhead(send: (frame: Int16Array) => boolean): void {
    while (this.inFlight.length < LEAD_FRAMES && this.queued.length > 0) {
      const frame = this.queued[0];
      if (!send(frame)) break;
      this.queued.shift();
      this.inFlight.push(frame);
    }
  }

  /** Whether any of the reply has been played yet (its first frame). */
  get started(): boolean {
    return this.framesPlayed > 0;
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
    return parts.join(' ').trim();
  }

  /** Drops every frame not yet played (the visitor interrupted); the next reply starts from nothing. */
  clear(): void {
    this.queued = [];
    this.inFlight = [];
    this.partialLength = 0;
    this.wake(this.roomWaiters);
    this.wake(this.idleWaiters);
  }

  /** Forgets the previous reply's sentences: the next reply counts its frames from zero. */
  reset(): void {
    this.clear();
    this.sentences = [];
    this.sentenceStart = this.framesQueued = this.framesPlayed = 0;
  }

  private pushFrame(): void {
    this.queued.push(this.partial);
    this.partial = new Int16Array(FRAME_SAMPLES);
    this.partialLength = 0;
    this.framesQueued++;
  }

  private isIdle(): boolean {
    return this.queued.length === 0 && this.inFlight.length === 0 && this.partialLength === 0;
  }

  private wake(waiters: (() => void)[]): void {
    for (const resolve of waiters.splice(0)) resolve();
  }
}

/** The first words of a sentence cut off after `played` frames, in proportion to the frames of it played. */
function firstWords(sentence: SpokenSentence, played: number): string {
  const words = sentence.text.split(/\s+/u).filter(Boolean);
  const share = (played - sentence.firstFrame) / Math.max(1, sentence.endFrame - sentence.firstFrame);
  return words.slice(0, Math.floor(words.length * share)).join(' ');
}

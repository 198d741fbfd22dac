import { FRAME_SAMPLES } from '../voice-format';

/** Past this backlog (the client's frames came in a burst) the recording takes the excess at once. */
const MAX_BACKLOG_SAMPLES = 15 * FRAME_SAMPLES;

/**
 * The visitor's audio on its way into the recording: frames arrive as the network delivers them, the clock takes
 * 20 ms per tick (silence when none has come). What piles up beyond a few hundred milliseconds is taken at once,
 * so the backlog, and the memory it holds, stays small whatever the client does.
 */
export class VisitorAudio {
  private chunks: Int16Array[] = [];
  private offset = 0;
  private length = 0;

  /** Samples received and not yet taken into the recording. */
  get backlog(): number {
    return this.length;
  }

  push(pcm: Int16Array): void {
    this.chunks.push(pcm);
    this.length += pcm.length;
  }

  /** The visitor's next stretch of the timeline: 20 ms, or more when the backlog is too long. Zero-filled when short. */
  take(): Int16Array {
    const size = this.length > MAX_BACKLOG_SAMPLES ? this.length - MAX_BACKLOG_SAMPLES + FRAME_SAMPLES : FRAME_SAMPLES;
    const out = new Int16Array(size);
    let filled = 0;
    while (filled < size && this.chunks.length > 0) {
      const chunk = this.chunks[0];
      const take = Math.min(size - filled, chunk.length - this.offset);
      out.set(chunk.subarray(this.offset, this.offset + take), filled);
      filled += take;
      this.offset += take;
      if (this.offset === chunk.length) {
        this.chunks.shift();
        this.offset = 0;
      }
    }
    this.length -= filled;
    return out;
  }
}

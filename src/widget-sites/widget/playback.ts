/**
 * The agent's voice through Web Audio: each binary frame becomes a buffer scheduled right after the previous one
 * on the AudioContext's clock, so that frames play back to back without gaps; `clear` stops every scheduled
 * buffer at once (the visitor interrupted).
 */
import { pcm16ToFloat32 } from './pcm-frames';

/** How far ahead of the clock a frame is scheduled after the queue ran dry: room for the next frames' jitter. */
const RESTART_LEAD_SECONDS = 0.06;

export class AgentVoice {
  private readonly playing = new Set<AudioBufferSourceNode>();
  private nextStart = 0;

  constructor(
    private readonly context: AudioContext,
    private sampleRate: number,
  ) {}

  /** The rate of the audio the service announced in `ready`. */
  setSampleRate(sampleRate: number): void {
    this.sampleRate = sampleRate;
  }

  play(frame: ArrayBuffer): void {
    const samples = pcm16ToFloat32(frame);
    if (!samples.length) return;
    const buffer = this.context.createBuffer(1, samples.length, this.sampleRate);
    buffer.copyToChannel(samples, 0);
    const source = this.context.createBufferSource();
    source.buffer = buffer;
    source.connect(this.context.destination);
    const now = this.context.currentTime;
    const start = this.nextStart > now ? this.nextStart : now + RESTART_LEAD_SECONDS;
    source.onended = () => this.playing.delete(source);
    this.playing.add(source);
    source.start(start);
    this.nextStart = start + buffer.duration;
  }

  /** Stops what is playing and drops what is scheduled. */
  clear(): void {
    for (const source of this.playing) {
      source.onended = null;
      source.stop();
      source.disconnect();
    }
    this.playing.clear();
    this.nextStart = 0;
  }
}

/**
 * The microphone's audio as the voice socket takes it: 16-bit little-endian mono PCM at 16 kHz in frames of
 * 20 ms. Pure functions without browser globals, run inside the capture worklet and tested under Jest.
 */
export const SOCKET_SAMPLE_RATE = 16_000;
export const FRAME_MS = 20;
export const FRAME_SAMPLES = (SOCKET_SAMPLE_RATE * FRAME_MS) / 1000;
/** The name the capture worklet registers its processor under. */
export const CAPTURE_PROCESSOR = 'voice-agent-capture';

/** A sample in [-1, 1] as a 16-bit integer (clamped: a hot microphone must not wrap around). */
export function toInt16(sample: number): number {
  const clamped = Math.max(-1, Math.min(1, sample));
  return clamped < 0 ? Math.round(clamped * 0x8000) : Math.round(clamped * 0x7fff);
}

/**
 * Converts a stream of float samples at `inputRate` to 16-bit samples at `outputRate`, chunk by chunk (the
 * worklet sees 128 samples at a time). Going down, each output sample is the mean of the input samples within
 * its own period (an area average: a low-pass that keeps speech and stops most aliasing); going up, linear
 * interpolation.
 */
export class Downsampler {
  private readonly step: number;
  private pending = new Float32Array(0);
  /** Absolute index (in input samples) of pending[0]. */
  private pendingStart = 0;
  /** Absolute position (in input samples) of the next output sample. */
  private next = 0;

  constructor(inputRate: number, outputRate = SOCKET_SAMPLE_RATE) {
    if (!(inputRate > 0 && outputRate > 0)) throw new RangeError('Sample rates must be positive');
    this.step = inputRate / outputRate;
  }

  push(input: Float32Array): Int16Array {
    this.append(input);
    const output: number[] = [];
    const half = this.step > 1 ? this.step / 2 : 0;
    const end = this.pendingStart + this.pending.length; // one past the last absolute index held
    while (this.next + Math.max(half, 1) < end) {
      output.push(toInt16(half > 0 ? this.average(this.next - half, this.next + half) : this.interpolate(this.next)));
      this.next += this.step;
    }
    this.drop(Math.floor(this.next - half) - 1);
    return Int16Array.from(output);
  }

  private append(input: Float32Array): void {
    const joined = new Float32Array(this.pending.length + input.length);
    joined.set(this.pending);
    joined.set(input, this.pending.length);
    this.pending = joined;
  }

  /** Forgets the input before the absolute index `keepFrom`, which no later output sample needs. */
  private drop(keepFrom: number): void {
    const count = Math.min(this.pending.length, Math.max(0, keepFrom - this.pendingStart));
    if (count === 0) return;
    this.pending = this.pending.slice(count);
    this.pendingStart += count;
  }

  private at(index: number): number {
    return this.pending[Math.min(this.pending.length - 1, Math.max(0, index - this.pendingStart))];
  }

  private average(from: number, to: number): number {
    const first = Math.max(this.pendingStart, Math.ceil(from));
    const last = Math.floor(to);
    let sum = 0;
    for (let index = first; index <= last; index++) sum += this.at(index);
    return last >= first ? sum / (last - first + 1) : this.at(first);
  }

  private interpolate(position: number): number {
    const below = Math.floor(position);
    const fraction = position - below;
    return this.at(below) * (1 - fraction) + this.at(below + 1) * fraction;
  }
}

/** Cuts a stream of samples into frames of exactly `size` samples, each with a buffer of its own (transferable). */
export class Framer {
  private frame: Int16Array;
  private filled = 0;

  constructor(private readonly size = FRAME_SAMPLES) {
    this.frame = new Int16Array(size);
  }

  push(samples: Int16Array): Int16Array[] {
    const frames: Int16Array[] = [];
    let offset = 0;
    while (offset < samples.length) {
      const take = Math.min(this.size - this.filled, samples.length - offset);
      this.frame.set(samples.subarray(offset, offset + take), this.filled);
      this.filled += take;
      offset += take;
      if (this.filled === this.size) {
        frames.push(this.frame);
        this.frame = new Int16Array(this.size);
        this.filled = 0;
      }
    }
    return frames;
  }
}

/** The agent's audio from a binary frame (16-bit little-endian mono PCM) as floats for Web Audio; an odd last byte is ignored. */
export function pcm16ToFloat32(bytes: ArrayBuffer): Float32Array<ArrayBuffer> {
  const view = new DataView(bytes);
  const samples = new Float32Array(Math.floor(bytes.byteLength / 2));
  for (let index = 0; index < samples.length; index++) samples[index] = view.getInt16(index * 2, true) / 0x8000;
  return samples;
}

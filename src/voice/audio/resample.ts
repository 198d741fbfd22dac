/** Input samples on each side of an output sample that the filter reads. */
const HALF_TAPS = 24;
/** The pass band's share of the lower of the two Nyquist frequencies. */
const ROLL_OFF = 0.9;

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** Blackman window over [-1, 1]. */
const blackman = (x: number) => 0.42 + 0.5 * Math.cos(Math.PI * x) + 0.08 * Math.cos(2 * Math.PI * x);

/**
 * The filter of one conversion, as one table per phase: converting `from` → `to` is, in lowest terms, up by
 * L = to / g and down by M = from / g, and output n reads input around n·M / L, whose fraction is one of L phases.
 */
interface Filter {
  up: number;
  down: number;
  /** taps[phase * 2·HALF_TAPS + k]: the weight of input sample floor(t) - HALF_TAPS + 1 + k. */
  taps: Float32Array;
}

const filters = new Map<string, Filter>();

function filterFor(from: number, to: number): Filter {
  const key = `${from}>${to}`;
  let filter = filters.get(key);
  if (!filter) {
    const divisor = gcd(from, to);
    const up = to / divisor;
    const down = from / divisor;
    const cutoff = ROLL_OFF * Math.min(1, up / down); // of the input's Nyquist frequency
    const width = 2 * HALF_TAPS;
    const taps = new Float32Array(up * width);
    for (let phase = 0; phase < up; phase++) {
      let sum = 0;
      for (let k = 0; k < width; k++) {
        const x = k - HALF_TAPS + 1 - phase / up; // distance from the output's position, in input samples
        const sinc = x === 0 ? 1 : Math.sin(Math.PI * cutoff * x) / (Math.PI * cutoff * x);
        const weight = cutoff * sinc * blackman(x / HALF_TAPS);
        taps[phase * width + k] = weight;
        sum += weight;
      }
      for (let k = 0; k < width; k++) taps[phase * width + k] /= sum; // unity gain at DC for every phase
    }
    filter = { up, down, taps };
    filters.set(key, filter);
  }
  return filter;
}

/**
 * Converts 16-bit mono PCM from one rate to another, chunk by chunk, with a windowed-sinc low-pass (no aliasing
 * when going down, from 48, 24 or 22.05 kHz to 16 kHz): the one place where the service changes rates. Stateful:
 * chunks give the same samples as their concatenation would, delayed by HALF_TAPS input samples, which the last
 * chunk's output keeps until more input comes.
 */
export class Resampler {
  private readonly filter: Filter | undefined;
  /** Input not yet consumed, starting HALF_TAPS - 1 samples before the next output's position. */
  private history: Float32Array;
  private historyLength: number;
  /** Numerator of the next output's position within the history, in 1/up input samples. */
  private position: number;

  constructor(
    readonly from: number,
    readonly to: number,
  ) {
    if (from !== to) this.filter = filterFor(from, to);
    this.history = new Float32Array(4096);
    // Zeros before the first sample, so that the first outputs have a full window.
    this.historyLength = HALF_TAPS - 1;
    this.position = 0;
  }

  process(input: Int16Array): Int16Array {
    const filter = this.filter;
    if (!filter) return input;
    this.append(input);
    const { up, down, taps } = filter;
    const width = 2 * HALF_TAPS;
    const history = this.history;
    const available = this.historyLength - width + 1; // outputs need samples up to floor(t) + HALF_TAPS
    const count = available > 0 ? Math.max(0, Math.floor((available * up - this.position - 1) / down) + 1) : 0;
    const output = new Int16Array(count);
    let position = this.position;
    for (let n = 0; n < count; n++, position += down) {
      const start = Math.floor(position / up);
      const base = (position % up) * width;
      let sum = 0;
      for (let k = 0; k < width; k++) sum += history[start + k] * taps[base + k];
      output[n] = sum > 32767 ? 32767 : sum < -32768 ? -32768 : Math.round(sum);
    }
    const consumed = Math.floor(position / up);
    this.history.copyWithin(0, consumed, this.historyLength);
    this.historyLength -= consumed;
    this.position = position - consumed * up;
    return output;
  }

  private append(input: Int16Array): void {
    if (this.historyLength + input.length > this.history.length) {
      const grown = new Float32Array(2 ** Math.ceil(Math.log2(this.historyLength + input.length)));
      grown.set(this.history.subarray(0, this.historyLength));
      this.history = grown;
    }
    for (let index = 0; index < input.length; index++) this.history[this.historyLength + index] = input[index];
    this.historyLength += input.length;
  }
}

/** One whole signal from one rate to another (the end of it included: the filter's tail is flushed with zeros). */
export function resample(input: Int16Array, from: number, to: number): Int16Array {
  if (from === to) return input;
  const resampler = new Resampler(from, to);
  const body = resampler.process(input);
  const tail = resampler.process(new Int16Array(HALF_TAPS + 1));
  const length = Math.round((input.length * to) / from);
  const out = new Int16Array(length);
  out.set(body.subarray(0, length));
  if (body.length < length) out.set(tail.subarray(0, length - body.length), body.length);
  return out;
}

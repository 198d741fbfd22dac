/**
 * What the input resampler costs per 20 ms frame on the event loop (it runs there for every frame a microphone
 * sends), in CPU µs: each client rate to 16 kHz, the median of several rounds of speech-like frames.
 *   node -r ./scripts/register.js bench/voice-resample.ts [--rounds 7] [--frames 20000]
 */
import { Resampler } from '../src/voice/audio/resample';
import { median, round } from './stats';

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
};

const RATES = [48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 8_000];

/** A second of a voice-like signal (a few harmonics of 140 Hz and some noise) at `rate`. */
function voice(rate: number): Int16Array {
  let seed = 1;
  const noise = () => ((seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32 - 0.5) * 600;
  return Int16Array.from({ length: rate }, (_, index) => {
    const t = index / rate;
    return Math.round(
      [1, 2, 3, 5, 8].reduce((sum, harmonic) => sum + (3_000 / harmonic) * Math.sin(2 * Math.PI * 140 * harmonic * t), noise()),
    );
  });
}

/** CPU µs per frame of one round of `frames` frames. */
function measure(rate: number, frames: number): number {
  const signal = voice(rate);
  const frameLength = rate / 50;
  const resampler = new Resampler(rate, 16_000);
  const start = process.cpuUsage();
  for (let index = 0; index < frames; index++) {
    const offset = (index * frameLength) % (signal.length - frameLength);
    resampler.process(signal.subarray(offset, offset + frameLength));
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / frames;
}

function main(): void {
  const rounds = arg('rounds', 7);
  const frames = arg('frames', 20_000);
  for (const rate of RATES) measure(rate, 2_000); // warm-up: the filters are designed and the loops optimized
  const results = RATES.map((rate) => ({
    from: rate,
    microsPerFrame: round(median(Array.from({ length: rounds }, () => measure(rate, frames)))),
  }));
  console.log(JSON.stringify({ node: process.version, rounds, frames, results }, null, 2));
}

main();

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseWav } from '../../src/voice/audio/wav';

/** A speech fixture (test/fixtures/voice, made by scripts/voice-fixtures.ts): 16 kHz mono PCM. */
export function fixture(name: 'en-question' | 'en-long' | 'hi-question'): Int16Array {
  return parseWav(readFileSync(path.join(__dirname, '..', 'fixtures', 'voice', `${name}.wav`))).samples;
}

export interface DecodedMp3 {
  channels: Float32Array[];
  sampleRate: number;
  seconds: number;
}

/** Decodes an MP3 (the recording) with mpg123 compiled to WebAssembly. */
export async function decodeMp3(bytes: Uint8Array): Promise<DecodedMp3> {
  const { MPEGDecoder } = await import('mpg123-decoder');
  const decoder = new MPEGDecoder();
  await decoder.ready;
  try {
    const { channelData, samplesDecoded, sampleRate } = decoder.decode(bytes);
    return { channels: channelData, sampleRate, seconds: samplesDecoded / sampleRate };
  } finally {
    decoder.free();
  }
}

/** RMS of a stretch of one channel, in dBFS (from `start` to `end` seconds). */
export function levelDbfs(channel: Float32Array, sampleRate: number, start: number, end: number): number {
  const from = Math.max(0, Math.floor(start * sampleRate));
  const to = Math.min(channel.length, Math.floor(end * sampleRate));
  let sum = 0;
  for (let index = from; index < to; index++) sum += channel[index] * channel[index];
  return 10 * Math.log10(sum / Math.max(1, to - from) + 1e-12);
}

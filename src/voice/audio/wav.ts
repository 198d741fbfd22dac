import { bytesFromPcm, copyPcm } from './pcm';

/** A WAV file this service cannot read: not RIFF/WAVE, not 16-bit PCM, or cut short. */
export class InvalidWav extends Error {
  constructor(problem: string) {
    super(`Invalid WAV: ${problem}`);
    this.name = 'InvalidWav';
  }
}

const HEADER_BYTES = 44;

/** A RIFF/WAVE file of 16-bit PCM mono at `sampleRate` (the format the speech-to-text providers take). */
export function encodeWav(pcm: Int16Array, sampleRate: number): Buffer {
  const dataBytes = pcm.length * 2;
  const wav = Buffer.alloc(HEADER_BYTES + dataBytes);
  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + dataBytes, 4);
  wav.write('WAVE', 8, 'ascii');
  wav.write('fmt ', 12, 'ascii');
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(sampleRate, 24);
  wav.writeUInt32LE(sampleRate * 2, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write('data', 36, 'ascii');
  wav.writeUInt32LE(dataBytes, 40);
  bytesFromPcm(pcm).copy(wav, HEADER_BYTES);
  return wav;
}

export interface DecodedWav {
  sampleRate: number;
  channels: number;
  /** Mono: several channels are mixed down. */
  samples: Int16Array;
}

/**
 * Reads a 16-bit PCM WAV by walking its chunks to `fmt ` and `data` (a provider may put others before them, or
 * write a streaming header whose sizes are 0 or 0xFFFFFFFF: the data then runs to the end of the file).
 */
export function parseWav(bytes: Uint8Array): DecodedWav {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.length < 12 || view.toString('ascii', 0, 4) !== 'RIFF' || view.toString('ascii', 8, 12) !== 'WAVE') {
    throw new InvalidWav('not a RIFF/WAVE file');
  }
  let format: { channels: number; sampleRate: number } | undefined;
  let offset = 12;
  while (offset + 8 <= view.length) {
    const id = view.toString('ascii', offset, offset + 4);
    const size = view.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > view.length) throw new InvalidWav('the format chunk is cut short');
      const encoding = view.readUInt16LE(body);
      const channels = view.readUInt16LE(body + 2);
      const sampleRate = view.readUInt32LE(body + 4);
      const bits = view.readUInt16LE(body + 14);
      // 0xFFFE is WAVE_FORMAT_EXTENSIBLE, which still carries plain PCM at 16 bits.
      if ((encoding !== 1 && encoding !== 0xfffe) || bits !== 16) throw new InvalidWav('not 16-bit PCM');
      if (channels < 1 || channels > 8 || sampleRate < 1 || sampleRate > 384_000) throw new InvalidWav('an impossible format');
      format = { channels, sampleRate };
    } else if (id === 'data') {
      if (!format) throw new InvalidWav('data before the format chunk');
      const end = size === 0 || size === 0xffffffff || body + size > view.length ? view.length : body + size;
      return { ...format, samples: mixDown(view.subarray(body, end), format.channels) };
    }
    offset = body + size + (size % 2); // chunks are padded to an even size
  }
  throw new InvalidWav(format ? 'no data chunk' : 'no format chunk');
}

/** Little-endian 16-bit frames of `channels` channels, averaged to one; a trailing partial frame is dropped. */
function mixDown(data: Buffer, channels: number): Int16Array {
  if (channels === 1) return copyPcm(data);
  const frames = Math.floor(data.length / (2 * channels));
  const mono = new Int16Array(frames);
  for (let frame = 0; frame < frames; frame++) {
    let sum = 0;
    for (let channel = 0; channel < channels; channel++) sum += data.readInt16LE((frame * channels + channel) * 2);
    mono[frame] = Math.round(sum / channels);
  }
  return mono;
}

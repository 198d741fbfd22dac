import { bytesFromPcm, concatPcm, copyPcm, pcmFromBytes, rmsDbfs, toFloat32 } from '../src/voice/audio/pcm';
import { Resampler, resample } from '../src/voice/audio/resample';
import { InvalidWav, encodeWav, parseWav } from '../src/voice/audio/wav';

/** A deterministic generator, so that a failure reproduces. */
function random(seed: number): () => number {
  return () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
}

const randomPcm = (length: number, seed: number) => {
  const next = random(seed);
  return Int16Array.from({ length }, () => Math.round(next() * 65_535) - 32_768);
};

const tone = (hz: number, rate: number, seconds: number, amplitude = 10_000) =>
  Int16Array.from({ length: Math.round(rate * seconds) }, (_, index) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * hz * index) / rate)),
  );

/** A WAV assembled chunk by chunk, for the layouts encodeWav never writes. */
function riff(...chunks: Buffer[]): Buffer {
  const body = Buffer.concat([Buffer.from('WAVE'), ...chunks]);
  const header = Buffer.alloc(8);
  header.write('RIFF');
  header.writeUInt32LE(body.length, 4);
  return Buffer.concat([header, body]);
}

function chunk(id: string, body: Buffer, declaredSize = body.length): Buffer {
  const header = Buffer.alloc(8);
  header.write(id, 'ascii');
  header.writeUInt32LE(declaredSize, 4);
  return Buffer.concat([header, body, Buffer.alloc(body.length % 2)]);
}

function fmt({ encoding = 1, channels = 1, sampleRate = 16_000, bits = 16, extra = 0 } = {}): Buffer {
  const body = Buffer.alloc(16 + extra);
  body.writeUInt16LE(encoding, 0);
  body.writeUInt16LE(channels, 2);
  body.writeUInt32LE(sampleRate, 4);
  body.writeUInt32LE((sampleRate * channels * bits) / 8, 8);
  body.writeUInt16LE((channels * bits) / 8, 12);
  body.writeUInt16LE(bits, 14);
  return chunk('fmt ', body);
}

/** parseWav's outcome: what it read, or the name of what it threw (anything but InvalidWav fails the tests). */
function outcome(bytes: Uint8Array): 'InvalidWav' | { samples: number } {
  try {
    return { samples: parseWav(bytes).samples.length };
  } catch (error) {
    if (error instanceof InvalidWav) return 'InvalidWav';
    throw error;
  }
}

describe('WAV', () => {
  it('writes a 44-byte RIFF/WAVE header of 16-bit PCM mono and reads back the same samples', () => {
    const pcm = Int16Array.from([0, 1, -1, 32_767, -32_768, 12_345, -12_345]);
    const wav = encodeWav(pcm, 22_050);

    expect(wav.length).toBe(44 + pcm.length * 2);
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.toString('ascii', 8, 16)).toBe('WAVEfmt ');
    expect([wav.readUInt16LE(20), wav.readUInt16LE(22), wav.readUInt32LE(24), wav.readUInt32LE(28)]).toEqual([1, 1, 22_050, 44_100]);
    expect([wav.readUInt16LE(32), wav.readUInt16LE(34), wav.toString('ascii', 36, 40), wav.readUInt32LE(40)]).toEqual([2, 16, 'data', 14]);
    expect(parseWav(wav)).toEqual({ sampleRate: 22_050, channels: 1, samples: pcm });
  });

  it('reads a long random signal back exactly, from bytes at an odd offset too', () => {
    const pcm = randomPcm(48_001, 7);
    const wav = encodeWav(pcm, 48_000);
    const shifted = new Uint8Array(wav.length + 1);
    shifted.set(wav, 1);

    expect(parseWav(wav).samples).toEqual(pcm);
    expect(parseWav(shifted.subarray(1)).samples).toEqual(pcm);
  });

  it('walks past other chunks, odd-sized ones padded, to the format and the data', () => {
    const pcm = Int16Array.from([100, -200, 300]);
    const wav = riff(
      chunk('LIST', Buffer.from('INFOabc')),
      fmt({ encoding: 0xfffe, extra: 24 }),
      chunk('fact', Buffer.alloc(4)),
      chunk('data', bytesFromPcm(pcm)),
    );

    expect(parseWav(wav)).toEqual({ sampleRate: 16_000, channels: 1, samples: pcm });
  });

  it('reads a streaming header (data size 0 or 0xFFFFFFFF) to the end of the file', () => {
    const pcm = Int16Array.from([1, 2, 3, 4]);
    for (const declared of [0, 0xffffffff]) {
      expect(parseWav(riff(fmt(), chunk('data', bytesFromPcm(pcm), declared))).samples).toEqual(pcm);
    }
  });

  it('mixes several channels down to one', () => {
    const stereo = Int16Array.from([1000, -1000, 500, 700, 32_767, 32_767, -32_768, -32_768]);
    const wav = riff(fmt({ channels: 2 }), chunk('data', bytesFromPcm(stereo)));

    expect(parseWav(wav)).toEqual({ sampleRate: 16_000, channels: 2, samples: Int16Array.from([0, 600, 32_767, -32_768]) });
  });

  it('drops a trailing odd byte or partial frame of the data', () => {
    const data = Buffer.from([1, 0, 2, 0, 3]);
    expect(parseWav(riff(fmt(), chunk('data', data))).samples).toEqual(Int16Array.from([1, 2]));
    expect(parseWav(riff(fmt({ channels: 2 }), chunk('data', data))).samples).toEqual(Int16Array.from([2]));
  });

  it('refuses what is not 16-bit PCM, or has no format or data, with InvalidWav', () => {
    const data = chunk('data', Buffer.alloc(8));
    const refused: Buffer[] = [
      riff(fmt({ bits: 8 }), data),
      riff(fmt({ bits: 24 }), data),
      riff(fmt({ encoding: 3, bits: 32 }), data), // IEEE float
      riff(fmt({ encoding: 6, bits: 8 }), data), // A-law
      riff(fmt({ channels: 0 }), data),
      riff(fmt({ sampleRate: 0 }), data),
      riff(fmt()), // no data chunk
      riff(data, fmt()), // data before its format
      riff(data), // no format chunk
      riff(chunk('fmt ', Buffer.alloc(14)), data), // a format chunk too short
      riff(),
      Buffer.from('RIFF\x00\x00\x00\x00AVI LIST'),
      Buffer.from('ID3\x03\x00\x00\x00\x00\x00\x00 an MP3, not a WAV'),
      Buffer.alloc(0),
    ];
    for (const bytes of refused) expect(outcome(bytes)).toBe('InvalidWav');
  });

  it('refuses a file cut anywhere in its header, and reads what arrived of its data', () => {
    const wav = encodeWav(Int16Array.from([1, 2, 3, 4, 5]), 16_000);
    for (let length = 0; length < wav.length; length++) {
      expect(outcome(wav.subarray(0, length))).toEqual(length < 44 ? 'InvalidWav' : { samples: (length - 44) >> 1 });
    }
  });

  it('meets random bytes, and random chunks after a valid RIFF/WAVE start, with InvalidWav and nothing else', () => {
    const next = random(42);
    const bytes = (length: number) => Uint8Array.from({ length }, () => Math.floor(next() * 256));
    const read = { valid: 0, invalid: 0 };
    for (let attempt = 0; attempt < 2_000; attempt++) {
      const body = bytes(Math.floor(next() * 120));
      // Chunk ids and small sizes now and then, so that the walker meets format chunks and lengths near the end.
      if (attempt % 2 === 0 && body.length >= 8) body.set(Buffer.from(next() < 0.5 ? 'fmt ' : 'data'), 0);
      if (attempt % 4 === 0 && body.length >= 8) body.set([Math.floor(next() * 40), 0, 0, 0], 4);
      const candidate = attempt % 3 === 0 ? body : Buffer.concat([Buffer.from('RIFF\x00\x00\x00\x00WAVE'), body]);
      const result = outcome(candidate);
      read[result === 'InvalidWav' ? 'invalid' : 'valid']++;
    }
    expect(read.invalid).toBeGreaterThan(1_500);
  });
});

describe('PCM', () => {
  it('views aligned bytes without a copy, copies unaligned ones, and drops an odd last byte', () => {
    const bytes = [0x34, 0x12, 0xff, 0xff, 0x00, 0x80, 0x07];
    const aligned = Buffer.alloc(bytes.length); // not from the pool: its offset is 0
    aligned.set(bytes);
    const unaligned = Buffer.alloc(bytes.length + 1).subarray(1);
    unaligned.set(bytes);

    const view = pcmFromBytes(aligned);
    const copy = pcmFromBytes(unaligned);
    expect([...view]).toEqual([0x1234, -1, -32_768]);
    expect([...copy]).toEqual([0x1234, -1, -32_768]);
    expect(view.buffer).toBe(aligned.buffer);
    expect(copy.buffer).not.toBe(unaligned.buffer);
    expect(copyPcm(aligned).buffer).not.toBe(aligned.buffer);
  });

  it('turns samples into the bytes of a frame and back', () => {
    const pcm = randomPcm(321, 3);
    const bytes = bytesFromPcm(pcm.subarray(1));
    expect(bytes.length).toBe(640);
    expect(pcmFromBytes(Buffer.from(bytes))).toEqual(pcm.subarray(1));
  });

  it('measures RMS in dBFS', () => {
    expect(rmsDbfs(new Int16Array(320))).toBe(-Infinity);
    expect(rmsDbfs(new Int16Array(0))).toBe(-Infinity);
    expect(rmsDbfs(new Int16Array(320).fill(-32_768))).toBeCloseTo(0, 6);
    expect(rmsDbfs(tone(1000, 16_000, 1, 16_384))).toBeCloseTo(-9.03, 1); // a sine at half scale: -6 dB peak, -3 dB RMS
    expect(rmsDbfs(new Int16Array(320).fill(33))).toBeCloseTo(-59.9, 1);
  });

  it('converts to floats and joins stretches', () => {
    expect([...toFloat32(Int16Array.from([-32_768, 0, 16_384]))]).toEqual([-1, 0, 0.5]);
    expect([...concatPcm([Int16Array.from([1, 2]), new Int16Array(0), Int16Array.from([3])])]).toEqual([1, 2, 3]);
  });
});

describe('Resampler', () => {
  // 8,001 and 44,056 Hz: rates a client may announce, whose filters have more phases than their table keeps.
  const RATES = [8_000, 8_001, 11_025, 16_000, 22_050, 24_000, 32_000, 44_056, 44_100, 48_000];

  /** The level of the output's middle (away from the ramps at both ends) against the input's, in dB. */
  function gain(hz: number, from: number, to: number): number {
    const input = tone(hz, from, 1);
    const output = resample(input, from, to);
    const margin = Math.round(to * 0.1);
    return rmsDbfs(output.subarray(margin, output.length - margin)) - rmsDbfs(input);
  }

  it('gives exactly ceil(length · to / from) samples for a whole signal', () => {
    for (const from of RATES) {
      for (const to of [16_000, 24_000]) {
        for (const length of [0, 1, 2, 3, 147, 441, 960, 16_001]) {
          expect({ from, to, length, got: resample(new Int16Array(length), from, to).length }).toEqual({
            from,
            to,
            length,
            got: Math.ceil((length * to) / from),
          });
        }
      }
    }
  });

  it('gives the same samples whatever the chunks, and starts afresh after a flush', () => {
    const next = random(11);
    for (const from of RATES) {
      const input = randomPcm(Math.round(from * 0.3), from);
      const whole = resample(input, from, 16_000);
      const resampler = new Resampler(from, 16_000);
      for (let round = 0; round < 2; round++) {
        const pieces: Int16Array[] = [];
        for (let offset = 0; offset < input.length;) {
          const size = Math.floor(next() ** 3 * 2_000); // many tiny chunks (0, 1, 2 samples), some large
          pieces.push(resampler.process(input.subarray(offset, offset + size)));
          offset += size;
        }
        pieces.push(resampler.flush());
        expect(concatPcm(pieces)).toEqual(whole);
      }
    }
  });

  it('returns the input itself when the rates match', () => {
    const input = randomPcm(320, 5);
    const resampler = new Resampler(16_000, 16_000);
    expect(resampler.process(input)).toBe(input);
    expect(resampler.flush().length).toBe(0);
    expect(resample(input, 16_000, 16_000)).toBe(input);
  });

  it('keeps a 1 kHz tone at its level (±1 dB), up and down', () => {
    for (const from of RATES) {
      for (const to of [16_000, 24_000, 48_000]) {
        if (from !== to) expect({ from, to, gain: Math.abs(gain(1000, from, to)) < 1 }).toEqual({ from, to, gain: true });
      }
    }
  });

  it('keeps what lies above the new Nyquist frequency from folding back into speech', () => {
    expect(gain(7_500, 48_000, 16_000)).toBeLessThanOrEqual(-30);
    // These would come back as 6, 7 and 5.05 kHz tones.
    expect(gain(10_000, 48_000, 16_000)).toBeLessThanOrEqual(-40);
    expect(gain(9_000, 24_000, 16_000)).toBeLessThanOrEqual(-40);
    expect(gain(10_950, 22_050, 16_000)).toBeLessThanOrEqual(-40);
    // Going up, the images of a tone near the old Nyquist frequency are filtered out.
    expect(gain(3_000, 8_000, 16_000)).toBeGreaterThan(-1);
  });

  it('does not delay the signal: an impulse comes out at the same time', () => {
    for (const from of [48_000, 22_050, 8_000]) {
      const input = new Int16Array(from / 10);
      input[Math.round(from / 20)] = 30_000; // at 50 ms
      const output = resample(input, from, 16_000);
      const peak = output.indexOf(Math.max(...output));
      expect(Math.abs(peak - 800)).toBeLessThanOrEqual(1);
    }
  });

  it('holds no more than a frame and the filter between frames, however long the stream', () => {
    const resampler = new Resampler(48_000, 16_000);
    const frame = tone(440, 48_000, 0.02);
    let produced = 0;
    let mostHeld = 0;
    for (let index = 0; index < 3_000; index++) {
      produced += resampler.process(frame).length;
      mostHeld = Math.max(mostHeld, resampler.heldSamples);
    }
    expect(mostHeld).toBeLessThan(frame.length + 100);
    expect(produced + resampler.flush().length).toBe(320 * 3_000);
  });

  it('refuses rates that are not whole hertz within 4 kHz to 192 kHz', () => {
    for (const rate of [0, 3_999, 192_001, 16_000.5, Number.NaN]) {
      expect(() => new Resampler(rate, 16_000)).toThrow(RangeError);
      expect(() => new Resampler(16_000, rate)).toThrow(RangeError);
    }
  });
});

/** 16-bit little-endian PCM bytes as samples: a view when the bytes are aligned, a copy when not (an odd last byte is dropped). */
export function pcmFromBytes(bytes: Buffer): Int16Array {
  const length = bytes.length >> 1;
  if (bytes.byteOffset % 2 === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, length);
  return copyPcm(bytes);
}

/** 16-bit little-endian PCM bytes as samples of their own (a trailing odd byte is dropped). */
export function copyPcm(bytes: Uint8Array): Int16Array {
  const pcm = new Int16Array(bytes.length >> 1);
  new Uint8Array(pcm.buffer).set(bytes.subarray(0, pcm.length * 2));
  return pcm;
}

/** Samples as the bytes of a binary frame (a view, no copy). */
export function bytesFromPcm(pcm: Int16Array): Buffer {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

/** Root mean square level in dBFS (-Infinity for digital silence). */
export function rmsDbfs(pcm: Int16Array): number {
  if (pcm.length === 0) return -Infinity;
  let sum = 0;
  for (let index = 0; index < pcm.length; index++) sum += pcm[index] * pcm[index];
  return 20 * Math.log10(Math.sqrt(sum / pcm.length) / 32768);
}

/** Samples as floats in [-1, 1) (the MP3 encoder's input). */
export function toFloat32(pcm: Int16Array, into = new Float32Array(pcm.length)): Float32Array {
  for (let index = 0; index < pcm.length; index++) into[index] = pcm[index] / 32768;
  return into;
}

/** Several stretches of samples as one. */
export function concatPcm(chunks: readonly Int16Array[]): Int16Array {
  const whole = new Int16Array(chunks.reduce((total, chunk) => total + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    whole.set(chunk, offset);
    offset += chunk.length;
  }
  return whole;
}

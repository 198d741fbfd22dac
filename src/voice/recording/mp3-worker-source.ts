/**
 * The MP3 encoder's worker thread, as plain JavaScript (`new Worker(source, { eval: true })`, which Jest runs
 * too): LAME compiled to WebAssembly (wasm-media-encoders), its module compiled once, one encoder per recording.
 * A recording's stereo blocks (16-bit, interleaved) arrive as transferred buffers and go back the same way once
 * encoded (the recorder fills them again); the MP3 is appended to the recording's spool file (a descriptor the main thread opened and
 * closes), so that no audio stays in memory.
 *
 * In:  { op: 'open', id, fd, format } | { op: 'write', id, block } (Int16Array, left and right interleaved) | { op: 'close', id }
 *      | { op: 'mono', id, pcm, format } (Float32Array, one short sample: the MP3 comes back)
 *      (format: { outputSampleRate, bitrate }; the input is at workerData.sampleRate)
 * Out: { id, bytes, block } after each write (the file's size, the block back), { id, bytes, closed: true }, { id, mp3 }, { id, error }
 */
export const MP3_WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { createEncoder } = require(workerData.encodersPath);
const wasm = new WebAssembly.Module(fs.readFileSync(workerData.wasmPath));
// The last to get the cores when they are contended (Linux: a priority per thread): a recording's blocks may wait
// for this thread half a minute (MAX_BLOCKS_PER_SPOOL), the calls' audio and its synthesis cannot wait at all.
if (process.platform === 'linux') {
  try {
    require('node:os').setPriority(15);
  } catch {}
}
const recordings = new Map();
// The encoder takes a float array per channel: one pair for the thread, grown to the largest block.
let left = new Float32Array(0);
let right = new Float32Array(0);

function planar(block) {
  const length = block.length >> 1;
  if (left.length < length) {
    left = new Float32Array(length);
    right = new Float32Array(length);
  }
  for (let index = 0; index < length; index++) {
    left[index] = block[2 * index] / 32768;
    right[index] = block[2 * index + 1] / 32768;
  }
  return [left.subarray(0, length), right.subarray(0, length)];
}

async function encoder(channels, { outputSampleRate, bitrate }) {
  const created = await createEncoder('audio/mpeg', wasm);
  created.configure({ sampleRate: workerData.sampleRate, channels, outputSampleRate, bitrate });
  return created;
}

function append(recording, bytes) {
  for (let offset = 0; offset < bytes.length; ) offset += fs.writeSync(recording.fd, bytes, offset);
  recording.bytes += bytes.length;
}

const operations = {
  async open({ id, fd, format }) {
    recordings.set(id, { fd, bytes: 0, encoder: await encoder(2, format) });
  },
  write({ id, block }) {
    const recording = recordings.get(id);
    append(recording, recording.encoder.encode(planar(block)));
    parentPort.postMessage({ id, bytes: recording.bytes, block }, [block.buffer]);
  },
  close({ id }) {
    const recording = recordings.get(id);
    recordings.delete(id);
    append(recording, recording.encoder.finalize());
    parentPort.postMessage({ id, bytes: recording.bytes, closed: true });
  },
  async mono({ id, pcm, format }) {
    const once = await encoder(1, format);
    const head = once.encode([pcm]).slice();
    const tail = once.finalize();
    const mp3 = new Uint8Array(head.length + tail.length);
    mp3.set(head);
    mp3.set(tail, head.length);
    parentPort.postMessage({ id, mp3 }, [mp3.buffer]);
  },
};

// One at a time, in order: a recording's blocks are encoded in the order they were written. A failure is
// answered with the error's code or name only (never a message, which could carry a path).
let queue = Promise.resolve();
parentPort.on('message', (message) => {
  queue = queue.then(() => operations[message.op](message)).catch((error) => {
    recordings.delete(message.id);
    parentPort.postMessage({ id: message.id, error: String((error && (error.code || error.name)) || 'Error') });
  });
});
`;

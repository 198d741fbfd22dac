/**
 * The MP3 encoder's worker thread, as plain JavaScript (`new Worker(source, { eval: true })`, which Jest runs
 * too): LAME compiled to WebAssembly (wasm-media-encoders), its module compiled once, one encoder per recording.
 * A recording's stereo blocks arrive as transferred buffers; the worker encodes them and appends the MP3 to the
 * recording's spool file itself, so that neither the audio nor the MP3 stays in memory.
 *
 * In:  { op: 'open', id, path } | { op: 'write', id, left, right } (Float32Array) | { op: 'close', id }
 *      | { op: 'mono', id, pcm } (Float32Array, one short sample: the MP3 comes back)
 * Out: { id, bytes } after each write and close (the file's size), { id, closed: true }, { id, mp3 }, { id, error }
 */
export const MP3_WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { createEncoder } = require(workerData.encodersPath);
const wasm = new WebAssembly.Module(fs.readFileSync(workerData.wasmPath));
const recordings = new Map();

async function encoder(channels) {
  const created = await createEncoder('audio/mpeg', wasm);
  created.configure({ sampleRate: workerData.sampleRate, channels, bitrate: workerData.bitrate });
  return created;
}

function append(recording, bytes) {
  if (bytes.length > 0) {
    fs.writeSync(recording.fd, bytes);
    recording.bytes += bytes.length;
  }
}

const operations = {
  async open({ id, path }) {
    recordings.set(id, { fd: fs.openSync(path, 'w'), bytes: 0, encoder: await encoder(2) });
  },
  write({ id, left, right }) {
    const recording = recordings.get(id);
    append(recording, recording.encoder.encode([left, right]));
    parentPort.postMessage({ id, bytes: recording.bytes });
  },
  close({ id }) {
    const recording = recordings.get(id);
    recordings.delete(id);
    try {
      append(recording, recording.encoder.finalize());
    } finally {
      fs.closeSync(recording.fd);
    }
    parentPort.postMessage({ id, bytes: recording.bytes, closed: true });
  },
  async mono({ id, pcm }) {
    const once = await encoder(1);
    const head = once.encode([pcm]).slice();
    const tail = once.finalize().slice();
    const mp3 = new Uint8Array(head.length + tail.length);
    mp3.set(head);
    mp3.set(tail, head.length);
    parentPort.postMessage({ id, mp3 }, [mp3.buffer]);
  },
};

// One at a time, in order: a recording's blocks are encoded in the order they were written.
let queue = Promise.resolve();
parentPort.on('message', (message) => {
  queue = queue.then(() => operations[message.op](message)).catch((error) => {
    recordings.delete(message.id);
    parentPort.postMessage({ id: message.id, error: String(error && error.code ? error.code : error && error.name) });
  });
});
`;

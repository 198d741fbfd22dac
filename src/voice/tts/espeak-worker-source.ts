/** What the espeak worker thread is started with. */
export interface EspeakWorkerData {
  /** The synthesizer's module, resolved on the main thread (an eval'd worker has no module path to resolve from). */
  espeakPath: string;
  /** One Int32: the id of the request the main thread wants stopped. */
  stop: SharedArrayBuffer;
}

/** A request to the worker; it serves one at a time, in the order received. */
export interface EspeakRequest {
  id: number;
  text: string;
  voice: string;
}

/** The worker's answers: each chunk of audio as it is produced, then the end of the request. */
export type EspeakReply = { id: number; samples: Int16Array } | { id: number; done: true } | { id: number; failed: true };

/**
 * The built-in synthesizer's worker thread, as plain JavaScript run with `new Worker(source, { eval: true })`:
 * Jest does not transform worker files, and this way the tests run the code that production runs.
 *
 * espeak-ng (compiled to JavaScript by Emscripten) synthesises synchronously and calls back with each short
 * stretch of audio, which is posted at once, its buffer transferred. The callback reads the shared stop flag, so
 * that the main thread can stop a synthesis half-way although this thread's event loop is held by it (returning
 * true makes espeak return).
 */
export const ESPEAK_WORKER_SOURCE = String.raw`
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { pathToFileURL } = require('node:url');

// Linux gives each thread a priority of its own. Under contention the cores go first to the main thread, whose
// event loop paces every call's audio; then to synthesis, whose first chunk each caller is waiting for; and last
// to the recordings' encoder (niceness 15, mp3-worker-source.ts), whose blocks may wait half a minute.
if (process.platform === 'linux') {
  try {
    require('node:os').setPriority(5);
  } catch {}
}

const stopRequest = new Int32Array(workerData.stop);
let engine;
let currentVoice;

const loading = import(pathToFileURL(workerData.espeakPath).href)
  .then((module) => module.default())
  .then((instance) => {
    engine = new instance.eSpeakNGWorker();
  });
// Without its synthesizer the thread is of no use: end it, and the pool fails its request and replaces it.
loading.catch(() => process.exit(1));

function synthesize(id, text, voice) {
  if (voice !== currentVoice) {
    currentVoice = undefined;
    if (engine.set_voice(voice) !== 0) throw new Error('unknown voice');
    currentVoice = voice;
  }
  engine.synthesize(text, (samples) => {
    if (Atomics.load(stopRequest, 0) === id) return true;
    // The samples are espeak's copy of its buffer (HEAP16.slice), so their buffer can be handed over as it is.
    if (samples.length > 0) parentPort.postMessage({ id, samples }, [samples.buffer]);
    return false;
  });
}

parentPort.on('message', ({ id, text, voice }) => {
  loading.then(() => {
    try {
      if (Atomics.load(stopRequest, 0) !== id) synthesize(id, text, voice);
      parentPort.postMessage({ id, done: true });
    } catch {
      parentPort.postMessage({ id, failed: true });
    }
  });
});
`;

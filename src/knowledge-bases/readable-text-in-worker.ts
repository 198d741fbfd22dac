import { Worker } from 'node:worker_threads';
import { scriptEntry } from '../common/script-entry';

const WORKER = scriptEntry(__dirname, 'readable-text.worker');

export class ReadableTextTimeout extends Error {}

/**
 * readableText (readable-text.ts) in a worker thread of its own: a large page costs seconds of CPU, which would
 * otherwise stall every request this instance serves meanwhile. The worker is ended after `timeoutMs`
 * (ReadableTextTimeout) and its heap is bounded, so a pathological page costs one failed source, not the
 * process.
 */
export function readableTextInWorker(html: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER.file, {
      workerData: html,
      execArgv: WORKER.execArgv,
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    });
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new ReadableTextTimeout());
    }, timeoutMs);
    // Neither keeps a stopping process alive: an extraction cut short is the job's, which is retried elsewhere.
    timer.unref();
    worker.unref();
    worker.once('message', (text: string) => {
      clearTimeout(timer);
      resolve(text);
    });
    worker.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    worker.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`readable-text worker exited with code ${code}`));
    });
  });
}

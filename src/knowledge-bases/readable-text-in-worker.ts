import * as path from 'node:path';
import { Worker } from 'node:worker_threads';

/** Built code runs the compiled worker; sources (tests, scripts) run the TypeScript one through the project's register hook. */
const FROM_SOURCE = __filename.endsWith('.ts');
const WORKER_FILE = path.join(__dirname, `readable-text.worker${FROM_SOURCE ? '.ts' : '.js'}`);
const EXEC_ARGV = FROM_SOURCE ? ['-r', path.join(__dirname, '..', '..', 'scripts', 'register.js')] : [];

export class ReadableTextTimeout extends Error {}

/**
 * readableText (readable-text.ts) in a worker thread of its own: a large page costs seconds of CPU, which would
 * otherwise stall every request this instance serves meanwhile. The worker is ended after `timeoutMs`
 * (ReadableTextTimeout) and its heap is bounded, so a pathological page costs one failed source, not the
 * process.
 */
export function readableTextInWorker(html: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_FILE, { workerData: html, execArgv: EXEC_ARGV, resourceLimits: { maxOldGenerationSizeMb: 512 } });
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

import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { ThreadCpuLimit } from '../common/background-thread';

/** Built code runs the compiled worker; sources (tests, scripts) run the TypeScript one through the project's register hook. */
const FROM_SOURCE = __filename.endsWith('.ts');
const WORKER_FILE = path.join(__dirname, `readable-text.worker${FROM_SOURCE ? '.ts' : '.js'}`);
const EXEC_ARGV = FROM_SOURCE ? ['-r', path.join(__dirname, '..', '..', 'scripts', 'register.js')] : [];

export class ReadableTextTimeout extends Error {}

/** What the worker tells: first its thread's id (see ThreadCpuLimit), then the page's readable text. */
export type ReadableTextReply = { thread: number | undefined } | { text: string };

/**
 * readableText (readable-text.ts) in a worker thread of its own, in the background: a large page costs seconds of
 * CPU, which would otherwise stall every request this instance serves meanwhile. The worker is ended once it has
 * used `timeoutMs` of CPU time (ReadableTextTimeout; background-thread.ts) and its heap is bounded, so a
 * pathological page costs one failed source, not the process.
 */
export function readableTextInWorker(html: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_FILE, { workerData: html, execArgv: EXEC_ARGV, resourceLimits: { maxOldGenerationSizeMb: 512 } });
    const limit = new ThreadCpuLimit(timeoutMs, () => {
      void worker.terminate();
      reject(new ReadableTextTimeout());
    });
    // It does not keep a stopping process alive: an extraction cut short is the job's, which is retried elsewhere.
    worker.unref();
    worker.on('message', (reply: ReadableTextReply) => {
      if ('thread' in reply) return limit.started(reply.thread);
      limit.stop();
      resolve(reply.text);
    });
    worker.once('error', (error) => {
      limit.stop();
      reject(error);
    });
    worker.once('exit', (code) => {
      limit.stop();
      reject(new Error(`readable-text worker exited with code ${code}`));
    });
  });
}

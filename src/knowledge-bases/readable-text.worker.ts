import { parentPort, workerData } from 'node:worker_threads';
import { runThisThreadInBackground } from '../common/background-thread';
import { readableText } from './readable-text';
import type { ReadableTextReply } from './readable-text-in-worker';

/**
 * Runs in a worker thread (see readableTextInWorker): the page's HTML in, its readable text out. The thread first
 * puts itself in the background (background-thread.ts) and tells its id, by which its CPU time is counted.
 */
const reply = (message: ReadableTextReply) => parentPort!.postMessage(message);
reply({ thread: runThisThreadInBackground() });
reply({ text: readableText(workerData as string) });

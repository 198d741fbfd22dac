import { parentPort, workerData } from 'node:worker_threads';
import { readableText } from './readable-text';

/** Runs in a worker thread (see readableTextInWorker): the page's HTML in, its readable text out. */
parentPort!.postMessage(readableText(workerData as string));

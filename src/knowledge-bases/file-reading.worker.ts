import { parentPort, workerData } from 'node:worker_threads';
import { FileReadError } from './file-read-error';
import type { FileReadingReply, FileReadingRequest } from './file-reading';
import { readFile } from './file-text';

/**
 * Runs in a worker thread (see readFileInWorker) of the file reading process (FileReader): a file's bytes in, its
 * text and passages (or why not) out. The thread has the process's priority, the lowest: a thread at a lower priority
 * than the thread that ends it holds that thread up (docs/benchmarks.md, "Knowledge from files").
 */
const { parts, kind } = workerData as FileReadingRequest;
readFile(Buffer.concat(parts), kind).then(
  (reading) => reply({ reading }),
  // Only a FileReadError's message is meant for the file's owner; anything else is named, never quoted (it may hold the file's text).
  (error: unknown) => reply(error instanceof FileReadError ? { refused: error.message } : { crashed: (error as Error)?.name ?? 'unknown' }),
);

function reply(message: FileReadingReply): void {
  parentPort!.postMessage(message);
}

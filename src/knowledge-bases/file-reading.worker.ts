import { parentPort, workerData } from 'node:worker_threads';
import { FileReadError } from './file-read-error';
import type { FileReadingReply, FileReadingRequest } from './file-reading';
import { readFile } from './file-text';

/**
 * Runs in a worker thread (see readFileInWorker): a file's bytes in, its text and passages (or why not) out.
 * The thread keeps the process's scheduling priority. At a lower one (niceness 19, as it had) a busy machine kept
 * it off the cores long enough that ending it stalled the event loop, which waits for the thread to exit: under
 * four busy processes, ending such a thread took 2.0–2.8 s against 43–73 ms, with the event loop held up to 288 ms
 * (docs/benchmarks.md, "Knowledge from files").
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

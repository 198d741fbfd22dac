import { readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { FileReadError } from './file-read-error';
import type { FileReadingReply, FileReadingRequest } from './file-reading';
import { readFile } from './file-text';

/**
 * Runs in a worker thread (see readFileInWorker): a file's bytes in, its text and passages (or why not) out.
 * The thread first lowers its own scheduling priority, so that on a machine with few cores the reading takes
 * the CPU the service's requests and PostgreSQL leave, instead of competing with them.
 */
yieldTheCpu();
const { parts, kind } = workerData as FileReadingRequest;
readFile(Buffer.concat(parts), kind).then(
  (reading) => reply({ reading }),
  // Only a FileReadError's message is meant for the file's owner; anything else is named, never quoted (it may hold the file's text).
  (error: unknown) => reply(error instanceof FileReadError ? { refused: error.message } : { crashed: (error as Error)?.name ?? 'unknown' }),
);

function reply(message: FileReadingReply): void {
  parentPort!.postMessage(message);
}

/**
 * On Linux each thread has a niceness of its own, set through the thread's id (from /proc/thread-self): the
 * lowest priority for this one. Elsewhere (or if it is refused) the reading keeps the process's priority.
 */
function yieldTheCpu(): void {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(threadId, constants.priority.PRIORITY_LOW);
  } catch {
    // Not Linux: nothing to lower.
  }
}

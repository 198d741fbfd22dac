import { Worker } from 'node:worker_threads';
import { scriptEntry } from '../common/script-entry';
import type { FileReading } from './file-text';
import type { FileKind } from './file-type';

const WORKER = scriptEntry(__dirname, 'file-reading.worker');

export interface FileReadingRequest {
  /** The file, in the pieces it is stored in (joined in the worker). */
  parts: Uint8Array[];
  kind: FileKind;
}

/** What the worker answers: the file's reading, a reason it cannot be read, or the name of an error it did not expect. */
export type FileReadingReply = { reading: FileReading } | { refused: string } | { crashed: string };

export interface FileReadingLimits {
  /** The longest the reading may take; then its worker is ended. */
  timeoutMs: number;
  /** The heap the worker may use; past it, Node.js ends the worker. */
  memoryMb: number;
}

/** The reading of a file, or why it cannot be read (a reason for the file's owner); `crash` names an unexpected error, for the logs. */
export type FileReadingOutcome = { reading: FileReading } | { error: string; crash?: string };

/**
 * Reads a file (file-text.ts) in a worker thread of its own, with a deadline and a heap bound: a file crafted to
 * make a parser loop or eat memory costs one failed source, never the service's event loop or its heap. A fresh
 * worker for each file, so that nothing of one file's reading outlives it. `signal` (the service stopping) ends the
 * worker and rejects with its reason. It runs in the file reading process (FileReader), not in the service.
 */
export function readFileInWorker(
  parts: Buffer[],
  kind: FileKind,
  limits: FileReadingLimits,
  signal: AbortSignal,
): Promise<FileReadingOutcome> {
  // Handed over, not copied: a piece that owns its whole memory is transferred as it is (a copy of any other).
  const owned = parts.map((part) =>
    part.byteOffset === 0 && part.byteLength === part.buffer.byteLength ? new Uint8Array(part.buffer) : new Uint8Array(part),
  );
  const request: FileReadingRequest = { parts: owned, kind };
  return new Promise((resolve, reject) => {
    const aborted = () => (signal.reason instanceof Error ? signal.reason : new Error('The reading was aborted'));
    if (signal.aborted) return reject(aborted());
    const worker = new Worker(WORKER.file, {
      workerData: request,
      transferList: owned.map((part) => part.buffer as ArrayBuffer),
      execArgv: WORKER.execArgv,
      resourceLimits: { maxOldGenerationSizeMb: limits.memoryMb },
    });
    let settled = false;
    const settle = (outcome: FileReadingOutcome | { aborted: Error }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', abort);
      void worker.terminate();
      if ('aborted' in outcome) reject(outcome.aborted);
      else resolve(outcome);
    };
    const abort = () => settle({ aborted: aborted() });
    signal.addEventListener('abort', abort);
    const timer = setTimeout(() => settle({ error: tooSlow(limits.timeoutMs) }), limits.timeoutMs);
    // Neither keeps a stopping process alive: a reading cut short is the job's, which is retried.
    timer.unref();
    worker.unref();
    worker.once('message', (reply: FileReadingReply) =>
      settle('reading' in reply ? reply : 'refused' in reply ? { error: reply.refused } : { error: UNREADABLE, crash: reply.crashed }),
    );
    worker.once('error', (error: NodeJS.ErrnoException) =>
      settle(
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? { error: tooLarge(limits.memoryMb) }
          : { error: UNREADABLE, crash: error.code ?? error.name },
      ),
    );
    worker.once('exit', (code) => settle({ error: UNREADABLE, crash: `exit ${code}` }));
  });
}

export const UNREADABLE = 'The file could not be read';
export const tooSlow = (timeoutMs: number) => `The file took longer than ${timeoutMs / 1000} s to read, and was given up`;
const tooLarge = (memoryMb: number) => `The file needs more than ${memoryMb} MiB of memory to read, and was given up`;

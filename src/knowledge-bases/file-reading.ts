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
  /**
   * The heap the worker may use (past it, Node.js ends the worker); the process reading it may grow by this much
   * and READING_OVERHEAD_MB more, all its memory counted (see readFileInWorker).
   */
  memoryMb: number;
}

/** The reading of a file, or why it cannot be read (a reason for the file's owner); `crash` names an unexpected error, for the logs. */
export type FileReadingOutcome = { reading: FileReading } | { error: string; crash?: string };

/**
 * What a reading needs beyond its heap: its thread, the parsers' code, the young generation, the file (a 100-page PDF
 * read by the compiled service grows its process by some 80 MiB, heap included: docs/benchmarks.md). Also the most a
 * reading process keeps between readings before it is replaced, so that each reading has its whole bound.
 */
export const READING_OVERHEAD_MB = 128;
/** How often the process's resident memory is checked while a file is read. */
const MEMORY_CHECK_MS = 20;
const MIB = 1024 * 1024;

/**
 * Reads a file (file-text.ts) in a worker thread of its own, with a deadline and two memory bounds: a file crafted to
 * make a parser loop or eat memory costs one failed source, never the service's event loop or its memory. A fresh
 * worker for each file, so that nothing of one file's reading outlives it. It runs in a file reading process
 * (FileReader), which reads one file at a time, so that the process's memory is the reading's:
 * - the worker's heap is bounded by `limits.memoryMb` (V8 ends the worker past it);
 * - memory outside the heap (the buffers a parser inflates into, which the heap bound does not count) is bounded
 *   with the rest: the process's resident memory is checked every MEMORY_CHECK_MS, and the reading is ended once
 *   it passes `memoryCeiling` bytes (the process's own size idle, plus `memoryMb` and READING_OVERHEAD_MB).
 * Resolves once the worker has ended (so that the process's memory is what it keeps after the reading); `signal`
 * (the reading given up by the service, or the service stopping) ends the worker and rejects with its reason.
 */
export function readFileInWorker(
  parts: Buffer[],
  kind: FileKind,
  limits: FileReadingLimits,
  { signal, memoryCeiling }: { signal: AbortSignal; memoryCeiling: number },
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
    let outcome: FileReadingOutcome | { aborted: Error } | undefined;
    const settle = (settled: FileReadingOutcome | { aborted: Error }) => {
      if (outcome) return;
      outcome = settled;
      clearTimeout(timer);
      clearInterval(watchdog);
      signal.removeEventListener('abort', abort);
      void worker.terminate();
    };
    const abort = () => settle({ aborted: aborted() });
    signal.addEventListener('abort', abort);
    const timer = setTimeout(() => settle({ error: tooSlow(limits.timeoutMs) }), limits.timeoutMs);
    const watchdog = setInterval(() => {
      if (process.memoryUsage.rss() > memoryCeiling) settle({ error: tooLarge(limits.memoryMb) });
    }, MEMORY_CHECK_MS);
    // Neither keeps a stopping process alive: a reading cut short is the job's, which is retried.
    timer.unref();
    watchdog.unref();
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
    worker.once('exit', (code) => {
      settle({ error: UNREADABLE, crash: `exit ${code}` });
      if (outcome && 'aborted' in outcome) reject(outcome.aborted);
      else resolve(outcome!);
    });
  });
}

/** The ceiling readFileInWorker keeps a reading's process under: its size idle, and what a reading may add. */
export const memoryCeiling = (idleBytes: number, limits: FileReadingLimits) => idleBytes + (limits.memoryMb + READING_OVERHEAD_MB) * MIB;

export const UNREADABLE = 'The file could not be read';
export const tooSlow = (timeoutMs: number) => `The file took longer than ${timeoutMs / 1000} s to read, and was given up`;
const tooLarge = (memoryMb: number) => `The file needs more than ${memoryMb} MiB of memory to read, and was given up`;

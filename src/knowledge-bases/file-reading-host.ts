import { FileReadingOutcome, memoryCeiling, READING_OVERHEAD_MB, readFileInWorker, UNREADABLE } from './file-reading';
import type { HostMessage, HostReply } from './file-reader';

/**
 * A process that reads files for the service (see FileReader): started by it at the lowest CPU priority, it reads the
 * files it is sent, one at a time, each in a worker thread of its own (readFileInWorker: a deadline, a heap bound, and
 * a bound on this process's resident memory), and answers each once its worker has ended, with the outcome (none
 * for a reading the service gave up) and whether it asks to be replaced: when the reading left it holding more than
 * READING_OVERHEAD_MB over its size idle (the allocator does not always give memory back), a fresh process costs less.
 * Ending a reading's thread waits for that thread, here and not on the service's event loop.
 */
const readings = new Map<number, AbortController>();
/** This process's resident memory before any reading: what the memory bound of each reading counts from. */
const IDLE_BYTES = process.memoryUsage.rss();

process.on('message', (message: HostMessage) => {
  if ('cancel' in message) return readings.get(message.cancel)?.abort(new Error('Given up by the service'));
  const { id, parts, kind, limits } = message;
  const reading = new AbortController();
  readings.set(id, reading);
  void readFileInWorker(parts, kind, limits, { signal: reading.signal, memoryCeiling: memoryCeiling(IDLE_BYTES, limits) })
    .then(
      (outcome) => outcome,
      // A cancel: the service has already given the reading up, and is told only that it has ended. Else the worker
      // could not be started: named, never quoted.
      (error: unknown): FileReadingOutcome | undefined =>
        reading.signal.aborted ? undefined : { error: UNREADABLE, crash: error instanceof Error ? error.name : 'unknown' },
    )
    .then((outcome) => {
      readings.delete(id);
      // Kept within READING_OVERHEAD_MB of its size idle, the process leaves the next reading its whole bound.
      const kept = process.memoryUsage.rss() - IDLE_BYTES;
      send({ id, outcome, replace: kept > READING_OVERHEAD_MB * 1024 * 1024 });
    });
});

// The service gone (stopped, or killed), or this process replaced: nothing is left to read for.
process.on('disconnect', () => process.exit(0));

function send(reply: HostReply): void {
  process.send!(reply);
}

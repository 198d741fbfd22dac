import { readFileInWorker } from './file-reading';
import type { HostMessage, HostReply } from './file-reader';

/**
 * The process that reads files for the service (see FileReader): started by it at the lowest CPU priority, it reads
 * each file it is sent in a worker thread of its own (readFileInWorker: a deadline and a heap bound per file) and
 * answers with the outcome. Ending a reading's thread waits for that thread, here and not on the service's event loop.
 */
const readings = new Map<number, AbortController>();

process.on('message', (message: HostMessage) => {
  if ('cancel' in message) return readings.get(message.cancel)?.abort(new Error('Given up by the service'));
  const { id, parts, kind, limits } = message;
  const reading = new AbortController();
  readings.set(id, reading);
  readFileInWorker(parts, kind, limits, reading.signal)
    .then(
      (outcome) => send({ id, outcome }),
      // Only a cancel rejects: the service has already given the reading up.
      () => undefined,
    )
    .finally(() => readings.delete(id));
});

// The service gone (stopped, or killed), nothing is left to read for.
process.on('disconnect', () => process.exit(0));

function send(reply: HostReply): void {
  process.send!(reply);
}

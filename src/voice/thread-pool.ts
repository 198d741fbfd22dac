import { access } from 'node:fs';

let started = false;

/**
 * Starts libuv's threadpool (fs, dns.lookup, zlib, crypto) from the calling thread, once: call it on the main thread
 * before starting a worker thread that lowers its own priority. Linux keeps a niceness per thread and a new thread
 * inherits its creator's, and libuv creates all of the pool's threads when the pool is first used, by whichever
 * thread uses it first: were that a synthesis or encoder thread (niceness 5 or 15), every file write, lookup and
 * hash of the service would run at that priority for the rest of its life.
 */
export function startThreadPool(): void {
  if (started) return;
  started = true;
  // Queued at once (the pool's threads are created as the first request is queued); its answer does not matter.
  access(__filename, () => undefined);
}

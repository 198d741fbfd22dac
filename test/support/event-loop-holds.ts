import { readFileSync } from 'node:fs';

/** How often the watch's timer turns, in ms. */
const PERIOD_MS = 10;

/**
 * Watches how long this thread's event loop is held by this thread's own work, over a stretch of a test: the longest
 * delay of a timer that should turn every 10 ms (as monitorEventLoopDelay's max), less the time the thread spent
 * meanwhile waiting for a core while it could have run (the kernel's schedstat). On a machine busy with other work (a
 * test suite's other workers), a thread that is ready may wait hundreds of milliseconds for a core; that is not the
 * service holding its loop. A function running on this thread, or this thread waiting for one of its own (a worker's
 * end), is.
 */
export function watchEventLoopHolds(): { stop(): number } {
  let longest = 0;
  let last = performance.now();
  let lastQueued = queuedMs();
  const turn = () => {
    const now = performance.now();
    const queued = queuedMs();
    longest = Math.max(longest, now - last - (queued - lastQueued) - PERIOD_MS);
    last = now;
    lastQueued = queued;
  };
  const timer = setInterval(turn, PERIOD_MS);
  return {
    /** The longest hold, in ms, counting the stretch since the timer's last turn (a hold that has just ended). */
    stop() {
      clearInterval(timer);
      turn();
      return longest;
    },
  };
}

/** This thread's time on a run queue so far, waiting for a core, in ms (the second field of its schedstat). */
function queuedMs(): number {
  return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) / 1e6;
}

import { readFileSync, readlinkSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';

/**
 * Heavy work that nobody waits on at once (reading an uploaded file, a page's readable text) runs in a worker
 * thread in the background: the cores go first to the service's requests, its calls' audio and PostgreSQL. Its
 * time limit then counts the CPU time the thread used, not the time it waited for a core (ThreadCpuLimit).
 */

/**
 * Called in the worker thread. On Linux each thread is scheduled on its own, named by its id (from
 * /proc/thread-self): this one takes the lowest niceness, so that under contention the cores go to the others.
 * (`SCHED_IDLE` would give way sooner, but Node.js has no call for it, and running util-linux's `chrt` forks the
 * whole process: 92 ms a spawn in a process of 1.5 GiB, during which its event loop stood still for 63 ms.)
 * Returns the thread's id for ThreadCpuLimit (undefined where threads have none to read: not Linux).
 */
export function runThisThreadInBackground(): number | undefined {
  let threadId: number;
  try {
    threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return undefined;
  }
  try {
    setPriority(threadId, constants.priority.PRIORITY_LOW);
  } catch {
    // Refused: the thread keeps the process's priority.
  }
  return threadId;
}

/** How often a ThreadCpuLimit reads its thread's CPU time. */
const CHECK_EVERY_MS = 50;
/** A thread in the background may wait for a core: it is given up once this many times its CPU limit has passed, whatever it used. */
export const WAIT_FACTOR = 4;

/**
 * Calls `exceeded` once a worker thread has run `limitMs` on a core. The worker tells its thread id
 * (runThisThreadInBackground) once it has started; its CPU time is then read from
 * /proc/self/task/<id>/schedstat (nanoseconds). Where a thread has no id to read (not Linux), the time since then
 * counts instead. Whatever it used, a thread is given up WAIT_FACTOR × `limitMs` after the limit was set (a
 * machine too busy to give it a core).
 */
export class ThreadCpuLimit {
  private readonly setAt = performance.now();
  private counting: { threadId: number } | { since: number } | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(limitMs: number, exceeded: () => void) {
    this.timer = setInterval(() => {
      if (this.usedMs() < limitMs && performance.now() - this.setAt < WAIT_FACTOR * limitMs) return;
      this.stop();
      exceeded();
    }, CHECK_EVERY_MS);
    // It never keeps a stopping process alive: the work cut short is its job's, which is retried.
    this.timer.unref();
  }

  /** The worker has started, on the thread of this id (undefined: without one to read). */
  started(threadId: number | undefined): void {
    this.counting = threadId === undefined ? { since: performance.now() } : { threadId };
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** The CPU time the thread used so far (0 until it has started). */
  private usedMs(): number {
    const counting = this.counting;
    if (!counting) return 0;
    if ('since' in counting) return performance.now() - counting.since;
    try {
      return Number(readFileSync(`/proc/self/task/${counting.threadId}/schedstat`, 'latin1').split(' ')[0]) / 1e6;
    } catch {
      // The thread has just ended (its reply is on its way) or the kernel keeps no schedstat: the wait bound still holds.
      return 0;
    }
  }
}

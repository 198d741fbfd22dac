import { execFileSync } from 'node:child_process';
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
 * /proc/thread-self). The thread takes the `SCHED_IDLE` policy (through util-linux's `chrt`, since Node.js has no
 * call for it; any thread may lower its own): the kernel runs it only where a core has nothing else to run, and a
 * task that wakes there takes the core at once. The fallback where `chrt` is missing, the lowest niceness, lets
 * the thread finish its time slice first, which added a few milliseconds to requests' latency while files were
 * read (docs/benchmarks.md, "Knowledge from files"). Returns the thread's id for ThreadCpuLimit (undefined where
 * threads have none to read: not Linux).
 */
export function runThisThreadInBackground(): number | undefined {
  let threadId: number;
  try {
    threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return undefined;
  }
  try {
    execFileSync('chrt', ['--idle', '--pid', '0', String(threadId)], { stdio: 'ignore', timeout: 5_000 });
  } catch {
    try {
      setPriority(threadId, constants.priority.PRIORITY_LOW);
    } catch {
      // Refused: the thread keeps the process's priority.
    }
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

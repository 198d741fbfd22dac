import { once } from 'node:events';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { ThreadCpuLimit, WAIT_FACTOR } from '../src/common/background-thread';

const ROOT = path.resolve(__dirname, '..');
const MODULE = path.join(ROOT, 'src', 'common', 'background-thread.ts');
const EXEC_ARGV = ['-r', path.join(ROOT, 'scripts', 'register.js')];

/** The thread's scheduling policy and niceness, from /proc/thread-self/stat (fields 41 and 19; after the name's `)` field 3 comes first). */
const SCHEDULING = `
  const stat = require('node:fs').readFileSync('/proc/thread-self/stat', 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const scheduling = { policy: Number(fields[41 - 3]), niceness: Number(fields[19 - 3]) };
`;
const SCHED_OTHER = 0;

/** Runs `body` (JavaScript) in a worker thread that has the module as `background`, and waits for its first message. */
async function inWorker<T>(body: string): Promise<T> {
  const worker = new Worker(`const background = require(${JSON.stringify(MODULE)});\n${body}`, { eval: true, execArgv: EXEC_ARGV });
  try {
    const [message] = (await once(worker, 'message')) as [T];
    return message;
  } finally {
    await worker.terminate();
  }
}

type Scheduled = { threadId: number | undefined; policy: number; niceness: number };
const putInBackground = `
  const threadId = background.runThisThreadInBackground();
  ${SCHEDULING}
  require('node:worker_threads').parentPort.postMessage({ threadId, ...scheduling });
`;

describe('worker threads in the background', () => {
  it('a thread put in the background takes the lowest niceness, and tells its own id; the process is left as it was', async () => {
    const scheduled = await inWorker<Scheduled>(putInBackground);
    expect(scheduled).toEqual({ threadId: expect.any(Number), policy: SCHED_OTHER, niceness: 19 });
    expect(scheduled.threadId).not.toBe(process.pid);
    const main = await inWorker<Scheduled>(`${SCHEDULING.replace('thread-self', String(process.pid))}
      require('node:worker_threads').parentPort.postMessage(scheduling);`);
    expect(main).toEqual({ policy: SCHED_OTHER, niceness: 0 });
  });
});

describe('ThreadCpuLimit', () => {
  /** A worker that tells its thread id, then does `work` (JavaScript) and says 'done'. */
  function watch(work: string, limitMs: number): Promise<{ outcome: 'done' | 'exceeded'; afterMs: number }> {
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       parentPort.postMessage({ thread: Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop()) });
       ${work}
       parentPort.postMessage('done');`,
      { eval: true },
    );
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const end = (outcome: 'done' | 'exceeded') => {
        limit.stop();
        void worker.terminate();
        resolve({ outcome, afterMs: performance.now() - started });
      };
      const limit = new ThreadCpuLimit(limitMs, () => end('exceeded'));
      worker.on('message', (message: { thread: number } | 'done') => (message === 'done' ? end('done') : limit.started(message.thread)));
      worker.once('error', reject);
    });
  }
  const sleep = (ms: number) => `Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${ms});`;

  it('counts the CPU time the thread used, not the time it spent waiting', async () => {
    // Twice the limit asleep: the thread used no CPU, so it finishes (the wait bound is WAIT_FACTOR × the limit).
    const limitMs = 500;
    expect(WAIT_FACTOR * limitMs).toBeGreaterThan(2 * limitMs + 500);
    await expect(watch(sleep(2 * limitMs), limitMs)).resolves.toMatchObject({ outcome: 'done' });
  });

  it('ends a thread that keeps a core busy, not before it could have used its limit', async () => {
    const { outcome, afterMs } = await watch('for (;;);', 200);
    expect(outcome).toBe('exceeded');
    expect(afterMs).toBeGreaterThanOrEqual(200);
  });

  it('ends a thread that waits for too long, whatever it used', async () => {
    const { outcome, afterMs } = await watch(sleep(60_000), 200);
    expect(outcome).toBe('exceeded');
    expect(afterMs).toBeGreaterThanOrEqual(WAIT_FACTOR * 200);
  });
});

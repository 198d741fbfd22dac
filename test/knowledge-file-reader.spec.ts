import { Logger } from '@nestjs/common';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { FileReader } from '../src/knowledge-bases/file-reader';
import { READING_OVERHEAD_MB, UNREADABLE } from '../src/knowledge-bases/file-reading';
import { inflatingPdf, renamedPartBombDocx } from '../scripts/knowledge-fixtures';
import { watchEventLoopHolds } from './support/event-loop-holds';
import { NICE, statFields } from './support/threads';

/**
 * The process that reads files (FileReader): at the lowest CPU priority, one for the service's life, readings given up
 * on time, a dead host costing only the readings it had, and nothing left running once the service stops.
 */

const FIXTURES = path.join(__dirname, 'fixtures', 'knowledge');
const LIMITS = { timeoutMs: 30_000, memoryMb: 256 };
const fixture = (name: string) => [readFileSync(path.join(FIXTURES, name))];
const SCHED_IDLE = 5;

/** The file reading processes a process has started (their command line names the host). */
function hosts(parentPid = process.pid): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      try {
        const parent = Number(statFields(`/proc/${pid}/stat`)[1]);
        return parent === parentPid && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('file-reading-host');
      } catch {
        return false; // ended meanwhile
      }
    });
}

/** A process's scheduling policy and niceness, as the kernel reports them. */
function scheduling(pid: number): { policy: number; nice: number } {
  const sched = readFileSync(`/proc/${pid}/sched`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}\\s*:\\s*(-?\\d+)`, 'm').exec(sched)![1]);
  return { policy: field('policy'), nice: Number(statFields(`/proc/${pid}/stat`)[NICE]) };
}

/** Whether a process still runs (an ended one may linger as a zombie until its parent, or init, reaps it). */
function running(pid: number): boolean {
  try {
    return statFields(`/proc/${pid}/stat`)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Resolves once `condition` no longer holds, or after `withinMs`. */
async function waitWhile(condition: () => boolean, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (condition() && Date.now() < deadline) await sleep(10);
}

/**
 * Resolves once the process has ended, or after `withinMs`: long enough for a process at the lowest priority to be
 * given a core on a busy machine, shorter than laborious.pdf's reading (some 20 s of CPU).
 */
const ended = (pid: number, withinMs = 15_000) => waitWhile(() => running(pid), withinMs);

/** Resolves once the process has ended and been reaped (its exit handled by its parent, this process), or after `withinMs`. */
const gone = (pid: number, withinMs = 15_000) => waitWhile(() => existsSync(`/proc/${pid}`), withinMs);

/** Watches the reader's log for a process replaced at its request (it exits once the reader lets it go), and one that ended otherwise. */
function watchHostEnds(): { replaced: jest.SpyInstance; died: jest.SpyInstance } {
  return { replaced: jest.spyOn(Logger.prototype, 'log'), died: jest.spyOn(Logger.prototype, 'warn') };
}
const REPLACED = [{ how: 'exit 0' }, expect.stringContaining('replaced')];

/**
 * The process once it has the priority it reads files at: it runs node (the host), or it is still `chrt`, which has
 * set SCHED_IDLE and is to run node in its place. At SCHED_IDLE it may get no CPU to do so while other processes
 * keep the cores busy, so that is not waited for.
 */
async function started(pid: number): Promise<number> {
  while (readlinkSafe(`/proc/${pid}/exe`) !== process.execPath && scheduling(pid).policy !== SCHED_IDLE) await sleep(10);
  return pid;
}

/** The host started since `earlier` was taken (one the case before killed may still be ending, at its low priority). */
async function newHost(earlier: number[]): Promise<number> {
  // Not listed for a moment while `chrt` runs node in its place (its cmdline reads empty during the exec).
  for (;;) {
    const pid = hosts().find((listed) => !earlier.includes(listed));
    if (pid !== undefined) return pid;
    await sleep(10);
  }
}

function readlinkSafe(file: string): string | undefined {
  try {
    return readlinkSync(file);
  } catch {
    return undefined;
  }
}

/** The CPU time a process has used (user and system), in seconds; undefined once it has ended. */
function cpuSeconds(pid: number): number | undefined {
  try {
    const [utime, stime] = statFields(`/proc/${pid}/stat`).slice(11, 13).map(Number);
    return (utime + stime) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
/** The kernel's clock ticks a second (USER_HZ), in which /proc reports CPU time. */
const CLOCK_TICKS = 100;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A process's resident memory (VmRSS), or its peak so far (VmHWM), in MiB; undefined once it has ended. */
function memoryMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
  } catch {
    return undefined;
  }
}
const residentMiB = (pid: number) => memoryMiB(pid, 'VmRSS');
const peakResidentMiB = (pid: number) => memoryMiB(pid, 'VmHWM');

/** The outcome of a reading, and the peak resident memory of the process reading it, watched until it answered (it may then be replaced). */
async function withPeakMemory<T>(pid: number, reading: Promise<T>): Promise<{ outcome: T; peakMiB: number }> {
  let peakMiB = 0;
  let done = false;
  const outcome = reading.finally(() => (done = true));
  while (!done) {
    peakMiB = Math.max(peakMiB, peakResidentMiB(pid) ?? 0);
    await sleep(10);
  }
  return { outcome: await outcome, peakMiB: Math.max(peakMiB, peakResidentMiB(pid) ?? 0) };
}

/**
 * A bound on a reading process's memory that the readings must keep under: its size idle (some 160 MiB under the
 * tests' TypeScript hook, 50 MiB compiled), the reading's own bound and READING_OVERHEAD_MB, with room for the
 * moments between two checks. Without the bounds, the files below take it past 1.3 GiB.
 */
const PROCESS_BOUND_MIB = (memoryMb: number) => 256 + memoryMb + READING_OVERHEAD_MB + 128;

/**
 * Puts on the PATH a `chrt` that starts the command at the normal priority, for the cases that check something other
 * than the priority: at SCHED_IDLE a host gets no CPU at all while the suite's other tests keep both cores busy, and
 * its start (some 0.6 s of CPU under the TypeScript hook) can then outlast a test's timeout. Returns the undoing.
 */
function atNormalPriority(): () => void {
  const dir = mkdtempSync(path.join(tmpdir(), 'normal-chrt-'));
  writeFileSync(path.join(dir, 'chrt'), '#!/bin/sh\n# chrt --idle 0 command...: runs the command as it is\nshift 2\nexec "$@"\n');
  chmodSync(path.join(dir, 'chrt'), 0o755);
  const searched = process.env.PATH;
  process.env.PATH = `${dir}:${searched}`;
  return () => {
    process.env.PATH = searched;
    rmSync(dir, { recursive: true });
  };
}

describe('the file reading process', () => {
  let reader: FileReader;
  // Its one line (a host that died) is not what these cases check.
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(true));
  beforeEach(() => {
    reader = new FileReader();
  });
  // The next case starts with no host: this one's has ended, not merely been sent its signal.
  afterEach(async () => {
    jest.restoreAllMocks();
    const started = hosts();
    reader.beforeApplicationShutdown();
    for (const host of started) await ended(host);
  });

  // The priority is read as the process starts: at the lowest one it may get no CPU for a while on a busy machine.
  it('starts its process at the lowest CPU priority (SCHED_IDLE)', async () => {
    const earlier = hosts();
    void reader.read([Buffer.from('Words.')], 'text', LIMITS).catch(() => undefined);
    expect(scheduling(await started(await newHost(earlier))).policy).toBe(SCHED_IDLE);
  });

  it('starts its process at niceness 19 where there is no chrt', async () => {
    const earlier = hosts();
    const searched = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      void reader.read([Buffer.from('Words.')], 'text', LIMITS).catch(() => undefined);
    } finally {
      process.env.PATH = searched;
    }
    expect(scheduling(await started(await newHost(earlier)))).toEqual({ policy: 0, nice: 19 });
  });

  // What is checked below does not depend on the priority: their processes start at the normal one.
  describe('at the normal priority', () => {
    let undo: () => void;
    beforeAll(() => (undo = atNormalPriority()));
    afterAll(() => undo());

    it('reads files, one process for each file read at once, kept for the next', async () => {
      expect(hosts()).toEqual([]);
      const reading = await reader.read(fixture('faq.docx'), 'docx', LIMITS);
      expect(reading).toMatchObject({ reading: { passages: expect.any(Array) } });
      const [host] = hosts();
      const [markdown, text] = await Promise.all([
        reader.read(fixture('loyalty.md'), 'markdown', LIMITS),
        reader.read([Buffer.from('Plain words of the file.')], 'text', LIMITS),
      ]);
      expect(markdown).toHaveProperty('reading');
      expect(text).toEqual({
        reading: { content: 'Plain words of the file.', passages: [expect.objectContaining({ text: 'Plain words of the file.' })] },
      });
      const both = hosts();
      expect(both).toHaveLength(2);
      expect(both).toContain(host);
      expect(await reader.read(fixture('loyalty.md'), 'markdown', LIMITS)).toHaveProperty('reading');
      expect(hosts()).toEqual(both);
    });

    it('fails a reading as unreadable when the process cannot start, and starts one for the next file', async () => {
      const broken = mkdtempSync(path.join(tmpdir(), 'no-chrt-'));
      // A directory passes for an executable `chrt` (it is searchable), but the system cannot start it.
      mkdirSync(path.join(broken, 'chrt'));
      const searched = process.env.PATH;
      process.env.PATH = broken;
      try {
        expect(await reader.read([Buffer.from('Words.')], 'text', LIMITS)).toEqual({ error: UNREADABLE, crash: 'host EACCES' });
      } finally {
        process.env.PATH = searched;
        rmSync(broken, { recursive: true });
      }
      expect(await reader.read([Buffer.from('Words.')], 'text', LIMITS)).toHaveProperty('reading');
    });

    it('gives a reading up at its deadline without holding the event loop, keeps its process, and reads the next file', async () => {
      await reader.read([Buffer.from('Words.')], 'text', LIMITS);
      const [host] = hosts();
      const { replaced, died } = watchHostEnds();
      const holds = watchEventLoopHolds();
      const started = Date.now();
      const outcome = await reader.read(fixture('laborious.pdf'), 'pdf', { ...LIMITS, timeoutMs: 1_000 });
      const longestHold = holds.stop();
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
      expect(outcome).toEqual({ error: 'The file took longer than 1 s to read, and was given up' });
      expect(longestHold).toBeLessThan(100);
      // Not watched over the next file: if the process asked to be replaced, starting the next one forks this one,
      // which holds the event loop until the child runs its command (FileReader; on a busy machine, as long as the
      // scheduler makes the child wait).
      expect(await reader.read(fixture('loyalty.md'), 'markdown', LIMITS)).toHaveProperty('reading');
      // The process that was given the file up is not ended for it: it reads on (the next file went to it, or to
      // another while it ended the reading), or it asked to be replaced, to give back memory the reading's thread
      // left it (Node 24 often keeps more than READING_OVERHEAD_MB of it). Once it is no longer listed it has ended,
      // but may not have been reaped yet (a zombie's cmdline is empty): gone from /proc, its exit has been handled.
      const replacedAtItsRequest = !hosts().includes(host);
      if (replacedAtItsRequest) await gone(host);
      expect(died).not.toHaveBeenCalled();
      if (replacedAtItsRequest) expect(replaced).toHaveBeenCalledWith(...REPLACED);
      expect(hosts().length).toBeLessThanOrEqual(2);
    });

    it('refuses a DOCX whose main part (word/doc.bin, as _rels/.rels names it) inflates to 1,000 MiB, its process staying small', async () => {
      await reader.read([Buffer.from('Words.')], 'text', LIMITS);
      const [host] = hosts();
      const { outcome, peakMiB } = await withPeakMemory(host, reader.read([renamedPartBombDocx(1000)], 'docx', LIMITS));
      expect(outcome).toEqual({ error: 'The Word document expands to more than 100 MiB (a zip bomb, or a document too large to read)' });
      // The process's size idle (under the test's TypeScript hook, some 160 MiB) and what one reading may add at most.
      expect(peakMiB).toBeLessThan(PROCESS_BOUND_MIB(LIMITS.memoryMb));
    });

    it('ends a reading whose memory outside its heap grows past the bound (a PDF stream inflating to 512 MiB), its process staying under it', async () => {
      const limits = { timeoutMs: 120_000, memoryMb: 128 };
      await reader.read([Buffer.from('Words.')], 'text', limits);
      const [host] = hosts();
      const before = residentMiB(host)!;
      const { replaced } = watchHostEnds();
      const { outcome, peakMiB } = await withPeakMemory(host, reader.read([inflatingPdf(512)], 'pdf', limits));
      expect(outcome).toEqual({ error: 'The file needs more than 128 MiB of memory to read, and was given up' });
      expect(peakMiB).toBeLessThan(PROCESS_BOUND_MIB(limits.memoryMb));
      expect(await reader.read(fixture('loyalty.md'), 'markdown', limits)).toHaveProperty('reading');
      // Afterwards the process holds little more than before: the memory given back, or the process replaced at its
      // request, after this reading or the next (it then ends, and says so).
      const held = residentMiB(host);
      if (held === undefined || held >= before + READING_OVERHEAD_MB) {
        await gone(host);
        expect(replaced).toHaveBeenCalledWith(...REPLACED);
      }
    }, 150_000);

    it('fails the readings of a process that dies as unreadable, and starts another for the next file', async () => {
      await reader.read([Buffer.from('Words.')], 'text', LIMITS);
      const [host] = hosts();
      const reading = reader.read(fixture('laborious.pdf'), 'pdf', LIMITS);
      process.kill(host, 'SIGKILL');
      expect(await reading).toEqual({ error: UNREADABLE, crash: 'host SIGKILL' });
      expect(await reader.read(fixture('loyalty.md'), 'markdown', LIMITS)).toHaveProperty('reading');
      const [next] = hosts();
      expect(next).not.toBe(host);
    });

    it('ends the process and the readings under way when the service stops, and reads nothing after', async () => {
      await reader.read([Buffer.from('Words.')], 'text', LIMITS);
      const [host] = hosts();
      const reading = reader.read(fixture('laborious.pdf'), 'pdf', LIMITS);
      reader.beforeApplicationShutdown();
      await expect(reading).rejects.toThrow('The service is stopping');
      await ended(host);
      expect(running(host)).toBe(false);
      await expect(reader.read([Buffer.from('Words.')], 'text', LIMITS)).rejects.toThrow('The service is stopping');
      expect(hosts()).toEqual([]);
    });

    it('ends with the service when the service dies without stopping (killed mid-reading)', async () => {
      const script = `
        const { readFileSync } = require('node:fs');
        const { FileReader } = require(${JSON.stringify(path.join(__dirname, '..', 'src', 'knowledge-bases', 'file-reader.ts'))});
        void new FileReader().read([readFileSync(${JSON.stringify(path.join(FIXTURES, 'laborious.pdf'))})], 'pdf', { timeoutMs: 60000, memoryMb: 256 });
        setInterval(() => undefined, 1000);
      `;
      const service = spawn(process.execPath, ['-r', path.join(__dirname, '..', 'scripts', 'register.js'), '-e', script], {
        stdio: 'inherit',
        // The test's environment (its PATH), which Jest keeps apart from the process's.
        env: process.env,
      });
      let host: number | undefined;
      while (!(host = hosts(service.pid)[0])) await sleep(10);
      const exited = once(service, 'exit');
      service.kill('SIGKILL');
      await exited;
      // At once, not when the file's reading (some 20 s of CPU) would have ended: counted in its CPU time, not the
      // clock's, which a busy machine stretches.
      let used = 0;
      while (running(host)) {
        used = cpuSeconds(host) ?? used;
        await sleep(10);
      }
      expect(used).toBeLessThan(5);
    }, 120_000);
  });
});

import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { setPriority } from 'node:os';
import * as path from 'node:path';
import { scriptEntry } from '../common/script-entry';
import { FileReadingLimits, FileReadingOutcome, tooSlow, UNREADABLE } from './file-reading';
import type { FileKind } from './file-type';

const HOST = scriptEntry(__dirname, 'file-reading-host');

/** What the service sends a host: a file to read, or a reading it has given up. */
export type HostMessage = { id: number; parts: Buffer[]; kind: FileKind; limits: FileReadingLimits } | { cancel: number };
/**
 * What a host answers once a reading has ended: its outcome (none when the service gave it up), and whether the host
 * asks to be replaced (the reading left it holding more than READING_OVERHEAD_MB over its size idle).
 */
export interface HostReply {
  id: number;
  outcome?: FileReadingOutcome;
  replace: boolean;
}

interface Reading {
  resolve: (outcome: FileReadingOutcome) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/** A file reading process, and the reading it is doing until it answers for it (also after the service gave it up). */
interface Host {
  process: ChildProcess;
  reading?: number;
  /** Set once the service has given the reading up: the host is ended if it has not answered by then. */
  overdue?: NodeJS.Timeout;
  /** Replaced at its request: its end is expected. */
  retired?: true;
}

/**
 * How much later than the reading's deadline the service gives a reading up itself: the host's own deadline, counted
 * from the start of the reading's thread, normally ends it first; this one holds when the host cannot run (the
 * machine's load, or a host still starting).
 */
const DEADLINE_GRACE_MS = 5_000;
/** How long a host may take to end a reading the service has given up before it is killed. */
const CANCEL_GRACE_MS = 10_000;

/**
 * Reads files (file-text.ts) in processes of their own, the hosts (file-reading-host.ts), which run at the lowest CPU
 * priority Linux has (SCHED_IDLE, set by util-linux's `chrt` as each starts; niceness 19 where there is no `chrt`):
 * the cores go to the service's requests and calls first, and the readings take what they leave. A host reads one
 * file at a time, each in a worker thread of its own, with its deadline and two memory bounds (its heap, and the
 * host's whole resident memory: readFileInWorker); so there are as many hosts as files read at once (the job queue's
 * KNOWLEDGE_EXTRACTION_WORKERS), and the memory a host holds is one reading's.
 *
 * Why processes and not, as before, worker threads of the service: a thread at a low priority stalls the service's
 * event loop when it is ended, because ending a thread waits for it and the scheduler keeps it off the cores on a
 * busy machine (priority inversion, docs/benchmarks.md). Ending a reading in a host waits in the host.
 *
 * A host starts with the first file it is needed for and lives as long as the service: starting a process forks the
 * service's, which costs more the larger the service has grown (92 ms at 1.5 GiB), so it is done once per host, and
 * again only when a host asks to be replaced because a reading left it holding memory it does not give back.
 * The deadline is kept here too (DEADLINE_GRACE_MS later), so a host that the machine's load keeps from running still
 * gives the reading up; that host takes no other file until it has answered (or is killed CANCEL_GRACE_MS later). If
 * a host dies, the reading it had fails as a crashed reading does.
 */
@Injectable()
export class FileReader implements BeforeApplicationShutdown {
  private readonly logger = new Logger(FileReader.name);
  private readonly hosts = new Set<Host>();
  private readonly readings = new Map<number, Reading>();
  private lastId = 0;
  private stopped = false;

  /** The reading of a file, or why it cannot be read. Rejects only when the service stops before it is done (its job is retried). */
  read(parts: Buffer[], kind: FileKind, limits: FileReadingLimits): Promise<FileReadingOutcome> {
    if (this.stopped) return Promise.reject(stopping());
    const host = [...this.hosts].find((candidate) => candidate.reading === undefined) ?? this.startHost();
    const id = ++this.lastId;
    host.reading = id;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.settle(id, { error: tooSlow(limits.timeoutMs) });
        if (host.reading !== id) return;
        host.process.send({ cancel: id } satisfies HostMessage);
        host.overdue = setTimeout(() => host.process.kill('SIGKILL'), CANCEL_GRACE_MS).unref();
      }, limits.timeoutMs + DEADLINE_GRACE_MS);
      timer.unref();
      this.readings.set(id, { resolve, reject, timer });
      // A reading under way keeps the process alive (the service stopping ends it first); an idle host does not.
      host.process.channel?.ref();
      host.process.send({ id, parts, kind, limits } satisfies HostMessage);
    });
  }

  /** Before the job queue stops (it waits for the jobs in flight): the readings under way are ended at once, the hosts with them. */
  beforeApplicationShutdown(): void {
    this.stopped = true;
    for (const host of this.hosts) host.process.kill('SIGKILL');
    for (const id of [...this.readings.keys()]) this.settle(id, stopping());
  }

  private startHost(): Host {
    const node = [process.execPath, ...HOST.execArgv, HOST.file];
    const chrt = chrtPath();
    const [command, ...args] = chrt ? [chrt, '--idle', '0', ...node] : node;
    const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' });
    const host: Host = { process: child };
    // Only a reading under way keeps the service's process alive (see read and answered), never the host itself.
    child.unref();
    child.channel?.unref();
    child.on('message', (reply: HostReply) => this.answered(host, reply));
    // A host that could not start has no exit; sending to one that has just died is settled by its exit.
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (child.pid === undefined) this.lost(host, error.code ?? 'spawn');
    });
    child.once('exit', (code, signal) => this.lost(host, signal ?? `exit ${code}`));
    if (!chrt && child.pid !== undefined) lowerPriority(child.pid);
    this.hosts.add(host);
    return host;
  }

  /** A host has ended a reading: it is free for the next (or replaced, at its request), and the reading settled if it still waits. */
  private answered(host: Host, { id, outcome, replace }: HostReply): void {
    if (host.reading === id) this.free(host);
    if (replace) {
      this.hosts.delete(host);
      host.retired = true;
      // It exits once disconnected.
      host.process.disconnect();
    }
    if (outcome) this.settle(id, outcome);
  }

  private free(host: Host): void {
    host.reading = undefined;
    clearTimeout(host.overdue);
    host.process.channel?.unref();
  }

  /** A host ended (or never started): the reading it had fails as a crashed reading does; the next file starts another. */
  private lost(host: Host, how: string): void {
    if (!this.hosts.delete(host) && !host.retired) return;
    const reading = host.reading;
    this.free(host);
    if (this.stopped) return;
    if (host.retired) this.logger.log({ how }, 'A file reading process was replaced, to give back the memory a reading left it');
    else this.logger.warn({ how }, 'A file reading process ended');
    if (reading !== undefined) this.settle(reading, { error: UNREADABLE, crash: `host ${how}` });
  }

  private settle(id: number, outcome: FileReadingOutcome | Error): void {
    const reading = this.readings.get(id);
    if (!reading) return;
    this.readings.delete(id);
    clearTimeout(reading.timer);
    if (outcome instanceof Error) reading.reject(outcome);
    else reading.resolve(outcome);
  }
}

const stopping = () => new Error('The service is stopping');

function lowerPriority(pid: number): void {
  try {
    setPriority(pid, 19);
  } catch {
    // Already ended: its exit settles its readings.
  }
}

/** Where util-linux's `chrt` is on the PATH, if it is (looked up as each host starts: once in the service's life). */
function chrtPath(): string | undefined {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .map((dir) => path.join(dir, 'chrt'))
    .find(executable);
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

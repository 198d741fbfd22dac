import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { setPriority } from 'node:os';
import * as path from 'node:path';
import { scriptEntry } from '../common/script-entry';
import { FileReadingLimits, FileReadingOutcome, tooSlow, UNREADABLE } from './file-reading';
import type { FileKind } from './file-type';

const HOST = scriptEntry(__dirname, 'file-reading-host');

/** What the service sends the host: a file to read, or a reading it has given up. */
export type HostMessage = { id: number; parts: Buffer[]; kind: FileKind; limits: FileReadingLimits } | { cancel: number };
/** What the host answers: a reading's outcome. */
export interface HostReply {
  id: number;
  outcome: FileReadingOutcome;
}

interface Reading {
  resolve: (outcome: FileReadingOutcome) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * Reads files (file-text.ts) in a process of its own, the host (file-reading-host.ts), which runs at the lowest CPU
 * priority Linux has (SCHED_IDLE, set by util-linux's `chrt` as it starts; niceness 19 where there is no `chrt`): the
 * cores go to the service's requests and calls first, and the reading takes what they leave. Inside the host, each
 * file is read in a worker thread of its own, with its deadline and heap bound.
 *
 * Why a process and not, as before, a worker thread of the service: a thread at a low priority stalls the service's
 * event loop when it is ended, because ending a thread waits for it and the scheduler keeps it off the cores on a
 * busy machine (priority inversion, docs/benchmarks.md). Ending a reading in the host waits in the host.
 *
 * The host starts with the first file and lives as long as the service: starting a process forks the service's, which
 * costs more the larger the service has grown (92 ms at 1.5 GiB), so it is done once. The deadline is kept here too,
 * so a host that the machine's load keeps from running still gives the reading up on time. If the host dies, the
 * readings under way fail as a crashed reading does, and the next file starts another.
 */
@Injectable()
export class FileReader implements BeforeApplicationShutdown {
  private readonly logger = new Logger(FileReader.name);
  private host: ChildProcess | undefined;
  private readonly readings = new Map<number, Reading>();
  private lastId = 0;
  private stopped = false;

  /** The reading of a file, or why it cannot be read. Rejects only when the service stops before it is done (its job is retried). */
  read(parts: Buffer[], kind: FileKind, limits: FileReadingLimits): Promise<FileReadingOutcome> {
    if (this.stopped) return Promise.reject(stopping());
    const host = this.host ?? this.startHost();
    const id = ++this.lastId;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.settle(id, { error: tooSlow(limits.timeoutMs) });
        this.host?.send({ cancel: id } satisfies HostMessage);
      }, limits.timeoutMs);
      timer.unref();
      this.readings.set(id, { resolve, reject, timer });
      // A reading under way keeps the process alive (the service stopping ends it first); an idle host does not.
      host.channel?.ref();
      host.send({ id, parts, kind, limits } satisfies HostMessage);
    });
  }

  /** Before the job queue stops (it waits for the jobs in flight): the readings under way are ended at once, the host with them. */
  beforeApplicationShutdown(): void {
    this.stopped = true;
    this.host?.kill('SIGKILL');
    for (const id of [...this.readings.keys()]) this.settle(id, stopping());
  }

  private startHost(): ChildProcess {
    const node = [process.execPath, ...HOST.execArgv, HOST.file];
    const chrt = chrtPath();
    const [command, ...args] = chrt ? [chrt, '--idle', '0', ...node] : node;
    const host = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' });
    // Only a reading under way keeps the service's process alive (see read and settle), never the host itself.
    host.unref();
    host.channel?.unref();
    host.on('message', ({ id, outcome }: HostReply) => this.settle(id, outcome));
    // A host that could not start has no exit; sending to one that has just died is settled by its exit.
    host.on('error', (error: NodeJS.ErrnoException) => {
      if (host.pid === undefined) this.lost(host, error.code ?? 'spawn');
    });
    host.once('exit', (code, signal) => this.lost(host, signal ?? `exit ${code}`));
    if (!chrt && host.pid !== undefined) lowerPriority(host.pid);
    this.host = host;
    return host;
  }

  /** The host ended (or never started): the readings it had fail as a crashed reading does; the next file starts another. */
  private lost(host: ChildProcess, how: string): void {
    if (this.host === host) this.host = undefined;
    if (this.stopped) return;
    this.logger.warn({ how }, 'The file reading process ended');
    for (const id of [...this.readings.keys()]) this.settle(id, { error: UNREADABLE, crash: `host ${how}` });
  }

  private settle(id: number, outcome: FileReadingOutcome | Error): void {
    const reading = this.readings.get(id);
    if (!reading) return;
    this.readings.delete(id);
    clearTimeout(reading.timer);
    if (this.readings.size === 0) this.host?.channel?.unref();
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

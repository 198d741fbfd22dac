import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { VOICE_SAMPLE_RATE } from '../voice-format';
import { MP3_WORKER_SOURCE } from './mp3-worker-source';

/** The recording's bitrate in kbit/s: stereo 16 kHz, constant. */
const BITRATE = 64;
/** Bytes of MP3 per second of audio (a constant bitrate: every frame of 576 samples is 288 bytes). */
export const MP3_BYTES_PER_SECOND = (BITRATE * 1000) / 8;

/** Blocks kept for reuse per spool: one being encoded while the next fills, one spare. */
const SPARE_BLOCKS = 2;

type Reply = {
  id: number;
  bytes?: number;
  left?: Float32Array<ArrayBuffer>;
  right?: Float32Array<ArrayBuffer>;
  closed?: true;
  mp3?: Uint8Array;
  error?: string;
};

/** A stereo block of samples (as floats, for the encoder). */
export interface StereoBlock {
  left: Float32Array<ArrayBuffer>;
  right: Float32Array<ArrayBuffer>;
}
/** Handles the worker's replies about one id; true when that id is done with. */
type Listener = (reply: Reply) => boolean;

/** One MP3 spool file being written by the worker. */
export interface Mp3Spool {
  /** Encodes and appends a stereo block (the buffers are transferred: the caller gives them up). */
  write(left: Float32Array, right: Float32Array): void;
  /** A block the worker has encoded and handed back, to be filled again (so that a call allocates no more). */
  reuse(): StereoBlock | undefined;
  /** Bytes of the blocks kept for reuse. */
  readonly spareBytes: number;
  /** Bytes of MP3 in the file so far, as last reported by the worker. */
  readonly bytes: number;
  /** Blocks handed to the worker and not encoded yet. */
  readonly backlog: number;
  /** Resolves once the worker has encoded every block written so far (or the spool failed). */
  caughtUp(): Promise<void>;
  /** Flushes the encoder's last frames; resolves with the file's final size. The caller closes the file. */
  close(): Promise<number>;
}

/** The worker's side of a spool: writes posted to it, its replies applied here. */
class WorkerSpool implements Mp3Spool {
  bytes = 0;
  backlog = 0;
  private failure: Error | undefined;
  private closing: { resolve(bytes: number): void; reject(error: Error): void } | undefined;
  private waiters: (() => void)[] = [];
  private readonly spare: StereoBlock[] = [];

  constructor(
    private readonly id: number,
    private readonly post: (message: object, transfer?: ArrayBuffer[]) => void,
  ) {}

  write(left: Float32Array, right: Float32Array): void {
    if (this.failure || this.closing) return;
    this.backlog++;
    this.post({ op: 'write', id: this.id, left, right }, [left.buffer as ArrayBuffer, right.buffer as ArrayBuffer]);
  }

  reuse(): StereoBlock | undefined {
    return this.spare.pop();
  }

  get spareBytes(): number {
    return this.spare.reduce((sum, block) => sum + block.left.byteLength + block.right.byteLength, 0);
  }

  caughtUp(): Promise<void> {
    if (this.backlog === 0 || this.failure) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  close(): Promise<number> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.closing = { resolve, reject };
      this.post({ op: 'close', id: this.id });
    });
  }

  readonly receive: Listener = (reply) => {
    if (reply.error !== undefined) {
      this.failure = new Error(`MP3 encoding failed (${reply.error})`);
      this.closing?.reject(this.failure);
      this.wake();
      return true;
    }
    this.bytes = reply.bytes ?? this.bytes;
    if (reply.closed) {
      this.closing?.resolve(this.bytes);
      return true;
    }
    if (reply.left && reply.right && this.spare.length < SPARE_BLOCKS) this.spare.push({ left: reply.left, right: reply.right });
    this.backlog--;
    if (this.backlog === 0) this.wake();
    return false;
  };

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

/** The worker and the replies it owes: its ids are failed together when it exits. */
interface EncoderThread {
  worker: Worker;
  listeners: Map<number, Listener>;
}

/**
 * MP3 encoding off the event loop: one worker thread for the instance, hosting every spoken call's encoder and
 * writing their spool files, and encoding the short voice previews. If the worker dies, the recordings it was
 * writing fail (their calls keep no audio of that socket) and the next recording starts a new worker.
 */
@Injectable()
export class Mp3Encoding implements OnApplicationShutdown {
  private readonly logger = new Logger('Voice');
  private thread: EncoderThread | undefined;
  private nextId = 1;

  /** Starts encoding into the file open as `fd` (the caller's until `close` settles: it closes it then). */
  open(fd: number): Mp3Spool {
    const id = this.nextId++;
    const { worker, listeners } = this.started();
    const spool = new WorkerSpool(id, (message, transfer) => worker.postMessage(message, transfer));
    listeners.set(id, spool.receive);
    worker.postMessage({ op: 'open', id, fd });
    return spool;
  }

  /** A short mono sample (16 kHz) as one MP3. */
  encodeMono(pcm: Int16Array): Promise<Buffer> {
    const id = this.nextId++;
    const floats = Float32Array.from(pcm, (sample) => sample / 32768);
    const { worker, listeners } = this.started();
    return new Promise((resolve, reject) => {
      listeners.set(id, (reply) => {
        if (reply.mp3) resolve(Buffer.from(reply.mp3.buffer, reply.mp3.byteOffset, reply.mp3.byteLength));
        else reject(new Error(`MP3 encoding failed (${reply.error})`));
        return true;
      });
      worker.postMessage({ op: 'mono', id, pcm: floats }, [floats.buffer]);
    });
  }

  /** Stops the worker; the recordings it was writing fail. */
  async onApplicationShutdown(): Promise<void> {
    const worker = this.thread?.worker;
    this.thread = undefined;
    await worker?.terminate();
  }

  private started(): EncoderThread {
    if (this.thread) return this.thread;
    const worker = new Worker(MP3_WORKER_SOURCE, {
      eval: true,
      workerData: {
        encodersPath: require.resolve('wasm-media-encoders'),
        wasmPath: require.resolve('wasm-media-encoders/wasm/mp3'),
        sampleRate: VOICE_SAMPLE_RATE,
        bitrate: BITRATE,
      },
    });
    const thread: EncoderThread = { worker, listeners: new Map() };
    // An idle encoder must not keep a process alive (the CLI, a test); a recording in flight has its socket for that.
    worker.unref();
    worker.on('message', (reply: Reply) => {
      if (thread.listeners.get(reply.id)?.(reply)) thread.listeners.delete(reply.id);
    });
    worker.on('error', (error) => this.logger.error({ error: { name: error.name } }, 'The MP3 encoder stopped'));
    worker.on('exit', () => {
      if (this.thread === thread) this.thread = undefined;
      const orphaned = [...thread.listeners.entries()];
      thread.listeners.clear();
      for (const [id, listener] of orphaned) listener({ id, error: 'worker exited' });
    });
    this.thread = thread;
    return thread;
  }
}

import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { startThreadPool } from '../thread-pool';
import { VOICE_SAMPLE_RATE } from '../voice-format';
import { MP3_WORKER_SOURCE } from './mp3-worker-source';

/**
 * The rates a recording is encoded at, each with its constant bitrate in kbit/s (stereo): the pipeline's 16 kHz,
 * or a phone line's 8 kHz (MPEG-2.5), all that a carrier's call carries, for about half the encoder's CPU
 * (docs/benchmarks.md, "Phone calls"). The audio written is always at VOICE_SAMPLE_RATE; LAME converts it.
 */
const BITRATES = { 16_000: 64, 8_000: 32 } as const;
export type RecordingSampleRate = keyof typeof BITRATES;
/** Bytes of MP3 per second of audio at a recording's rate (a constant bitrate). */
export const mp3BytesPerSecond = (rate: RecordingSampleRate): number => (BITRATES[rate] * 1000) / 8;

/** Blocks kept for reuse per spool: one being encoded while the next fills, one spare. */
const SPARE_BLOCKS = 2;
/**
 * Stereo blocks (a quarter of a second each) one recording may have waiting for its encoder, the one it fills
 * included: 32 s, so that a visitor's whole burst (30 s at most, taken into the recording at once) is kept.
 */
export const MAX_BLOCKS_PER_SPOOL = 128;
/**
 * Blocks every recording of the instance may have waiting, at most: 512 s of audio, 32 MiB. Beyond either bound
 * (the encoders are behind: more calls than their threads keep up with, or the cores are busy elsewhere) a
 * recording drops what it is given until blocks come back: see SpooledRecorder.
 */
export const MAX_BLOCKS_IN_FLIGHT = 2_048;
/** Recordings a thread takes before another is started (one thread keeps up with about 130 at real time). */
export const SPOOLS_PER_THREAD = 100;
/** Encoder threads at most: one per core. */
const MAX_THREADS = Math.max(1, availableParallelism());

/** What the worker configures LAME with for a recording at `rate`. */
const format = (rate: RecordingSampleRate) => ({ outputSampleRate: rate, bitrate: BITRATES[rate] });

type Reply = {
  id: number;
  bytes?: number;
  block?: Int16Array<ArrayBuffer>;
  closed?: true;
  mp3?: Uint8Array;
  error?: string;
};

/** A stereo block of 16-bit samples, interleaved (left, right, left, …): what the recorder fills and the worker encodes. */
export type StereoBlock = Int16Array<ArrayBuffer>;
/** Handles the worker's replies about one id; true when that id is done with. */
type Listener = (reply: Reply) => boolean;

/** The blocks of every recording waiting for the encoders: one count for the instance, with its bound. */
class BlockBudget {
  inFlight = 0;

  constructor(readonly max: number) {}

  take(): boolean {
    if (this.inFlight >= this.max) return false;
    this.inFlight++;
    return true;
  }

  give(blocks: number): void {
    this.inFlight -= blocks;
  }
}

/** One MP3 spool file being written by an encoder thread. */
export interface Mp3Spool {
  /**
   * Room for one more block: true when this spool and the instance are under their bounds (the room is then held
   * for the next `write`), false when the encoder is that far behind (the caller drops audio meanwhile).
   */
  reserve(): boolean;
  /** Encodes and appends a stereo block, after `reserve` (the buffer is transferred: the caller gives it up). */
  write(block: StereoBlock): void;
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
  private reserved = false;
  private failure: Error | undefined;
  private closing: { resolve(bytes: number): void; reject(error: Error): void } | undefined;
  private waiters: (() => void)[] = [];
  private readonly spare: StereoBlock[] = [];

  constructor(
    private readonly id: number,
    private readonly post: (message: object, transfer?: ArrayBuffer[]) => void,
    private readonly budget: BlockBudget,
  ) {}

  reserve(): boolean {
    if (this.reserved) return true;
    if (this.failure || this.closing || this.backlog >= MAX_BLOCKS_PER_SPOOL || !this.budget.take()) return false;
    this.reserved = true;
    return true;
  }

  write(block: StereoBlock): void {
    if (!this.reserved) throw new Error('An MP3 block written without room reserved');
    this.reserved = false;
    if (this.failure || this.closing) return this.budget.give(1);
    this.backlog++;
    this.post({ op: 'write', id: this.id, block }, [block.buffer]);
  }

  reuse(): StereoBlock | undefined {
    return this.spare.pop();
  }

  get spareBytes(): number {
    return this.spare.reduce((sum, block) => sum + block.byteLength, 0);
  }

  caughtUp(): Promise<void> {
    if (this.backlog === 0 || this.failure) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  close(): Promise<number> {
    this.release();
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.closing = { resolve, reject };
      this.post({ op: 'close', id: this.id });
    });
  }

  readonly receive: Listener = (reply) => {
    if (reply.error !== undefined) {
      this.failure = new Error(`MP3 encoding failed (${reply.error})`);
      this.budget.give(this.backlog);
      this.backlog = 0;
      this.release();
      this.closing?.reject(this.failure);
      this.wake();
      return true;
    }
    this.bytes = reply.bytes ?? this.bytes;
    if (reply.closed) {
      this.closing?.resolve(this.bytes);
      return true;
    }
    if (reply.block && this.spare.length < SPARE_BLOCKS) this.spare.push(reply.block);
    this.backlog--;
    this.budget.give(1);
    if (this.backlog === 0) this.wake();
    return false;
  };

  /** The room reserved for a block that will not come. */
  private release(): void {
    if (this.reserved) this.budget.give(1);
    this.reserved = false;
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

/** A worker and the replies it owes (its ids are failed together when it exits); `spools` open on it. */
interface EncoderThread {
  worker: Worker;
  listeners: Map<number, Listener>;
  spools: number;
}

/**
 * MP3 encoding off the event loop: a small pool of worker threads (one, then one more per SPOOLS_PER_THREAD
 * recordings, up to one per core), each hosting the encoders of the recordings given to it and writing their
 * spool files, and encoding the short voice previews. A recording stays on its thread (its encoder's state lives
 * there). The blocks waiting for the threads are bounded per recording and for the instance (BlockBudget). If a
 * worker dies, the recordings it was writing fail (their calls keep no audio of that socket) and the next
 * recording starts a new one.
 */
@Injectable()
export class Mp3Encoding implements OnApplicationShutdown {
  private readonly logger = new Logger('Voice');
  private readonly threads: EncoderThread[] = [];
  private readonly budget = new BlockBudget(MAX_BLOCKS_IN_FLIGHT);
  private nextId = 1;

  /** Blocks of every recording waiting for the encoders (at most MAX_BLOCKS_IN_FLIGHT). */
  get blocksInFlight(): number {
    return this.budget.inFlight;
  }

  /** Encoder threads running. */
  get threadCount(): number {
    return this.threads.length;
  }

  /** Starts encoding into the file open as `fd` (the caller's until `close` settles: it closes it then), at `rate`. */
  open(fd: number, rate: RecordingSampleRate = VOICE_SAMPLE_RATE): Mp3Spool {
    const id = this.nextId++;
    const thread = this.threadFor(SPOOLS_PER_THREAD);
    const spool = new WorkerSpool(id, (message, transfer) => thread.worker.postMessage(message, transfer), this.budget);
    thread.spools++;
    thread.listeners.set(id, (reply) => {
      const done = spool.receive(reply);
      if (done) thread.spools--;
      return done;
    });
    thread.worker.postMessage({ op: 'open', id, fd, format: format(rate) });
    return spool;
  }

  /** A short mono sample (16 kHz) as one MP3. */
  encodeMono(pcm: Int16Array): Promise<Buffer> {
    const id = this.nextId++;
    const floats = Float32Array.from(pcm, (sample) => sample / 32768);
    const { worker, listeners } = this.threadFor(Number.POSITIVE_INFINITY);
    return new Promise((resolve, reject) => {
      listeners.set(id, (reply) => {
        if (reply.mp3) resolve(Buffer.from(reply.mp3.buffer, reply.mp3.byteOffset, reply.mp3.byteLength));
        else reject(new Error(`MP3 encoding failed (${reply.error})`));
        return true;
      });
      worker.postMessage({ op: 'mono', id, pcm: floats, format: format(VOICE_SAMPLE_RATE) }, [floats.buffer]);
    });
  }

  /** Stops the workers; the recordings they were writing fail. */
  async onApplicationShutdown(): Promise<void> {
    const workers = this.threads.splice(0).map((thread) => thread.worker);
    await Promise.all(workers.map((worker) => worker.terminate()));
  }

  /** The thread with the fewest recordings; a new one when each has `full` and the pool is not at its bound. */
  private threadFor(full: number): EncoderThread {
    const least = this.threads.reduce<EncoderThread | undefined>(
      (best, thread) => (best && best.spools <= thread.spools ? best : thread),
      undefined,
    );
    if (least && (least.spools < full || this.threads.length >= MAX_THREADS)) return least;
    return this.start();
  }

  private start(): EncoderThread {
    startThreadPool(); // before the thread that lowers its priority could start it (thread-pool.ts)
    const worker = new Worker(MP3_WORKER_SOURCE, {
      eval: true,
      workerData: {
        encodersPath: require.resolve('wasm-media-encoders'),
        wasmPath: require.resolve('wasm-media-encoders/wasm/mp3'),
        sampleRate: VOICE_SAMPLE_RATE,
      },
    });
    const thread: EncoderThread = { worker, listeners: new Map(), spools: 0 };
    // An idle encoder must not keep a process alive (the CLI, a test); a recording in flight has its socket for that.
    worker.unref();
    worker.on('message', (reply: Reply) => {
      if (thread.listeners.get(reply.id)?.(reply)) thread.listeners.delete(reply.id);
    });
    worker.on('error', (error) => this.logger.error({ error: { name: error.name } }, 'The MP3 encoder stopped'));
    worker.on('exit', () => {
      const index = this.threads.indexOf(thread);
      if (index >= 0) this.threads.splice(index, 1);
      const orphaned = [...thread.listeners.entries()];
      thread.listeners.clear();
      for (const [id, listener] of orphaned) listener({ id, error: 'worker exited' });
    });
    this.threads.push(thread);
    return thread;
  }
}

import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { VOICE_SAMPLE_RATE } from '../voice-format';
import { MP3_WORKER_SOURCE } from './mp3-worker-source';

/** The recording's bitrate: stereo 16 kHz at 64 kbit/s, about 29 MB an hour. */
const BITRATE = 64;

type Reply = { id: number; bytes?: number; closed?: true; mp3?: Uint8Array; error?: string };

/** One MP3 spool file being written by the worker. */
export interface Mp3Spool {
  /** Encodes and appends a stereo block (the buffers are transferred: the caller gives them up). */
  write(left: Float32Array, right: Float32Array): void;
  /** Bytes of MP3 in the file so far (as last reported by the worker). */
  readonly bytes: number;
  /** Flushes the encoder and closes the file; resolves with its final size. */
  close(): Promise<number>;
}

/**
 * MP3 encoding off the event loop: one worker thread for the instance, hosting every spoken call's encoder and
 * writing their spool files, and encoding the short voice previews. If the worker dies, the recordings it was
 * writing fail (their calls keep no audio of that socket) and the next one starts a new worker.
 */
@Injectable()
export class Mp3Encoding implements OnApplicationShutdown {
  private readonly logger = new Logger('Voice');
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly listeners = new Map<number, (reply: Reply) => void>();

  /** Starts a spool file at `path` (created or truncated). */
  open(path: string): Mp3Spool {
    const id = this.nextId++;
    let bytes = 0;
    let failure: Error | undefined;
    let closed: ((size: number) => void) | undefined;
    let failed: ((error: Error) => void) | undefined;
    this.listen(id, (reply) => {
      if (reply.error !== undefined) {
        failure = new Error(`MP3 encoding failed (${reply.error})`);
        failed?.(failure);
        return this.listeners.delete(id);
      }
      bytes = reply.bytes ?? bytes;
      if (reply.closed) {
        this.listeners.delete(id);
        closed?.(bytes);
      }
    });
    this.post({ op: 'open', id, path });
    return {
      write: (left, right) => {
        if (!failure) this.post({ op: 'write', id, left, right }, [left.buffer as ArrayBuffer, right.buffer as ArrayBuffer]);
      },
      get bytes() {
        return bytes;
      },
      close: () =>
        new Promise<number>((resolve, reject) => {
          if (failure) return reject(failure);
          closed = resolve;
          failed = reject;
          this.post({ op: 'close', id });
        }),
    };
  }

  /** A short mono sample (16 kHz) as one MP3. */
  encodeMono(pcm: Int16Array): Promise<Buffer> {
    const id = this.nextId++;
    const floats = Float32Array.from(pcm, (sample) => sample / 32768);
    return new Promise((resolve, reject) => {
      this.listen(id, (reply) => {
        this.listeners.delete(id);
        if (reply.mp3) resolve(Buffer.from(reply.mp3.buffer, reply.mp3.byteOffset, reply.mp3.byteLength));
        else reject(new Error(`MP3 encoding failed (${reply.error})`));
      });
      this.post({ op: 'mono', id, pcm: floats }, [floats.buffer]);
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.worker?.terminate();
    this.worker = undefined;
  }

  private listen(id: number, listener: (reply: Reply) => void): void {
    this.listeners.set(id, listener);
  }

  private post(message: object, transfer: ArrayBuffer[] = []): void {
    this.started().postMessage(message, transfer);
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(MP3_WORKER_SOURCE, {
      eval: true,
      workerData: {
        encodersPath: require.resolve('wasm-media-encoders'),
        wasmPath: require.resolve('wasm-media-encoders/wasm/mp3'),
        sampleRate: VOICE_SAMPLE_RATE,
        bitrate: BITRATE,
      },
    });
    worker.unref();
    worker.on('message', (reply: Reply) => this.listeners.get(reply.id)?.(reply));
    worker.on('error', (error) => this.logger.error({ error: { name: error.name } }, 'The MP3 encoder stopped'));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
      for (const [id, listener] of this.listeners) listener({ id, error: 'worker exited' });
    });
    this.worker = worker;
    return worker;
  }
}

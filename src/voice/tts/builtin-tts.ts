import { Logger, OnApplicationShutdown } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { AppConfig } from '../../config/config';
import { SpeechProviderFailure } from '../provider-failure';
import { startThreadPool } from '../thread-pool';
import { ESPEAK_WORKER_SOURCE, EspeakReply, EspeakRequest, EspeakWorkerData } from './espeak-worker-source';
import { espeakVoice } from './espeak-voices';
import { SpeechRequest, TextToSpeech } from './text-to-speech';

const ESPEAK_PACKAGE = '@echogarden/espeak-ng-emscripten';
/** espeak-ng always speaks 16-bit mono at this rate. */
const ESPEAK_SAMPLE_RATE = 22_050;
/** The least time a thread is given to acknowledge a stop before it is deemed stuck (it may be loading espeak). */
const MIN_STOP_GRACE_MS = 2_000;

export interface BuiltinTextToSpeechOptions {
  /** The synthesizer's module (require.resolve of the package). */
  espeakPath: string;
  /** How many worker threads at most (TTS_WORKERS). */
  workers: number;
  /** How long one synthesis may take, waiting for a thread included (TTS_TIMEOUT_MS). */
  timeoutMs: number;
  /** Starts a worker thread; tests pass one that keeps a handle on the threads it starts. */
  spawn?: (workerData: EspeakWorkerData) => Worker;
}

export const spawnEspeakWorker = (workerData: EspeakWorkerData): Worker => {
  startThreadPool(); // before the thread that lowers its priority could start it (thread-pool.ts)
  return new Worker(ESPEAK_WORKER_SOURCE, { eval: true, workerData });
};

/**
 * The text without angle brackets: espeak pauses at a stray one and reads some tags as its own markup, which a
 * reply's text must never be. A whole tag goes (its name is not speech), then any bracket left.
 */
const withoutMarkup = (text: string): string => text.replace(/<[^<>]*>|[<>]/g, ' ');

type Outcome = 'done' | 'stopped' | SpeechProviderFailure;

/** One synthesis as the caller sees it: the chunks not yet read, then how it ended. */
class SpeechJob {
  private readonly chunks: Int16Array[] = [];
  private outcome: Outcome | undefined;
  private wake: (() => void) | undefined;
  private deadline: NodeJS.Timeout | undefined;

  constructor(
    readonly id: number,
    readonly text: string,
    readonly voice: string,
    /** When its listener would hear a gap without its audio (performance.now()): the queue serves the earliest first. */
    readonly neededAt: number,
  ) {}

  get settled(): boolean {
    return this.outcome !== undefined;
  }

  /** Fails the job with a timeout unless it has ended `ms` from now. */
  expireAfter(ms: number, onExpire: () => void): void {
    this.deadline = setTimeout(() => {
      if (this.settle(new SpeechProviderFailure('timeout'))) onExpire();
    }, ms);
  }

  push(chunk: Int16Array): void {
    if (this.settled) return;
    this.chunks.push(chunk);
    this.wake?.();
  }

  /** Ends the job (the first ending wins); true when this call ended it. */
  settle(outcome: Outcome): boolean {
    if (this.settled) return false;
    this.outcome = outcome;
    clearTimeout(this.deadline);
    this.wake?.();
    return true;
  }

  /** The next chunk, or undefined at the end; a stop ends it at once, a failure throws at once. */
  async next(): Promise<Int16Array | undefined> {
    for (;;) {
      if (this.outcome === 'stopped') return undefined;
      if (this.outcome instanceof SpeechProviderFailure) throw this.outcome;
      const chunk = this.chunks.shift();
      if (chunk || this.outcome === 'done') return chunk;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}

/**
 * One worker thread running espeak-ng and the queue of jobs waiting for it. The queue is kept here rather than
 * in the worker's message port so that a job stopped before its turn is simply dropped, and so that the one
 * shared stop flag only ever concerns the job the worker is running.
 */
class EspeakThread {
  private readonly stopFlag = new Int32Array(new SharedArrayBuffer(4));
  private readonly worker: Worker;
  private readonly queue: SpeechJob[] = [];
  private current: SpeechJob | undefined;
  private readonly stopGraceMs: number;
  private stall: NodeJS.Timeout | undefined;
  private exited = false;
  private exitExpected = false;

  constructor(
    options: BuiltinTextToSpeechOptions,
    private readonly logger: Logger,
    private readonly onExit: (thread: EspeakThread, orphans: SpeechJob[]) => void,
  ) {
    this.worker = (options.spawn ?? spawnEspeakWorker)({ espeakPath: options.espeakPath, stop: this.stopFlag.buffer });
    this.worker.unref();
    this.stopGraceMs = Math.max(options.timeoutMs, MIN_STOP_GRACE_MS);
    this.worker.on('message', (reply: EspeakReply) => this.receive(reply));
    this.worker.on('error', (error) => this.logger.error({ error: { name: error.name } }, 'A speech synthesis thread failed'));
    this.worker.on('exit', () => this.exit());
  }

  /** Jobs queued or running. */
  get load(): number {
    return this.queue.length + (this.current ? 1 : 0);
  }

  /** Queues a job behind those needed no later than it (a reply's first sentence goes before sentences still to play). */
  enqueue(job: SpeechJob): void {
    const later = this.queue.findIndex((queued) => queued.neededAt > job.neededAt);
    this.queue.splice(later === -1 ? this.queue.length : later, 0, job);
    this.dispatch();
  }

  /** Stops a job: dropped if it is still queued, interrupted inside espeak if it is running. */
  cancel(job: SpeechJob): void {
    if (this.current === job) {
      Atomics.store(this.stopFlag, 0, job.id);
      this.stall ??= setTimeout(() => this.replaceStuck(), this.stopGraceMs).unref();
      return;
    }
    const index = this.queue.indexOf(job);
    if (index >= 0) this.queue.splice(index, 1);
  }

  terminate(): Promise<number> {
    this.exitExpected = true;
    return this.worker.terminate();
  }

  private dispatch(): void {
    if (this.current || this.exited) return;
    const job = this.queue.shift();
    // A thread with work keeps the process alive until it is done, an idle one does not.
    if (!job) return void this.worker.unref();
    this.worker.ref();
    this.current = job;
    const request: EspeakRequest = { id: job.id, text: job.text, voice: job.voice };
    this.worker.postMessage(request);
  }

  private receive(reply: EspeakReply): void {
    const job = this.current;
    if (!job || reply.id !== job.id) return;
    if ('samples' in reply) return job.push(reply.samples);
    clearTimeout(this.stall);
    this.stall = undefined;
    this.current = undefined;
    job.settle('done' in reply ? 'done' : new SpeechProviderFailure('invalid-response'));
    this.dispatch();
  }

  private replaceStuck(): void {
    this.logger.error('A speech synthesis thread did not stop when asked; another takes its place');
    this.exitExpected = true;
    void this.worker.terminate();
  }

  private exit(): void {
    if (!this.exitExpected) this.logger.warn('A speech synthesis thread stopped; another takes its place');
    this.exited = true;
    clearTimeout(this.stall);
    this.current?.settle(new SpeechProviderFailure('connection'));
    this.current = undefined;
    this.onExit(this, this.queue.splice(0));
  }
}

/**
 * The built-in voice (TTS_PROVIDER=builtin): espeak-ng compiled to JavaScript by Emscripten, offline, speaking
 * every reply language, in up to TTS_WORKERS worker threads so that synthesis never holds the event loop. A job
 * goes to the least busy thread and streams its audio back chunk by chunk; an abort stops espeak within one chunk.
 * A thread's queue is ordered by when each job's audio is needed (its request's `slackMs`): a caller waiting in
 * silence for a reply's first sentence goes before the later sentences of other calls, whose previous ones still play.
 *
 * Threads start lazily, one more only when every running one is busy: each holds espeak's whole voice data, its
 * heap and its compiled code (bench/voice-tts.ts measures them), which an instance that never speaks (text-only
 * conversations) should not pay; the first sentence spoken waits for that load once. A thread that dies is replaced: the job it was
 * running fails, the jobs queued behind it move to another thread.
 */
export class BuiltinTextToSpeech extends TextToSpeech implements OnApplicationShutdown {
  readonly name = 'builtin';
  readonly sampleRate = ESPEAK_SAMPLE_RATE;
  private readonly logger = new Logger('Voice');
  private readonly threads: EspeakThread[] = [];
  private lastId = 0;
  private closed = false;

  constructor(private readonly options: BuiltinTextToSpeechOptions) {
    super();
  }

  /** The built-in voice, or null when its optional package is not installed (the service then has no server voice). */
  static load(config: AppConfig, espeakPackage = ESPEAK_PACKAGE): BuiltinTextToSpeech | null {
    let espeakPath: string;
    try {
      espeakPath = require.resolve(espeakPackage);
    } catch {
      return null;
    }
    return new BuiltinTextToSpeech({ espeakPath, workers: config.voice.ttsWorkers, timeoutMs: config.voice.ttsTimeoutMs });
  }

  async *synthesize({ text, voice, language, signal, slackMs = 0 }: SpeechRequest): AsyncGenerator<Int16Array> {
    const spoken = withoutMarkup(text);
    if (signal.aborted || !spoken.trim()) return;
    if (this.closed) throw new SpeechProviderFailure('connection');
    const job = new SpeechJob(this.nextId(), spoken, espeakVoice(voice, language), performance.now() + slackMs);
    const stop = () => this.stop(job, 'stopped');
    signal.addEventListener('abort', stop, { once: true });
    job.expireAfter(this.options.timeoutMs, () => this.cancel(job));
    this.leastBusy().enqueue(job);
    try {
      for (;;) {
        const chunk = await job.next();
        // The abort also ends a job whose audio is all here but not yet read.
        if (!chunk || signal.aborted) return;
        yield chunk;
      }
    } finally {
      signal.removeEventListener('abort', stop);
      stop();
    }
  }

  /** Stops the worker threads; jobs not finished fail. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.threads.map((thread) => thread.terminate()));
  }

  onApplicationShutdown(): Promise<void> {
    return this.close();
  }

  private nextId(): number {
    // The id travels through an Int32 flag: wrap before it overflows.
    this.lastId = this.lastId === 0x7fffffff ? 1 : this.lastId + 1;
    return this.lastId;
  }

  private stop(job: SpeechJob, outcome: Outcome): void {
    if (job.settle(outcome)) this.cancel(job);
  }

  private cancel(job: SpeechJob): void {
    for (const thread of this.threads) thread.cancel(job);
  }

  private leastBusy(): EspeakThread {
    const idlest = this.threads.reduce<EspeakThread | undefined>(
      (best, thread) => (best && best.load <= thread.load ? best : thread),
      undefined,
    );
    if (idlest && (idlest.load === 0 || this.threads.length >= this.options.workers)) return idlest;
    const thread = new EspeakThread(this.options, this.logger, (dead, orphans) => this.replace(dead, orphans));
    this.threads.push(thread);
    return thread;
  }

  private replace(dead: EspeakThread, orphans: SpeechJob[]): void {
    this.threads.splice(this.threads.indexOf(dead), 1);
    for (const job of orphans) {
      if (this.closed) job.settle(new SpeechProviderFailure('connection'));
      else if (!job.settled) this.leastBusy().enqueue(job);
    }
  }
}

import type PgBoss from 'pg-boss';

/** What a worker does with its queue: fetch a batch, run it (completing or failing its jobs), report an error. */
export interface WorkerQueue<T> {
  fetch(): Promise<PgBoss.Job<T>[]>;
  run(jobs: PgBoss.Job<T>[]): Promise<void>;
  onError(error: unknown): void;
}

/**
 * One worker of a queue: a loop of our own on pg-boss's public `fetch`, `complete` and `fail`, rather than its
 * `work`, whose stop leaves a detached loop polling behind it that nothing can await. It fetches a batch, runs
 * it, and fetches again at once if the batch was full or it was woken meanwhile, else after the polling
 * interval or a wake-up. `stop` ends the loop once its batch in flight is done.
 */
export class QueueWorker<T> {
  /** The batch being run, if any. */
  batch: PgBoss.Job<T>[] = [];
  private running: Promise<void> = Promise.resolve();
  private woken = false;
  private stopping = false;
  private sleeping: { timer: NodeJS.Timeout; resolve: () => void } | undefined;

  constructor(
    private readonly queue: WorkerQueue<T>,
    private readonly batchSize: number,
    private readonly pollingMs: number,
  ) {}

  get busy(): boolean {
    return this.batch.length > 0;
  }

  start(): void {
    this.running = this.loop();
  }

  /** Fetch now, or as soon as the batch in flight is done. */
  wake(): void {
    this.woken = true;
    this.interrupt();
  }

  /** Resolves once the loop has ended (after the batch in flight, if any). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.interrupt();
    await this.running;
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      this.woken = false;
      let full = false;
      try {
        const jobs = await this.queue.fetch();
        full = jobs.length === this.batchSize;
        if (jobs.length > 0) {
          this.batch = jobs;
          await this.queue.run(jobs).finally(() => (this.batch = []));
        }
      } catch (error) {
        this.queue.onError(error);
      }
      if (!full && !this.woken && !this.stopping) await this.sleep();
    }
  }

  private async sleep(): Promise<void> {
    await new Promise<void>((resolve) => (this.sleeping = { timer: setTimeout(resolve, this.pollingMs), resolve }));
    this.sleeping = undefined;
  }

  private interrupt(): void {
    if (!this.sleeping) return;
    clearTimeout(this.sleeping.timer);
    this.sleeping.resolve();
  }
}

import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Client } from 'pg';
import PgBoss from 'pg-boss';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import type { Sql, TransactionSql } from '../database/database';
import { BossPool } from './boss-pool';
import { QueueWorker } from './queue-worker';

/** One job as a batch handler gets it. */
export interface Job<T> {
  id: string;
  data: T;
}

/** What a module declares for one kind of background work. */
export interface JobDefinition<T> {
  /** The queue's name (`<module>.<work>`, e.g. `webhooks.deliver`). */
  name: string;
  /** Does one job. Throwing fails the job, which pg-boss retries up to `retryLimit` times. Give this or `batchHandler`. */
  handler?: (data: T, job: { id: string }) => Promise<void>;
  /**
   * Does a whole batch at once (so that it can read and write the batch's rows in one statement each).
   * Throwing fails every job of the batch.
   */
  batchHandler?: (jobs: Job<T>[]) => Promise<void>;
  /** Jobs of this queue one worker runs at once (one batch, run in parallel). Default 1. */
  concurrency?: number;
  /**
   * Workers of this queue on each instance, each fetching and running its own batch: a batch waits for its
   * slowest job, so several workers keep one slow job from holding up the rest of the queue. Default 1.
   */
  workers?: number;
  /**
   * How long a wake-up (a job was queued) waits before a worker fetches, so that the jobs queued meanwhile
   * come in the same batch: under a steady stream of jobs, batches grow and the cost per job falls, for this
   * much latency. Default 0 (the next turn of the event loop).
   */
  wakeDelayMs?: number;
  /** Retries after a failure (default 2), `retryDelay` seconds apart (doubling with `retryBackoff`). */
  retryLimit?: number;
  retryDelay?: number;
  retryBackoff?: boolean;
  /**
   * The longest one job may run. A job still active after this (its instance was killed mid-job, say) is
   * failed by pg-boss's maintenance and retried on any instance: this is what makes a crash lose nothing.
   */
  expireInSeconds: number;
  /** A cron expression (UTC): the job is also sent on this schedule, once per tick across all instances. */
  cron?: string;
  /** Each instance also sends the job (with empty data) as it starts, once its workers are ready. */
  sendOnStart?: boolean;
  /**
   * pg-boss's queue policy. `short`: at most one job per singletonKey
   * waits in the queue (a send while one waits is dropped), one may run meanwhile. Default `standard`.
   */
  policy?: 'standard' | 'short';
}

export interface SendOptions {
  /** Enqueue inside this transaction: the job exists if and only if the transaction commits. */
  sql?: TransactionSql;
  startAfter?: Date;
  /** pg-boss singletonKey: what it dedupes depends on the queue's policy (see JobDefinition.policy). */
  singletonKey?: string;
  /**
   * Workers fetch the jobs of a higher priority first, then the oldest (default 0): what a queue shared by many
   * accounts uses to be fair, one account's tenth job after another's first.
   */
  priority?: number;
}

const QUEUE_NAME = /^[a-z][a-z0-9_.-]{0,99}$/;

/** pg-boss's `db` option: its statements run on the caller's transaction. */
const bossDb = (sql: Sql): PgBoss.Db => ({ executeSql: async (text, values) => ({ rows: await sql.query(text, values) }) });

/** pg_notify channel on which every instance hears that a job was queued, so that an idle worker fetches at once. */
const JOB_QUEUED_CHANNEL = 'job_queued';
/**
 * Other instances hear of new jobs at most this often per queue (from each instance). The NOTIFY is sent on
 * its own, after the commit, never in the transaction that queued the job: PostgreSQL serialises the commits
 * of notifying transactions (a database-wide lock held through the commit's WAL flush), which would cap
 * every transaction that queues a job at one commit per disk flush.
 */
const ANNOUNCE_INTERVAL_MS = 50;
/** Idle workers still look for work this often (jobs scheduled for later, wake-ups missed while reconnecting). */
const POLLING_SECONDS = 2;
const RECONNECT_MS = 1_000;
/** Stopping: jobs in flight get this long to finish; those that do not are failed, and retried as their queue says. */
const STOP_TIMEOUT_MS = 5_000;

/**
 * Background work on pg-boss (v10: the last major that runs on Node 20), in the service's own PostgreSQL:
 * jobs survive restarts, every instance works every queue, each job is done by one instance at a time.
 * Modules `define` their queues before the application starts; `send` enqueues, optionally inside the
 * caller's transaction (the transactional outbox: the change and its job commit together or not at all).
 *
 * Latency: workers poll. Once a queued job is committed (at once, or after the caller's transaction
 * commits), this instance wakes an idle worker of the queue, and NOTIFYs `job_queued` to the others (on its
 * own, at most every 50 ms per queue: see ANNOUNCE_INTERVAL_MS); every instance LISTENs and wakes a worker
 * too. A worker that fetched a full batch fetches again without waiting. Polling remains the backstop.
 *
 * Only pg-boss's public API: jobs are queued by `send`/`insert` (on the caller's transaction through their
 * `db` option), worked by loops of our own on `fetch`/`complete`/`fail` (QueueWorker), and pg-boss's own
 * statements run on a pool of ours (BossPool), so that `stop` leaves nothing of pg-boss running behind it.
 */
@Injectable()
export class Jobs implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(Jobs.name);
  /** Each queue's, whatever its data (a definition takes its data only as an argument: `never` admits them all). */
  private readonly definitions = new Map<string, JobDefinition<never>>();
  private readonly workers = new Map<string, QueueWorker<never>[]>();
  private readonly boss: PgBoss;
  private readonly pool: BossPool;
  /** Queues with a wake-up already scheduled in this turn of the event loop (notifications come in bursts). */
  private readonly wakeScheduled = new Set<string>();
  /** Queues whose NOTIFY to the other instances is already scheduled. */
  private readonly announcing = new Map<string, NodeJS.Timeout>();
  private listener: Client | null = null;
  private stopped = false;
  private lastErrorLoggedAt = 0;

  private readonly working: boolean;

  constructor(
    private readonly dataSource: DataSource,
    @InjectConfig() config: AppConfig,
  ) {
    this.working = config.jobWorkers;
    this.pool = new BossPool({ connectionString: this.databaseUrl(), application_name: 'voice-agent-api-jobs', max: 4 }, (error) =>
      this.logError('Job queue connection error', error),
    );
    this.boss = new PgBoss({
      db: this.pool,
      schema: config.jobQueueSchema,
      maintenanceIntervalSeconds: config.jobMaintenanceIntervalSeconds,
      pollingIntervalSeconds: POLLING_SECONDS,
    });
    this.boss.on('error', (error) => this.logError('Job queue error', error));
  }

  /** Declares a queue and its handler; call from a module's constructor or onModuleInit. */
  define<T>(definition: JobDefinition<T>): void {
    if (this.definitions.has(definition.name)) throw new Error(`Job ${definition.name} is defined twice`);
    if (!definition.handler === !definition.batchHandler)
      throw new Error(`Job ${definition.name} needs a handler or a batchHandler, not both`);
    if (!QUEUE_NAME.test(definition.name)) throw new Error(`Job name ${definition.name} must be lowercase letters, digits and . _ -`);
    this.definitions.set(definition.name, definition);
  }

  async send<T extends object>(name: string, data: T, options: SendOptions = {}): Promise<void> {
    if (!this.definitions.has(name)) throw new Error(`Job ${name} is not defined`);
    const { sql, startAfter, singletonKey, priority } = options;
    // pg-boss refuses a `priority` key whose value is not an integer, undefined included.
    const ranked = priority === undefined ? {} : { priority };
    await this.boss.send(name, data, { startAfter, singletonKey, ...ranked, db: sql && bossDb(sql) });
    this.wakeWhenCommitted(sql, name);
  }

  /**
   * Enqueues several jobs of one queue in one statement (pg-boss `insert`), inside `sql`'s transaction when
   * given. Idle workers are woken only when one of the jobs is due now.
   */
  async sendMany<T extends object>(
    name: string,
    jobs: { data: T; startAfter?: Date }[],
    options: Pick<SendOptions, 'sql'> = {},
  ): Promise<void> {
    if (!this.definitions.has(name)) throw new Error(`Job ${name} is not defined`);
    if (jobs.length === 0) return;
    const { sql } = options;
    await this.boss.insert(
      jobs.map(({ data, startAfter }) => ({ name, data, startAfter: startAfter?.toISOString() })),
      { db: sql && bossDb(sql) },
    );
    const now = Date.now();
    if (jobs.some(({ startAfter }) => !startAfter || startAfter.getTime() <= now)) this.wakeWhenCommitted(sql, name);
  }

  private wakeWhenCommitted(sql: TransactionSql | undefined, queue: string): void {
    if (sql) sql.afterCommit(() => this.announce(queue));
    else this.announce(queue);
  }

  /** A job of the queue can be fetched: wake a worker here now, and tell the other instances soon (once per interval). */
  private announce(queue: string): void {
    this.wake(queue);
    if (this.announcing.has(queue) || this.stopped) return;
    const timer = setTimeout(() => {
      this.announcing.delete(queue);
      this.pool
        .executeSql('SELECT pg_notify($1, $2)', [JOB_QUEUED_CHANNEL, queue])
        .catch((error: unknown) => this.logError('Cannot announce queued jobs (other instances poll meanwhile)', error));
    }, ANNOUNCE_INTERVAL_MS).unref();
    this.announcing.set(queue, timer);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.boss.start();
    for (const definition of this.definitions.values()) {
      const { name, retryLimit = 2, retryDelay = 10, retryBackoff = false, expireInSeconds, policy = 'standard' } = definition;
      const options = { name, retryLimit, retryDelay, retryBackoff, expireInSeconds, policy };
      await this.boss.createQueue(name, options);
      await this.boss.updateQueue(name, options);
      if (definition.cron) await this.boss.schedule(name, definition.cron, {}, { tz: 'UTC' });
      // JOB_WORKERS=false: an instance that only queues jobs (an API-only instance beside worker instances).
      if (!this.working) continue;
      const workers = Array.from({ length: definition.workers ?? 1 }, () => this.worker(definition));
      this.workers.set(name, workers);
      for (const worker of workers) worker.start();
    }
    for (const { name, sendOnStart } of this.definitions.values()) if (sendOnStart) await this.send(name, {});
    if (this.working) await this.listen();
  }

  /**
   * Stops taking jobs, lets those in flight finish (failing those still running after STOP_TIMEOUT_MS, which
   * their queue retries), then stops pg-boss at a moment when none of its statements is in flight, so that
   * each of its own loops is waiting on a timer, which its stop clears: once this resolves, nothing of the job
   * queue is left running or scheduled (a handler past the timeout aside).
   */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    for (const timer of this.announcing.values()) clearTimeout(timer);
    this.announcing.clear();
    await this.listener?.end().catch(() => undefined);
    const workers = [...this.workers.values()].flat();
    const deadline = new AbortController();
    const timeout = setTimeout(() => deadline.abort(), STOP_TIMEOUT_MS);
    const finished = await Promise.race([
      Promise.all(workers.map((worker) => worker.stop())).then(() => true),
      new Promise<false>((resolve) => deadline.signal.addEventListener('abort', () => resolve(false))),
    ]);
    if (!finished) await this.failUnfinished(workers);
    await Promise.race([this.pool.quiet(), new Promise((resolve) => deadline.signal.addEventListener('abort', resolve))]);
    clearTimeout(timeout);
    await this.boss.stop({ graceful: false });
    await this.pool.end();
  }

  private async failUnfinished(workers: QueueWorker<never>[]): Promise<void> {
    for (const worker of workers) {
      const ids = worker.batch.map((job) => job.id);
      if (ids.length === 0) continue;
      await this.boss
        .fail(worker.batch[0].name, ids)
        .catch((error: unknown) => this.logError('Cannot fail the jobs still running at shutdown (they expire)', error));
    }
  }

  private worker<T>(definition: JobDefinition<T>): QueueWorker<T> {
    const batchSize = definition.concurrency ?? 1;
    const worker: QueueWorker<T> = new QueueWorker<T>(
      {
        fetch: () => this.boss.fetch<T>(definition.name, { batchSize }),
        run: async (jobs) => {
          // A full batch: there is probably more, for another idle worker too.
          if (jobs.length === batchSize) this.wake(definition.name);
          await this.runBatch(definition, jobs);
        },
        onError: (error) => this.logError('Job queue error', error),
      },
      batchSize,
      POLLING_SECONDS * 1000,
    );
    return worker;
  }

  /** Runs a batch, then completes its jobs or fails them (pg-boss retries a failed job as its queue says). */
  private async runBatch<T>(definition: JobDefinition<T>, jobs: PgBoss.Job<T>[]): Promise<void> {
    const { name } = definition;
    const seconds = Math.max(...jobs.map((job) => job.expireInSeconds));
    if (definition.batchHandler) {
      try {
        await withinSeconds(definition.batchHandler(jobs.map(({ id, data }) => ({ id, data }))), seconds);
      } catch (error) {
        // A failed batch fails (and retries) every job of it.
        this.logError(`Job batch ${name} failed`, error, jobs[0].id);
        await this.boss.fail(
          name,
          jobs.map((job) => job.id),
        );
        return;
      }
      await this.boss.complete(
        name,
        jobs.map((job) => job.id),
      );
      return;
    }
    const handler = definition.handler!;
    const results = await Promise.allSettled(jobs.map((job) => withinSeconds(handler(job.data, { id: job.id }), seconds)));
    const failed: string[] = [];
    const done: string[] = [];
    for (const [index, result] of results.entries()) {
      if (result.status === 'fulfilled') done.push(jobs[index].id);
      else {
        failed.push(jobs[index].id);
        if (result.reason instanceof NotYet) this.logger.debug({ jobId: jobs[index].id }, `Job ${name} is not due yet: retried`);
        else this.logError(`Job ${name} failed`, result.reason, jobs[index].id);
      }
    }
    if (failed.length) await this.boss.fail(name, failed);
    if (done.length) await this.boss.complete(name, done);
  }

  /**
   * A job of the queue was queued: wake one idle worker of it (every worker would fetch, and all but one find
   * nothing). A burst of notifications (in one turn of the event loop, or within the queue's `wakeDelayMs`)
   * wakes one worker, which fetches them as one batch.
   * When every worker is busy, one is told to fetch again as soon as its batch is done.
   */
  private wake(queue: string): void {
    const workers = this.workers.get(queue);
    if (!workers || this.wakeScheduled.has(queue)) return;
    this.wakeScheduled.add(queue);
    const notify = () => {
      this.wakeScheduled.delete(queue);
      (workers.find((worker) => !worker.busy) ?? workers[0]).wake();
    };
    const delay = this.definitions.get(queue)?.wakeDelayMs ?? 0;
    if (delay > 0) setTimeout(notify, delay).unref();
    else setImmediate(notify);
  }

  /** The LISTEN connection that wakes idle workers; reconnects, since polling covers any gap. */
  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = new Client({ connectionString: this.databaseUrl(), application_name: 'voice-agent-api-jobs-listen', keepAlive: true });
    const reconnect = () => {
      if (this.listener !== client) return;
      this.listener = null;
      client.end().catch(() => undefined);
      if (!this.stopped) setTimeout(() => void this.listen(), RECONNECT_MS).unref();
    };
    client.on('notification', ({ payload }) => this.wake(payload ?? ''));
    client.on('error', reconnect);
    client.on('end', reconnect);
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${JOB_QUEUED_CHANNEL}`);
    } catch (error) {
      this.logError('Cannot listen for queued jobs (workers poll meanwhile)', error);
      reconnect();
    }
  }

  private databaseUrl(): string {
    return (this.dataSource.options as { url: string }).url;
  }

  /** Errors carry no job data and no SQL; an outage logs once every 30 s, not once per poll. */
  private logError(message: string, error: unknown, jobId?: string): void {
    const now = Date.now();
    if (!jobId && now - this.lastErrorLoggedAt < 30_000) return;
    if (!jobId) this.lastErrorLoggedAt = now;
    const { name, code } = (error ?? {}) as { name?: unknown; code?: unknown };
    this.logger.warn(
      { jobId, error: { name: typeof name === 'string' ? name : undefined, code: typeof code === 'string' ? code : undefined } },
      message,
    );
  }
}

/**
 * Thrown by a handler whose job cannot be done yet but will be (what it waits for is under way elsewhere): the
 * job is retried as its queue says, like any failure, but this is the expected course, not a warning in the logs.
 */
export class NotYet extends Error {}

/** A handler that outlives its job's expiry fails it (pg-boss's `work` does the same), so that a hung one does not hold its worker. */
async function withinSeconds<T>(promise: Promise<T>, seconds: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the job ran longer than its expiry of ${seconds} s`)), Math.max(1, seconds) * 1000);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

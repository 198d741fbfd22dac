import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Client } from 'pg';
import PgBoss from 'pg-boss';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import type { Sql } from '../database/database';

/** What a module declares for one kind of background work. */
export interface JobDefinition<T> {
  /** The queue's name (`<module>.<work>`, e.g. `webhooks.deliver`). */
  name: string;
  /** Does one job. Throwing fails the job, which pg-boss retries up to `retryLimit` times. */
  handler: (data: T, job: { id: string }) => Promise<void>;
  /** Jobs of this queue one instance runs at once (one batch, run in parallel). Default 1. */
  concurrency?: number;
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
  /**
   * pg-boss's queue policy. `short`: at most one job per singletonKey
   * waits in the queue (a send while one waits is dropped), one may run meanwhile. Default `standard`.
   */
  policy?: 'standard' | 'short';
}

export interface SendOptions {
  /** Enqueue inside this transaction: the job exists if and only if the transaction commits. */
  sql?: Sql;
  startAfter?: Date;
  /** pg-boss singletonKey: what it dedupes depends on the queue's policy (see JobDefinition.policy). */
  singletonKey?: string;
}

/** pg_notify channel on which every instance hears that a job was queued, so that an idle worker fetches at once. */
const JOB_QUEUED_CHANNEL = 'job_queued';
/** Idle workers still look for work this often (jobs scheduled for later, wake-ups missed while reconnecting). */
const POLLING_SECONDS = 2;
const RECONNECT_MS = 1_000;

/**
 * Background work on pg-boss (v10: the last major that runs on Node 20), in the service's own PostgreSQL:
 * jobs survive restarts, every instance works every queue, each job is done by one instance at a time.
 * Modules `define` their queues before the application starts; `send` enqueues, optionally inside the
 * caller's transaction (the transactional outbox: the change and its job commit together or not at all).
 *
 * Latency: pg-boss polls. Every `send` also NOTIFYs `job_queued` (in the same transaction), and every
 * instance LISTENs and wakes its workers of that queue at once; a worker that fetched a full batch fetches
 * again without waiting. Polling remains the backstop.
 */
@Injectable()
export class Jobs implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(Jobs.name);
  private readonly definitions = new Map<string, JobDefinition<any>>();
  private readonly workerIds = new Map<string, string[]>();
  private readonly boss: PgBoss;
  private listener: Client | null = null;
  private stopped = false;
  private lastErrorLoggedAt = 0;

  constructor(
    private readonly dataSource: DataSource,
    @InjectConfig() config: AppConfig,
  ) {
    this.boss = new PgBoss({
      connectionString: this.databaseUrl(),
      schema: config.jobQueueSchema,
      application_name: 'voice-agent-api-jobs',
      max: 4,
      maintenanceIntervalSeconds: config.jobMaintenanceIntervalSeconds,
      pollingIntervalSeconds: POLLING_SECONDS,
    });
    this.boss.on('error', (error) => this.logError('Job queue error', error));
  }

  /** Declares a queue and its handler; call from a module's constructor or onModuleInit. */
  define<T>(definition: JobDefinition<T>): void {
    if (this.definitions.has(definition.name)) throw new Error(`Job ${definition.name} is defined twice`);
    this.definitions.set(definition.name, definition);
  }

  async send<T extends object>(name: string, data: T, options: SendOptions = {}): Promise<void> {
    if (!this.definitions.has(name)) throw new Error(`Job ${name} is not defined`);
    const { sql, startAfter, singletonKey } = options;
    const db = sql && { executeSql: async (text: string, values: unknown[]) => ({ rows: await sql.query(text, values) }) };
    await this.boss.send(name, data, { startAfter, singletonKey, db });
    await (sql ?? this.bossSql()).query('SELECT pg_notify($1, $2)', [JOB_QUEUED_CHANNEL, name]);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.boss.start();
    for (const definition of this.definitions.values()) {
      const { name, retryLimit = 2, retryDelay = 10, retryBackoff = false, expireInSeconds, policy = 'standard' } = definition;
      const options = { name, retryLimit, retryDelay, retryBackoff, expireInSeconds, policy };
      await this.boss.createQueue(name, options);
      await this.boss.updateQueue(name, options);
      if (definition.cron) await this.boss.schedule(name, definition.cron, {}, { tz: 'UTC' });
      this.workerIds.set(name, [await this.work(definition)]);
    }
    await this.listen();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.listener?.end().catch(() => undefined);
    // Jobs in flight get a few seconds to finish; any that do not are retried elsewhere once they expire.
    await this.boss.stop({ graceful: true, wait: true, timeout: 5_000 });
  }

  private async work<T>(definition: JobDefinition<T>): Promise<string> {
    const batchSize = definition.concurrency ?? 1;
    let workerId = '';
    workerId = await this.boss.work<T>(definition.name, { batchSize }, async (jobs) => {
      const results = await Promise.allSettled(jobs.map((job) => definition.handler(job.data, { id: job.id })));
      const failed = jobs.filter((_job, index) => results[index].status === 'rejected');
      for (const [index, result] of results.entries()) {
        if (result.status === 'rejected') this.logError(`Job ${definition.name} failed`, result.reason, jobs[index].id);
      }
      // Failed jobs are failed (and retried) one by one; pg-boss then completes the rest of the batch.
      if (failed.length) await this.boss.fail(definition.name, failed.map((job) => job.id));
      // A full batch: there is probably more, so fetch again at once instead of after the polling interval.
      if (jobs.length === batchSize) this.boss.notifyWorker(workerId);
    });
    return workerId;
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
    client.on('notification', ({ payload }) => {
      for (const id of this.workerIds.get(payload ?? '') ?? []) this.boss.notifyWorker(id);
    });
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

  private bossSql(): Sql {
    const db = this.boss.getDb();
    return { query: async <R>(text: string, values: readonly unknown[] = []) => (await db.executeSql(text, [...values])).rows as R[] };
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
    this.logger.warn({ jobId, error: { name: typeof name === 'string' ? name : undefined, code: typeof code === 'string' ? code : undefined } }, message);
  }
}

import { BeforeApplicationShutdown, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Database, TransactionSql } from '../database/database';
import { Jobs } from '../jobs/jobs.service';
import { WebhookDeliveries } from './webhook-deliveries';
import { WebhooksRepository } from './webhooks.repository';

export const RELAY_JOB = 'webhooks.relay';

/** Outbox rows one relay statement takes. */
const RELAY_BATCH = 200;
/** After an event commits, the relay job is queued this much later, so that the events of a burst share one job. */
const RELAY_DELAY_MS = 20;

/**
 * Moves events from the outbox (webhook_outbox) to webhook_events, with their deliveries and delivery jobs.
 * The transaction of the change writes only the event's outbox row, the least it can; the relay does the rest,
 * a batch of events per statement, on any instance (the rows are taken with SKIP LOCKED, and taking one
 * deletes it in the same statement). A relay job is queued once an event commits (at most one per
 * RELAY_DELAY_MS per instance, and at most one waits in the queue), by every instance as it starts, and every
 * minute: an event whose instance died before queueing it is relayed when any instance starts or at the next
 * minute.
 */
@Injectable()
export class WebhookRelay implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger(WebhookRelay.name);
  /** The relay job about to be queued (RELAY_DELAY_MS after the first request), if any. */
  private scheduled: NodeJS.Timeout | null = null;
  /** Queueing relay jobs now. */
  private readonly sending = new Set<Promise<void>>();
  private stopping = false;

  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly deliveries: WebhookDeliveries,
    private readonly database: Database,
    private readonly jobs: Jobs,
  ) {}

  onModuleInit(): void {
    this.jobs.define({
      name: RELAY_JOB,
      handler: async () => {
        await this.relay();
      },
      // One relay waits at a time: a request while one waits is covered by it.
      policy: 'short',
      cron: '* * * * *',
      sendOnStart: true,
      expireInSeconds: 60,
      retryLimit: 10,
      retryDelay: 1,
      retryBackoff: true,
    });
  }

  /** An event was recorded in `sql`'s transaction: relay it once that commits. */
  relayAfterCommit(sql: TransactionSql): void {
    sql.afterCommit(() => this.request());
  }

  /** Relays every event in the outbox, a batch at a time; how many. */
  async relay(): Promise<number> {
    let total = 0;
    let events: number;
    do {
      events = await this.database.transaction(async (sql) => {
        const relayed = await this.webhooks.relayEvents(RELAY_BATCH, sql);
        await this.deliveries.enqueueKeys(sql, relayed.queued);
        return relayed.events;
      });
      total += events;
    } while (events === RELAY_BATCH);
    return total;
  }

  /** Stopping: the relay job about to be queued is queued now, before the job queue stops, and later ones at once. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (this.scheduled) {
      clearTimeout(this.scheduled);
      this.send();
    }
    await Promise.all(this.sending);
  }

  /**
   * Queues a relay job soon. Requests until the job is sent share it; one that comes while it is being sent
   * schedules the next, since that job might run before the request's event committed.
   */
  private request(): void {
    if (this.stopping) return this.send();
    this.scheduled ??= setTimeout(() => this.send(), RELAY_DELAY_MS).unref();
  }

  private send(): void {
    this.scheduled = null;
    // Not lost if this fails: the next event, the next start or the next minute queues another.
    const sent = this.jobs
      .send(RELAY_JOB, {})
      .catch((error: unknown) =>
        this.logger.warn({ error: error instanceof Error ? error.name : 'unknown' }, 'Cannot queue the webhook relay'),
      )
      .finally(() => this.sending.delete(sent));
    this.sending.add(sent);
  }
}

import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { Database, TransactionSql } from '../database/database';
import { Job, Jobs } from '../jobs/jobs.service';
import { publicEventId } from './webhook-payload';
import { signedHeaders } from './webhook-signature';
import { AttemptResult, WebhookTargets } from './webhook-targets';
import {
  AttemptOutcome,
  CANCELLED_BY_ERASURE,
  ClaimedDelivery,
  DeliveryJobKey,
  QueuedDelivery,
  WebhooksRepository,
} from './webhooks.repository';

export const DELIVER_JOB = 'webhooks.deliver';

/** A delivery job: one attempt at one delivery. */
interface DeliverJob {
  accountId: number;
  deliveryId: string;
  /** The attempt it is for (the delivery's `attempts` when it was queued): a job for an attempt already made does nothing. */
  attempts: number;
}

/** Deliveries one worker attempts at once, and workers per instance (a batch waits for its slowest receiver). */
const BATCH_SIZE = 25;
const WORKERS = 4;
/** A new event waits this long for others to share its batch (a batch costs four statements, however many it holds). */
const BATCHING_MS = 20;
/** The in-flight lock outlives the attempt by this much (the time to record its outcome)... */
const LOCK_MARGIN_MS = 5_000;
/** ...and the job outlives the lock, so that the job of an instance that died mid-attempt is retried after the lock is gone. */
const JOB_MARGIN_SECONDS = 10;
/** Characters of a receiver's answer kept in `lastError`. */
const EXCERPT_CHARACTERS = 200;

/**
 * Delivers events through the job queue: at least once, one attempt at a time per delivery, on any instance.
 *
 * Each job names a delivery and the attempt it is for. A batch of jobs claims its deliveries in one statement
 * (locking each for longer than an attempt can take), POSTs them in parallel, then records the outcomes,
 * coalesced into a few statements, with the job of each retry in the same transaction. A 2xx is a success;
 * a 410 fails the delivery and disables the webhook; anything else (a status, a timeout, a refused
 * connection or address) is retried after the next delay of WEBHOOK_RETRY_SECONDS, or failed when none is
 * left. An instance killed mid-attempt leaves an active job that pg-boss expires and retries elsewhere, by
 * which time the lock has lapsed: the attempt is made again (the receiver deduplicates on `webhook-id`).
 */
@Injectable()
export class WebhookDeliveries implements OnModuleInit {
  private readonly logger = new Logger(WebhookDeliveries.name);
  private readonly lockMs: number;

  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly targets: WebhookTargets,
    private readonly database: Database,
    private readonly jobs: Jobs,
    @InjectConfig() private readonly config: AppConfig,
  ) {
    this.lockMs = config.webhooks.timeoutMs + LOCK_MARGIN_MS;
  }

  onModuleInit(): void {
    this.jobs.define<DeliverJob>({
      name: DELIVER_JOB,
      batchHandler: (jobs) => this.deliverBatch(jobs),
      concurrency: BATCH_SIZE,
      workers: WORKERS,
      wakeDelayMs: BATCHING_MS,
      // A batch that failed (the database unreachable) is tried again, for about an hour and a half in all.
      retryLimit: 10,
      retryDelay: 5,
      retryBackoff: true,
      expireInSeconds: Math.ceil(this.lockMs / 1000) + JOB_MARGIN_SECONDS,
    });
  }

  /** Queues an attempt at deliveries (a ping, a retry by hand), inside the transaction that recorded them. */
  async enqueue(sql: TransactionSql, accountId: number, deliveries: QueuedDelivery[]): Promise<void> {
    await this.enqueueKeys(
      sql,
      deliveries.map(({ id, attempts }) => ({ accountId, deliveryId: id, attempts })),
    );
  }

  /** Queues an attempt now at each delivery (the relay's, of several accounts), in one statement, inside `sql`'s transaction. */
  async enqueueKeys(sql: TransactionSql, keys: DeliveryJobKey[]): Promise<void> {
    await this.jobs.sendMany<DeliverJob>(
      DELIVER_JOB,
      keys.map((key) => ({ data: keyJob(key) })),
      { sql },
    );
  }

  private async deliverBatch(jobs: Job<DeliverJob>[]): Promise<void> {
    const keys: DeliveryJobKey[] = jobs.map(({ data }) => ({
      accountId: data.accountId,
      deliveryId: data.deliveryId,
      attempts: data.attempts,
    }));
    const keyOf = new Map(keys.map((key) => [key.deliveryId, key]));
    const { claimed, locked } = await this.webhooks.claimDeliveries(keys, this.lockMs);
    // In flight elsewhere (a duplicate job, or the retry of a batch whose outcomes could not be recorded): look
    // again once that attempt must have ended. A retry by hand during an attempt does not need this: that
    // attempt's outcome queues the next one (recordOutcomes).
    await this.jobs.sendMany<DeliverJob>(
      DELIVER_JOB,
      locked.map(({ id, lockedUntil }) => ({ data: keyJob(keyOf.get(id)!), startAfter: new Date(lockedUntil.getTime() + 1_000) })),
    );
    const writer = new OutcomeWriter((outcomes) => this.record(outcomes));
    await Promise.all(
      claimed.map(async (delivery) => {
        const { accountId } = keyOf.get(delivery.id)!;
        const result = await this.attempt(delivery);
        writer.add({ accountId, webhookId: delivery.webhookId, outcome: this.outcome(accountId, delivery, result) });
      }),
    );
    await writer.drained();
  }

  private async attempt(delivery: ClaimedDelivery): Promise<AttemptResult | 'erased'> {
    if (delivery.body === null) return 'erased';
    const headers = signedHeaders(delivery.secrets, publicEventId(delivery.eventId), delivery.body);
    try {
      return await this.targets.post(delivery.url, headers, delivery.body);
    } catch (error) {
      // Not a network outcome (those are results): a fault of ours, recorded as a failed attempt and retried.
      this.logger.warn(
        { deliveryId: delivery.id, error: error instanceof Error ? error.name : 'unknown' },
        'Webhook delivery attempt failed unexpectedly',
      );
      return { error: 'the attempt failed on the sending side' };
    }
  }

  private outcome(accountId: number, delivery: ClaimedDelivery, result: AttemptResult | 'erased'): AttemptOutcome {
    const base = { accountId, deliveryId: delivery.id, attempts: delivery.attempts, final: false };
    if (result === 'erased')
      return { ...base, status: 'failed', statusCode: null, error: CANCELLED_BY_ERASURE, nextAttemptAt: null, final: true };
    if ('statusCode' in result && result.statusCode >= 200 && result.statusCode < 300) {
      return { ...base, status: 'succeeded', statusCode: result.statusCode, error: null, nextAttemptAt: null };
    }
    const statusCode = 'statusCode' in result ? result.statusCode : null;
    const error = 'statusCode' in result ? describeAnswer(result.statusCode, result.body) : shortened(result.error);
    if (statusCode === 410)
      return { ...base, status: 'failed', statusCode, error: `${error} (the webhook was disabled)`, nextAttemptAt: null, final: true };
    const delay = this.config.webhooks.retrySeconds[delivery.attempts];
    if (delay === undefined) return { ...base, status: 'failed', statusCode, error, nextAttemptAt: null };
    return { ...base, status: 'pending', statusCode, error, nextAttemptAt: new Date(Date.now() + delay * 1000) };
  }

  /**
   * Records outcomes; retries (later, or now for a retry by hand asked for during the attempt) get their jobs,
   * in one statement, and 410s disable their webhooks, in the same transaction.
   */
  private async record(entries: RecordedOutcome[]): Promise<void> {
    const outcomes = entries.map((entry) => entry.outcome);
    const gone = entries.filter((entry) => entry.outcome.statusCode === 410);
    for (const { outcome } of entries) {
      // No URL, body or error text: the delivery id says which, the status code or outcome what.
      this.logger.debug(
        { deliveryId: outcome.deliveryId, attempt: outcome.attempts + 1, status: outcome.status, statusCode: outcome.statusCode },
        'Webhook delivery attempt',
      );
    }
    await this.database.transaction(async (sql) => {
      const { retryLater, retriedNow } = await this.webhooks.recordOutcomes(outcomes, sql);
      // Only those still pending once recorded: a delivery cancelled during its attempt is not retried.
      const stillPending = new Set(retryLater);
      const retries = outcomes.filter((outcome) => stillPending.has(outcome.deliveryId));
      for (const { accountId, webhookId, outcome } of gone) await this.webhooks.disableGone(accountId, webhookId, outcome.deliveryId, sql);
      await this.jobs.sendMany<DeliverJob>(
        DELIVER_JOB,
        [
          ...retriedNow.map((key) => ({ data: keyJob(key) })),
          ...retries.map(({ accountId, deliveryId, attempts, nextAttemptAt }) => ({
            data: { accountId, deliveryId, attempts: attempts + 1 },
            startAfter: nextAttemptAt!,
          })),
        ],
        { sql },
      );
    });
  }
}

const keyJob = ({ accountId, deliveryId, attempts }: DeliveryJobKey): DeliverJob => ({ accountId, deliveryId, attempts });

/** Error texts fit the log's column with room for a suffix. */
const shortened = (text: string) => ([...text].length > 250 ? `${[...text].slice(0, 250).join('')}…` : text);

interface RecordedOutcome {
  accountId: number;
  webhookId: number;
  outcome: AttemptOutcome;
}

/**
 * Writes outcomes as they come, coalesced: one write at a time, each taking everything that arrived while the
 * previous one ran. A batch's outcomes are thus recorded in a few statements, without waiting for its
 * slowest receiver. A failed write fails the batch (its jobs are retried; their deliveries stay locked until
 * the lock lapses, then are attempted again).
 */
class OutcomeWriter {
  private queued: RecordedOutcome[] = [];
  private writing: Promise<void> | null = null;
  private failure: Error | undefined;

  constructor(private readonly write: (outcomes: RecordedOutcome[]) => Promise<void>) {}

  add(outcome: RecordedOutcome): void {
    this.queued.push(outcome);
    this.writing ??= this.writeQueued();
  }

  async drained(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.failure) throw this.failure;
  }

  private async writeQueued(): Promise<void> {
    // Let the outcomes that arrive in the same turn of the event loop join this write.
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (this.queued.length) await this.write(this.queued.splice(0));
    } catch (error) {
      this.failure ??= error instanceof Error ? error : new Error('Recording delivery outcomes failed', { cause: error });
      this.queued = [];
    } finally {
      this.writing = null;
    }
  }
}

/** `HTTP 500: <the start of the answer>`, on one line, printable characters only, short. */
export function describeAnswer(statusCode: number, body: Buffer): string {
  const text = new TextDecoder('utf-8', { fatal: false })
    .decode(body)
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\uFFFD]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const excerpt = [...text].slice(0, EXCERPT_CHARACTERS).join('');
  return excerpt ? `HTTP ${statusCode}: ${excerpt}${[...text].length > EXCERPT_CHARACTERS ? '…' : ''}` : `HTTP ${statusCode}`;
}

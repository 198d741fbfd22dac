import { Injectable } from '@nestjs/common';
import { Database, Sql } from '../database/database';
import { AccountQuery, UnscopedQuery } from '../database/query.decorator';
import { activeSecrets, rotatedSecretColumns } from './signing-secrets';
import { DeliveredEventType, DeliveryStatus, MAX_WEBHOOKS_PER_ACCOUNT, WebhookEventType } from './webhook-event-types';

/** A webhook as the API shows it (never its secrets). */
export interface WebhookRow {
  id: number;
  url: string;
  events: WebhookEventType[];
  description: string;
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** The fields a client sets; all of them on create (defaults applied), any subset on update. */
export type WebhookFields = Pick<WebhookRow, 'url' | 'events' | 'description' | 'enabled'>;

/** One line of the deliveries log. */
export interface DeliveryRow {
  id: string;
  event: DeliveredEventType;
  /** The event's uuid (shown as `evt_…`). */
  eventId: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
}

/** An event to store: `body` is the exact JSON text its deliveries send. */
export interface NewEvent {
  id: string;
  type: DeliveredEventType;
  /** The call it is about; null for a ping. */
  callId: string | null;
  body: string;
  createdAt: Date;
}

/** A delivery that needs a job (just recorded, or retried by hand): the job names the attempt it is for. */
export interface QueuedDelivery {
  id: string;
  attempts: number;
}

/** What one delivery job asks for: this delivery of this account, at this attempt. */
export interface DeliveryJobKey {
  accountId: number;
  deliveryId: string;
  attempts: number;
}

/**
 * A delivery taken for an attempt, with what the attempt needs: the body, the URL, and the secrets to sign
 * with (this is the one method that reads them, and only for signing).
 */
export interface ClaimedDelivery {
  id: string;
  webhookId: number;
  attempts: number;
  eventId: string;
  /** Null when the call's payload was erased after the delivery was queued. */
  body: string | null;
  url: string;
  secrets: string[];
}

/** A delivery whose attempt is in flight elsewhere, until `lockedUntil` at the latest. */
export interface LockedDelivery {
  id: string;
  lockedUntil: Date;
}

export interface ClaimedBatch {
  claimed: ClaimedDelivery[];
  locked: LockedDelivery[];
}

/** How an attempt ended, to record. */
export interface AttemptOutcome {
  accountId: number;
  deliveryId: string;
  /** The attempt this was (the value of `attempts` when it was claimed). */
  attempts: number;
  status: DeliveryStatus;
  statusCode: number | null;
  error: string | null;
  /** When the next attempt is due (status pending); null otherwise. */
  nextAttemptAt: Date | null;
  /** Never attempted again, not even by a retry asked for during this attempt: a 410 disabled the webhook, or the payload was erased. */
  final: boolean;
}

/** What recordOutcomes leaves to its caller. */
export interface RecordedOutcomes {
  /** Deliveries left pending until their outcome's `nextAttemptAt`: the caller queues their jobs. */
  retryLater: string[];
  /** Deliveries retried by hand during their attempt, pending again and due now: the caller queues their jobs. */
  retriedNow: DeliveryJobKey[];
}

/** What one relay statement did: events moved, and the deliveries that need a job. */
export interface RelayedEvents {
  events: number;
  queued: DeliveryJobKey[];
}

/** Why `retryDelivery` did not queue the delivery again. */
export type RetryRefusal = 'not-found' | 'erased';

/** retryDelivery's row: the delivery queued again, or, when its payload was erased, `erased` alone (the LEFT JOIN's NULLs). */
type RetryRow = ({ erased: false } & DeliveryRow) | ({ erased: true } & { [Column in keyof DeliveryRow]: null });

const WEBHOOK_COLUMNS = `id, url, events, description, enabled, created_at AS "createdAt", updated_at AS "updatedAt"`;
/** A delivery `d` as the log shows it, with its event's type from `type` (the event's row, usually). */
const deliveryColumns = (
  type = 'e.type',
) => `d.id, ${type} AS event, d.event_id AS "eventId", d.status, d.attempts, d.last_status_code AS "lastStatusCode",
  d.last_error AS "lastError", d.next_attempt_at AS "nextAttemptAt", d.created_at AS "createdAt"`;
const DELIVERY_COLUMNS = deliveryColumns();

const EXAMPLE_FIELDS: WebhookFields = {
  url: 'https://crm.example.com/hooks/calls',
  events: ['call.created'],
  description: 'CRM',
  enabled: true,
};
const EXAMPLE_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const EXAMPLE_EVENT: NewEvent = {
  id: '0b8e3c1a-3f5e-4a8e-9d1c-6f2b7a9e4c21',
  type: 'call.created',
  callId: '5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90',
  body: '{"id":"evt_0b8e3c1a3f5e4a8e9d1c6f2b7a9e4c21","type":"call.created","createdAt":"2026-11-22T09:15:02.123Z","data":{}}',
  createdAt: new Date('2026-11-22T09:15:02.123Z'),
};
const EXAMPLE_DELIVERY = '7d1e0f4a-2b3c-4d5e-8f9a-0b1c2d3e4f5a';
const EXAMPLE_KEYS: DeliveryJobKey[] = [{ accountId: 1, deliveryId: EXAMPLE_DELIVERY, attempts: 0 }];
const EXAMPLE_OUTCOMES: AttemptOutcome[] = [
  {
    accountId: 1,
    deliveryId: EXAMPLE_DELIVERY,
    attempts: 0,
    status: 'pending',
    statusCode: 500,
    error: 'HTTP 500',
    nextAttemptAt: new Date('2026-11-22T09:15:12.123Z'),
    final: false,
  },
];

/** A delivery cancelled by the service (the webhook disabled, the call's payload erased) says why here. */
export const CANCELLED_BY_ERASURE = "Not delivered: the call was deleted and this event's payload erased";

/**
 * Every query of the webhooks, their events (the outbox) and their deliveries. Account id first, in every
 * WHERE; the delivery worker's batch statements take (account, delivery) pairs from its jobs.
 */
@Injectable()
export class WebhooksRepository {
  constructor(private readonly db: Database) {}

  @AccountQuery([1])
  list(accountId: number): Promise<WebhookRow[]> {
    return this.db.query<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE account_id = $1 ORDER BY id`, [accountId]);
  }

  @AccountQuery([1, 2])
  async get(accountId: number, id: number): Promise<WebhookRow | undefined> {
    const [row] = await this.db.query<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE account_id = $1 AND id = $2`, [
      accountId,
      id,
    ]);
    return row;
  }

  /**
   * Creates the webhook unless the account already has MAX_WEBHOOKS_PER_ACCOUNT (undefined then). The
   * account's lock serialises concurrent creations, so that two of them cannot both take the last place.
   */
  @AccountQuery([1, EXAMPLE_FIELDS, EXAMPLE_SECRET])
  insert(accountId: number, fields: WebhookFields, secret: string): Promise<WebhookRow | undefined> {
    return this.db.transaction(async (sql) => {
      // A lock per account, held to the end of the transaction; the INSERT's count, a statement later, sees any webhook created meanwhile.
      await sql.query(
        `SELECT pg_advisory_xact_lock(hashtext('webhooks'), caller.account_id) FROM (SELECT $1::int AS account_id) AS caller WHERE caller.account_id = $1`,
        [accountId],
      );
      const [row] = await sql.query<WebhookRow>(
        `INSERT INTO webhooks (account_id, url, events, description, enabled, secret)
         SELECT $1, $2, $3, $4, $5, $6 WHERE (SELECT count(*) FROM webhooks WHERE account_id = $1) < $7
         RETURNING ${WEBHOOK_COLUMNS}`,
        [accountId, fields.url, fields.events, fields.description, fields.enabled, secret, MAX_WEBHOOKS_PER_ACCOUNT],
      );
      return row;
    });
  }

  /**
   * Changes the fields given. Disabling the webhook cancels its pending deliveries (in the same statement),
   * since nothing should reach a receiver its owner turned off.
   */
  @AccountQuery([1, 2, { enabled: false }])
  async update(accountId: number, id: number, fields: Partial<WebhookFields>): Promise<WebhookRow | undefined> {
    const [row] = await this.db.query<WebhookRow>(
      `WITH updated AS (
         UPDATE webhooks SET url = coalesce($3, url), events = coalesce($4, events), description = coalesce($5, description),
                enabled = coalesce($6, enabled), updated_at = now()
          WHERE account_id = $1 AND id = $2
          RETURNING ${WEBHOOK_COLUMNS}
       ), cancelled AS (
         UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = 'Not delivered: the webhook was disabled'
          WHERE account_id = $1 AND webhook_id = $2 AND status = 'pending' AND $6 IS FALSE AND EXISTS (SELECT FROM updated)
       )
       SELECT * FROM updated`,
      [accountId, id, fields.url ?? null, fields.events ?? null, fields.description ?? null, fields.enabled ?? null],
    );
    return row;
  }

  /** Whether it existed. Its deliveries go with it (the foreign key cascades); the events stay for other webhooks. */
  @AccountQuery([1, 2])
  async delete(accountId: number, id: number): Promise<boolean> {
    const deleted = await this.db.query(`DELETE FROM webhooks WHERE account_id = $1 AND id = $2 RETURNING id`, [accountId, id]);
    return deleted.length > 0;
  }

  /** The new secret becomes current; the current one stays valid (deliveries are signed with both) for `overlapHours`. */
  @AccountQuery([1, 2, EXAMPLE_SECRET, 24])
  async rotateSecret(accountId: number, id: number, secret: string, overlapHours: number): Promise<boolean> {
    const rotated = await this.db.query(
      `UPDATE webhooks SET ${rotatedSecretColumns('$3', '$4')}, updated_at = now()
        WHERE account_id = $1 AND id = $2 RETURNING id`,
      [accountId, id, secret, overlapHours],
    );
    return rotated.length > 0;
  }

  /**
   * The outbox write, in the caller's transaction: the event's outbox row, when at least one enabled webhook of
   * the account subscribes to its type (nothing is written otherwise). The relay (relayEvents) does the rest.
   * Whether it was written.
   */
  @AccountQuery([1, EXAMPLE_EVENT])
  async recordEvent(accountId: number, event: NewEvent, sql: Sql = this.db): Promise<boolean> {
    const rows = await sql.query(
      `INSERT INTO webhook_outbox (account_id, event_id, type, call_id, body, created_at)
       SELECT $1, $2, $3::varchar, $4, $5, $6 WHERE EXISTS (SELECT FROM webhooks WHERE account_id = $1 AND enabled AND $3::varchar = ANY (events))
       RETURNING seq`,
      [accountId, event.id, event.type, event.callId, event.body, event.createdAt],
      { prepared: true },
    );
    return rows.length > 0;
  }

  /**
   * The relay, in one statement: takes up to `limit` of the oldest outbox rows (skipping those another relay
   * holds), moves them to the events, and writes one delivery per enabled webhook of the event's account that
   * subscribes to its type; the pending ones come back for the caller to queue their jobs in the same
   * transaction. The delivery of an event erased before it was relayed is written cancelled, and needs no job.
   */
  @UnscopedQuery("the relay moves every account's events out of the outbox: each row keeps its own account_id", [100])
  async relayEvents(limit: number, sql: Sql = this.db): Promise<RelayedEvents> {
    const [relayed] = await sql.query<RelayedEvents>(
      `WITH taken AS (
         SELECT seq FROM webhook_outbox ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED
       ), relayed AS (
         DELETE FROM webhook_outbox o USING taken WHERE o.seq = taken.seq
         RETURNING o.account_id, o.event_id, o.type, o.call_id, o.body, o.created_at
       ), events AS (
         INSERT INTO webhook_events (account_id, id, type, call_id, body, created_at)
         SELECT account_id, event_id, type, call_id, body, created_at FROM relayed
         RETURNING account_id, id, type, body IS NULL AS erased
       ), deliveries AS (
         INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, status, next_attempt_at, last_error)
         SELECT e.account_id, w.id, e.id, CASE WHEN e.erased THEN 'failed' ELSE 'pending' END,
                CASE WHEN e.erased THEN NULL ELSE now() END, CASE WHEN e.erased THEN $2 END
           FROM events e
           -- Locked, so that a webhook deleted meanwhile is waited for or left out, never a foreign key error.
           JOIN LATERAL (SELECT id FROM webhooks w WHERE w.account_id = e.account_id AND w.enabled AND e.type = ANY (w.events) FOR KEY SHARE) w ON true
         RETURNING account_id, id, attempts, status
       )
       SELECT (SELECT count(*)::int FROM relayed) AS events,
              (SELECT COALESCE(json_agg(json_build_object('accountId', account_id, 'deliveryId', id, 'attempts', attempts)), '[]')
                 FROM deliveries WHERE status = 'pending') AS queued`,
      [limit, CANCELLED_BY_ERASURE],
    );
    return relayed;
  }

  /** A ping: the event and its one delivery to this webhook (enabled or not). Undefined when the webhook is not the account's. */
  @AccountQuery([1, 2, { ...EXAMPLE_EVENT, type: 'ping', callId: null }])
  async recordPing(accountId: number, webhookId: number, event: NewEvent, sql: Sql = this.db): Promise<DeliveryRow | undefined> {
    const [row] = await sql.query<DeliveryRow>(
      `WITH hook AS (
         SELECT id FROM webhooks WHERE account_id = $1 AND id = $2
       ), e AS (
         INSERT INTO webhook_events (account_id, id, type, call_id, body, created_at)
         SELECT $1, $3, $4, NULL, $5, $6 WHERE EXISTS (SELECT FROM hook)
         RETURNING id, type
       ), d AS (
         INSERT INTO webhook_deliveries (account_id, webhook_id, event_id)
         SELECT $1, hook.id, e.id FROM hook CROSS JOIN e
         RETURNING *
       )
       SELECT ${DELIVERY_COLUMNS} FROM d CROSS JOIN e`,
      [accountId, webhookId, event.id, event.type, event.body, event.createdAt],
    );
    return row;
  }

  /**
   * Erasure, in the transaction that deletes the call: the stored bodies of the call's events are dropped,
   * relayed or not (their delivery log rows stay, saying so), and their pending deliveries are cancelled, so
   * that the call's transcript is neither kept nor sent after the call is gone. The outbox first: that waits
   * for a relay moving one of its rows, whose events and deliveries the second statement then sees.
   */
  @AccountQuery([1, EXAMPLE_EVENT.callId])
  async erasePayloadsOfCall(accountId: number, callId: string, sql: Sql = this.db): Promise<void> {
    // A sequential scan of the outbox, which holds only the events not yet relayed: those of the last tens of
    // milliseconds while the relay runs (a backlog while no instance works the job queue makes it longer).
    await sql.query(`UPDATE webhook_outbox SET body = NULL WHERE account_id = $1 AND call_id = $2 AND body IS NOT NULL`, [
      accountId,
      callId,
    ]);
    await sql.query(
      `WITH erased AS (
         UPDATE webhook_events SET body = NULL WHERE account_id = $1 AND call_id = $2 AND body IS NOT NULL RETURNING id
       )
       UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = $3
        WHERE account_id = $1 AND status = 'pending' AND event_id IN (SELECT id FROM erased)`,
      [accountId, callId, CANCELLED_BY_ERASURE],
    );
  }

  /** The webhook's deliveries, newest first; undefined when the webhook is not the account's. */
  @AccountQuery([1, 2, 50])
  async listDeliveries(accountId: number, webhookId: number, limit: number): Promise<DeliveryRow[] | undefined> {
    // One row per delivery, or one row of nulls when the webhook has none, or no row when there is no such webhook.
    const rows = await this.db.query<DeliveryRow | { id: null }>(
      `SELECT d.* FROM webhooks w
         LEFT JOIN LATERAL (
           SELECT ${DELIVERY_COLUMNS}
             FROM webhook_deliveries d JOIN webhook_events e ON e.account_id = d.account_id AND e.id = d.event_id
            WHERE d.account_id = w.account_id AND d.webhook_id = w.id
            ORDER BY d.created_at DESC, d.id DESC
            LIMIT $3
         ) d ON true
        WHERE w.account_id = $1 AND w.id = $2`,
      [accountId, webhookId, limit],
    );
    if (rows.length === 0) return undefined;
    return rows.filter((row): row is DeliveryRow => row.id !== null);
  }

  /**
   * Queues the delivery for another attempt now (a failed one, a succeeded one to replay, or a pending one
   * brought forward). Refused when it is not the account's webhook's, or when its payload was erased. The
   * request is also remembered (`retry_requested`): when an attempt is in flight, the job queued now finds it
   * locked, and that attempt's outcome (recordOutcomes) schedules the next one at once.
   */
  @AccountQuery([1, 2, EXAMPLE_DELIVERY])
  async retryDelivery(accountId: number, webhookId: number, deliveryId: string, sql: Sql = this.db): Promise<DeliveryRow | RetryRefusal> {
    const [row] = await sql.query<RetryRow>(
      `WITH target AS (
         SELECT d.id, e.type, e.body IS NULL AS erased
           FROM webhook_deliveries d JOIN webhook_events e ON e.account_id = d.account_id AND e.id = d.event_id
          WHERE d.account_id = $1 AND d.webhook_id = $2 AND d.id = $3
            FOR UPDATE OF d
       ), retried AS (
         UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = now(), retry_requested = true
           FROM target WHERE d.account_id = $1 AND d.id = target.id AND NOT target.erased
          RETURNING ${deliveryColumns('target.type')}
       )
       SELECT target.erased, retried.* FROM target LEFT JOIN retried ON true`,
      [accountId, webhookId, deliveryId],
    );
    if (!row) return 'not-found';
    if (row.erased) return 'erased';
    const { erased: _erased, ...delivery } = row;
    return delivery;
  }

  /**
   * Takes a batch of jobs' deliveries for an attempt: each one still pending at the attempt its job names, and
   * not in flight elsewhere, is locked for `lockMs` (longer than the longest attempt) and returned with what
   * the attempt needs; the attempt answers the retries by hand asked for until then (`retry_requested` cleared). Those in flight elsewhere come back in `locked`; jobs whose delivery moved on (a
   * duplicate, a stale retry, a deleted webhook) get nothing back: there is nothing left for them to do.
   */
  @UnscopedQuery("a batch of delivery jobs of several accounts: each row is matched on its job's own (account_id, id)", [
    EXAMPLE_KEYS,
    15_000,
  ])
  async claimDeliveries(keys: DeliveryJobKey[], lockMs: number, sql: Sql = this.db): Promise<ClaimedBatch> {
    // The second SELECT sees the statement's snapshot, which predates its own UPDATE: a lock seen there is another attempt's.
    const rows = await sql.query<ClaimedDelivery & { lockedUntil: Date | null }>(
      `WITH jobs AS (
         SELECT * FROM unnest($1::int[], $2::uuid[], $3::int[]) AS j(account_id, id, attempts)
       ), claimed AS (
         UPDATE webhook_deliveries d SET locked_until = now() + make_interval(secs => $4::double precision / 1000), retry_requested = false
           FROM jobs j, webhooks w, webhook_events e
          WHERE d.account_id = j.account_id AND d.id = j.id AND d.attempts = j.attempts AND d.status = 'pending'
            AND (d.locked_until IS NULL OR d.locked_until < now())
            AND w.account_id = d.account_id AND w.id = d.webhook_id AND e.account_id = d.account_id AND e.id = d.event_id
          RETURNING d.id, d.webhook_id AS "webhookId", d.attempts, e.id AS "eventId", e.body, w.url,
                    ${activeSecrets('w')} AS secrets,
                    NULL::timestamptz AS "lockedUntil"
       )
       SELECT * FROM claimed
       UNION ALL
       SELECT d.id, NULL, NULL, NULL, NULL, NULL, NULL, d.locked_until
         FROM webhook_deliveries d JOIN jobs j ON d.account_id = j.account_id AND d.id = j.id AND d.attempts = j.attempts
        WHERE d.status = 'pending' AND d.locked_until >= now()`,
      [keys.map((key) => key.accountId), keys.map((key) => key.deliveryId), keys.map((key) => key.attempts), lockMs],
    );
    const claimed: ClaimedDelivery[] = [];
    const locked: LockedDelivery[] = [];
    for (const { lockedUntil, ...row } of rows) {
      if (lockedUntil) locked.push({ id: row.id, lockedUntil });
      else claimed.push(row);
    }
    return { claimed, locked };
  }

  /**
   * Records how a batch of attempts ended, and unlocks those deliveries (one statement for the batch). A delivery
   * cancelled while its attempt was in flight (its webhook disabled, its call erased) has the attempt counted but
   * stays cancelled unless the receiver took it: a failure is not retried. A retry by hand asked for during the
   * attempt (`retry_requested`, read under the row's lock, so a retry is either seen here or asked after this
   * outcome) wins over the outcome, unless that is final: the delivery stays pending, due now, and comes back
   * in `retriedNow` for the caller to queue its job in the same transaction, since the outcome alone (a
   * success) may have none. The flag is left
   * as it is (the next claim clears it), so RETURNING sees the value the SET read.
   */
  @UnscopedQuery("a batch of delivery jobs of several accounts: each row is matched on its job's own (account_id, id)", [EXAMPLE_OUTCOMES])
  async recordOutcomes(outcomes: AttemptOutcome[], sql: Sql = this.db): Promise<RecordedOutcomes> {
    const rows = await sql.query<DeliveryJobKey & { retriedNow: boolean }>(
      `WITH recorded AS (
         UPDATE webhook_deliveries d
            SET status = CASE WHEN d.status = 'pending' AND d.retry_requested AND NOT o.final THEN 'pending'
                              WHEN d.status = 'pending' OR o.status = 'succeeded' THEN o.status ELSE d.status END,
                attempts = d.attempts + 1, last_status_code = o.status_code,
                last_error = CASE WHEN d.status = 'pending' OR o.status = 'succeeded' THEN o.error ELSE d.last_error END,
                next_attempt_at = CASE WHEN d.status <> 'pending' THEN NULL WHEN d.retry_requested AND NOT o.final THEN now() ELSE o.next_attempt_at END,
                locked_until = NULL
           FROM unnest($1::int[], $2::uuid[], $3::int[], $4::varchar[], $5::int[], $6::varchar[], $7::timestamptz[], $8::boolean[])
                AS o(account_id, id, attempts, status, status_code, error, next_attempt_at, final)
          WHERE d.account_id = o.account_id AND d.id = o.id AND d.attempts = o.attempts
          RETURNING d.account_id, d.id, d.attempts, d.status, d.status = 'pending' AND d.retry_requested AS retried_now
       )
       SELECT account_id AS "accountId", id AS "deliveryId", attempts, retried_now AS "retriedNow" FROM recorded WHERE status = 'pending'`,
      [
        outcomes.map((outcome) => outcome.accountId),
        outcomes.map((outcome) => outcome.deliveryId),
        outcomes.map((outcome) => outcome.attempts),
        outcomes.map((outcome) => outcome.status),
        outcomes.map((outcome) => outcome.statusCode),
        outcomes.map((outcome) => outcome.error),
        outcomes.map((outcome) => outcome.nextAttemptAt),
        outcomes.map((outcome) => outcome.final),
      ],
    );
    return {
      retryLater: rows.filter((row) => !row.retriedNow).map((row) => row.deliveryId),
      retriedNow: rows.filter((row) => row.retriedNow).map(({ accountId, deliveryId, attempts }) => ({ accountId, deliveryId, attempts })),
    };
  }

  /**
   * The receiver answered 410 Gone: the webhook is disabled, and its other pending deliveries cancelled
   * (the delivery that got the 410 is recorded by recordOutcomes).
   */
  @AccountQuery([1, 2, EXAMPLE_DELIVERY])
  async disableGone(accountId: number, webhookId: number, exceptDeliveryId: string, sql: Sql = this.db): Promise<void> {
    await sql.query(
      `WITH disabled AS (
         UPDATE webhooks SET enabled = false, updated_at = now() WHERE account_id = $1 AND id = $2 RETURNING id
       )
       UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = 'Not delivered: the receiver answered 410 Gone and the webhook was disabled'
        WHERE account_id = $1 AND webhook_id = $2 AND status = 'pending' AND id <> $3 AND EXISTS (SELECT FROM disabled)`,
      [accountId, webhookId, exceptDeliveryId],
    );
  }

  /**
   * Retention: deletes up to `limit` of the oldest events created more than `days` days ago none of whose
   * deliveries is still pending; their deliveries go with them (the foreign key cascades). How many.
   */
  @UnscopedQuery("the periodic clean-up deletes every account's expired events", [30, 1000])
  async deleteExpiredEvents(days: number, limit: number): Promise<number> {
    const deleted = await this.db.query(
      `DELETE FROM webhook_events WHERE (account_id, id) IN (
         SELECT e.account_id, e.id FROM webhook_events e
          WHERE e.created_at < now() - make_interval(days => $1)
            AND NOT EXISTS (SELECT FROM webhook_deliveries d WHERE d.account_id = e.account_id AND d.event_id = e.id AND d.status = 'pending')
          ORDER BY e.created_at LIMIT $2
       ) RETURNING id`,
      [days, limit],
    );
    return deleted.length;
  }
}

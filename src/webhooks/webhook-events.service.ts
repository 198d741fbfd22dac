import { Injectable } from '@nestjs/common';
import { TransactionSql } from '../database/database';
import { CallEvent, newEvent } from './webhook-payload';
import { WebhookRelay } from './webhook-relay';
import { WebhooksRepository } from './webhooks.repository';

/**
 * What other modules call when something happens to a call, inside the transaction of the change (the
 * transactional outbox): the event's outbox row is written in that transaction, so that the change and its
 * event commit together or not at all; the relay makes its deliveries once it commits. Test calls have no
 * events.
 */
@Injectable()
export class WebhookEvents {
  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly relay: WebhookRelay,
  ) {}

  /** `call.created` (a new call, not a test call) or `call.recording.ready` (an upload committed). */
  async record(sql: TransactionSql, accountId: number, event: CallEvent): Promise<void> {
    if (await this.webhooks.recordEvent(accountId, newEvent(event.type, event.data, event.data.id), sql)) this.relay.relayAfterCommit(sql);
  }

  /**
   * The call was deleted (erasure): the stored payloads of its earlier events are erased and their pending
   * deliveries cancelled (the deliveries log keeps a line saying so), then `call.deleted` is recorded.
   */
  async callDeleted(sql: TransactionSql, accountId: number, call: { id: string; isTest: boolean }): Promise<void> {
    await this.webhooks.erasePayloadsOfCall(accountId, call.id, sql);
    if (!call.isTest) await this.record(sql, accountId, { type: 'call.deleted', data: { id: call.id } });
  }
}

import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../auth/account.entity';

/** What an event is, in the outbox (WebhookOutboxEntry) and once relayed (WebhookEvent). */
export abstract class WebhookEventFields {
  @Column({ type: 'varchar', length: 40 })
  type: string;

  /** The call the event is about (its payload is erased when the call is deleted); null for a ping. */
  @Column({ type: 'uuid', nullable: true })
  callId: string | null;

  /** Null once erased (the call was deleted). */
  @Column({ type: 'text', nullable: true })
  body: string | null;
}

/**
 * One event, moved here from the outbox (WebhookOutboxEntry) by the relay, with its deliveries; a ping is
 * written here directly. `body` is the exact JSON text every delivery of it sends (and signs), so that
 * retries send the same bytes.
 */
@Entity('webhook_events')
@Index(['accountId', 'callId'], { where: '"call_id" IS NOT NULL' })
// Retention deletes the oldest events first (WebhooksRepository.deleteExpiredEvents).
@Index('IDX_webhook_events_created_at', ['createdAt'])
export class WebhookEvent extends WebhookEventFields {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  /** Shown as `evt_` + its 32 hex digits (the `webhook-id` header). */
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}

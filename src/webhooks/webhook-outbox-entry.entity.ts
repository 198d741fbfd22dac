import { Column, Entity, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Account } from '../auth/account.entity';
import { WebhookEventFields } from './webhook-event.entity';

/**
 * An event not yet relayed: the transactional outbox. The change that causes an event writes this row in its
 * own transaction, and nothing else, the least it can (one row, one index entry); the relay (WebhookRelay)
 * moves it to `webhook_events` with its deliveries and their jobs, in one statement. Rows live for
 * milliseconds, oldest first.
 */
@Entity('webhook_outbox')
export class WebhookOutboxEntry extends WebhookEventFields {
  /** The order events were recorded in, which the relay follows. */
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  seq: string;

  @Column({ type: 'integer' })
  accountId: number;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  @Column({ type: 'uuid' })
  eventId: string;

  @Column({ type: 'timestamptz' })
  createdAt: Date;
}

import { Column, Entity, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { WebhookEvent } from './webhook-event.entity';

/**
 * An event not yet relayed to its deliveries: the transactional outbox proper. The change that causes an event
 * writes the event and this row in its own transaction; the relay (WebhookRelay) turns it into the event's
 * deliveries and their jobs and deletes it, in one statement. Rows live for milliseconds, oldest first.
 */
@Entity('webhook_outbox')
export class WebhookOutboxEntry {
  /** The order events were recorded in, which the relay follows. */
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  seq: string;

  @Column({ type: 'integer' })
  accountId: number;

  @Column({ type: 'uuid' })
  eventId: string;

  @ManyToOne(() => WebhookEvent, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'account_id', referencedColumnName: 'accountId' },
    { name: 'event_id', referencedColumnName: 'id' },
  ])
  event?: WebhookEvent;
}

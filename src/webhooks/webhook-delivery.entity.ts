import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { WebhookEvent } from './webhook-event.entity';
import { Webhook } from './webhook.entity';

/**
 * One event to one webhook: the deliveries log, and the state of its attempts. Both references carry the
 * account, so deleting a webhook (or an account) removes its deliveries through account-led indexes.
 */
@Entity('webhook_deliveries')
@Index(['accountId', 'eventId', 'webhookId'], { unique: true })
@Index(['accountId', 'webhookId', 'createdAt', 'id'])
export class WebhookDelivery {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  /** gen_random_uuid() in the migration. */
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'integer' })
  webhookId: number;

  @ManyToOne(() => Webhook, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'account_id', referencedColumnName: 'accountId' },
    { name: 'webhook_id', referencedColumnName: 'id' },
  ])
  webhook?: Webhook;

  @Column({ type: 'uuid' })
  eventId: string;

  @ManyToOne(() => WebhookEvent, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'account_id', referencedColumnName: 'accountId' },
    { name: 'event_id', referencedColumnName: 'id' },
  ])
  event?: WebhookEvent;

  /** pending | succeeded | failed */
  @Column({ type: 'varchar', length: 10, default: 'pending' })
  status: string;

  /** Attempts made (finished) so far; also names the attempt a queued job is for. */
  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ type: 'integer', nullable: true })
  lastStatusCode: number | null;

  /** A short, sanitised description; never more than a short excerpt of what the receiver answered. */
  @Column({ type: 'varchar', length: 300, nullable: true })
  lastError: string | null;

  /** When the next attempt is due; null once the delivery succeeded or failed for good. */
  @Column({ type: 'timestamptz', nullable: true, default: () => 'now()' })
  nextAttemptAt: Date | null;

  /** Set while an attempt is in flight, so that a duplicate job cannot run a second one at the same time. */
  @Column({ type: 'timestamptz', nullable: true })
  lockedUntil: Date | null;

  /**
   * A retry by hand was asked for since the last attempt was claimed: when it came during that attempt, the
   * attempt's outcome schedules the next one at once instead of after its delay. Cleared by each claim (the
   * attempt claimed answers every retry asked for before it).
   */
  @Column({ type: 'boolean', default: false })
  retryRequested: boolean;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}

import { Column, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';

/**
 * An account's webhook: where its events go, and the secrets they are signed with. (account_id, id) is unique
 * so that deliveries reference their webhook with the account in the key (a delivery can never point at
 * another account's webhook, and deleting a webhook finds its deliveries through their account-led index).
 */
@Entity('webhooks')
@Index(['accountId', 'id'], { unique: true })
export class Webhook extends AccountOwnedEntity {
  /** Normalised by the WHATWG URL parser; at most 2,000 characters. */
  @Column({ type: 'varchar', length: 2000 })
  url: string;

  /** A non-empty subset of WEBHOOK_EVENT_TYPES, in that order. */
  @Column({ type: 'varchar', length: 40, array: true })
  events: string[];

  @Column({ type: 'varchar', length: 2000 })
  description: string;

  @Column({ type: 'boolean' })
  enabled: boolean;

  /** `whsec_…`: needed in clear to sign (HMAC). Shown once, never in a response after that, never logged. */
  @Column({ type: 'varchar', length: 100 })
  secret: string;

  /** The secret before the last rotation: deliveries are signed with it too until previousSecretExpiresAt. */
  @Column({ type: 'varchar', length: 100, nullable: true })
  previousSecret: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  previousSecretExpiresAt: Date | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}

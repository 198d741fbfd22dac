import { Column, Entity, Index } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';

/**
 * One `Idempotency-Key` of one account, for 24 hours from its first request (`created_at`): claimed when that
 * request starts (the unique index decides between instances), completed with its response. Nothing here can be
 * read without the key itself and the server's secret: the key is stored as a hash, and the response body (which
 * may carry a secret, such as a new API key) encrypted with a key derived from both (idempotency-crypto.ts).
 */
@Entity('idempotency_keys')
@Index(['accountId', 'keyHash'], { unique: true })
@Index(['createdAt']) // the clean-up of expired keys
export class IdempotencyKey extends AccountOwnedEntity {
  /** SHA-256 of the Idempotency-Key (domain-separated), hex. */
  @Column({ type: 'char', length: 64 })
  keyHash: string;

  /** HMAC of the method, path and body of the first request, keyed by the Idempotency-Key, hex. */
  @Column({ type: 'char', length: 64 })
  requestHash: string;

  /** Random per claim: only the request that holds the claim completes or releases it. */
  @Column({ type: 'uuid' })
  claim: string;

  /** The first request's response status; null while it is in flight. */
  @Column({ type: 'integer', nullable: true })
  statusCode: number | null;

  @Column({ type: 'varchar', length: 200, nullable: true })
  contentType: string | null;

  /** The response body, AES-256-GCM encrypted (IV, tag, ciphertext); null while in flight. */
  @Column({ type: 'bytea', nullable: true })
  body: Buffer | null;
}

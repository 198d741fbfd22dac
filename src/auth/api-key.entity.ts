import { Check, Column, Entity, Index } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';
import type { ApiKeyScope } from './scopes';

@Entity('api_keys')
@Index(['accountId', 'id'])
@Check('CHK_api_keys_scopes', `cardinality("scopes") > 0 AND "scopes" <@ ARRAY['read', 'write']::text[]`)
export class ApiKey extends AccountOwnedEntity {
  /** What the key is for, for people (1–100 characters). */
  @Column({ type: 'varchar', length: 100 })
  name: string;

  /** The first characters of the key, safe to show so that a person can tell keys apart. */
  @Column({ type: 'varchar', length: 16 })
  prefix: string;

  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  @Index({ unique: true })
  @Column({ type: 'char', length: 64 })
  keyHash: string;

  /** A non-empty subset of `read`, `write`, in that order (see scopes.ts). */
  @Column({ type: 'text', array: true })
  scopes: ApiKeyScope[];

  /** The key stops working at this time; null: never. */
  @Column({ type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  /** When the key was last used, to the minute (written at most once a minute). */
  @Column({ type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;

  @Column({ type: 'timestamptz', nullable: true })
  revokedAt: Date | null;
}

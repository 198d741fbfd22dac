import { Column, Entity, Index } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';

@Entity('api_keys')
@Index(['accountId', 'id'])
export class ApiKey extends AccountOwnedEntity {
  /** The first characters of the key, safe to show so that a person can tell keys apart. */
  @Column({ type: 'varchar', length: 16 })
  prefix: string;

  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  @Index({ unique: true })
  @Column({ type: 'char', length: 64 })
  keyHash: string;

  @Column({ type: 'timestamptz', nullable: true })
  revokedAt: Date | null;
}

import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Account } from './account.entity';

@Entity('api_keys')
@Index(['accountId', 'id'])
export class ApiKey {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ type: 'integer' })
  accountId: number;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** The first characters of the key, safe to show so that a person can tell keys apart. */
  @Column({ type: 'varchar', length: 16 })
  prefix: string;

  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  @Index({ unique: true })
  @Column({ type: 'char', length: 64 })
  keyHash: string;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @Column({ type: 'timestamptz', nullable: true })
  revokedAt: Date | null;
}

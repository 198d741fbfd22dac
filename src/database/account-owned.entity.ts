import { Column, CreateDateColumn, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Account } from '../auth/account.entity';

/**
 * The columns every row owned by an account has: an integer id, the owning account (deleting the account
 * deletes the row) and its creation time. Entities add `@Index(['accountId', 'id'])` (or another index that
 * leads with the account) for their API queries.
 */
export abstract class AccountOwnedEntity {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ type: 'integer' })
  accountId: number;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}

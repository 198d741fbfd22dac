import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn, VirtualColumn } from 'typeorm';
import { Account } from '../auth/account.entity';

@Entity('knowledge_bases')
@Index(['accountId', 'id'])
export class KnowledgeBase {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ type: 'integer' })
  accountId: number;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  /** Counted in the same query that loads the knowledge base (a correlated subquery on the source index). */
  @VirtualColumn({
    type: 'integer',
    query: (alias) => `SELECT count(*) FROM knowledge_base_sources s WHERE s.knowledge_base_id = ${alias}.id`,
    transformer: { from: (value: string | number | null) => Number(value ?? 0), to: (value: number) => value },
  })
  sourceCount: number;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}

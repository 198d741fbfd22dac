import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Account } from '../auth/account.entity';
import { KnowledgeBase } from './knowledge-base.entity';

export const SOURCE_TYPES = ['text', 'url'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

@Entity('knowledge_base_sources')
@Index(['accountId', 'knowledgeBaseId', 'id'])
@Index(['knowledgeBaseId'])
export class KnowledgeBaseSource {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ type: 'integer' })
  accountId: number;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  @Column({ type: 'integer' })
  knowledgeBaseId: number;

  /** Deleting a knowledge base deletes its sources. */
  @ManyToOne(() => KnowledgeBase, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'knowledge_base_id' })
  knowledgeBase?: KnowledgeBase;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 10 })
  type: SourceType;

  @Column({ type: 'text' })
  content: string;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}

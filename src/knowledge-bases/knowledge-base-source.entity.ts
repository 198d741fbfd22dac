import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';
import { KnowledgeBase } from './knowledge-base.entity';

export const SOURCE_TYPES = ['text', 'url'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

@Entity('knowledge_base_sources')
@Index(['accountId', 'knowledgeBaseId', 'id'])
@Index(['knowledgeBaseId'])
export class KnowledgeBaseSource extends AccountOwnedEntity {
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

}

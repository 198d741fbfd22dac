import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';
import { KnowledgeBase } from './knowledge-base.entity';

export const SOURCE_TYPES = ['text', 'url'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

/** `ready`: its passages are searchable; `pending`: being indexed (a url source being fetched); `failed`: see `error`. */
export const SOURCE_STATUSES = ['ready', 'pending', 'failed'] as const;
export type SourceStatus = (typeof SOURCE_STATUSES)[number];

@Entity('knowledge_base_sources')
@Index(['accountId', 'knowledgeBaseId', 'id'])
@Index(['knowledgeBaseId'])
// The sources waiting for indexing, for the sweep that (re)sends their jobs (migration SourceStatus).
@Index('IDX_knowledge_base_sources_pending', { synchronize: false })
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

  /** A text source's text; a url source's URL (its fetched text lives only in its passages). */
  @Column({ type: 'text' })
  content: string;

  @Column({ type: 'varchar', length: 10 })
  status: SourceStatus;

  /** Why the last fetch failed (`failed`), shown to the customer; "" otherwise. */
  @Column({ type: 'varchar', length: 500, default: '' })
  error: string;

  /**
   * Incremented by each refresh: an indexing job stores its result only if the source is still at the revision it
   * started from, so that a fetch overtaken by a newer refresh cannot overwrite it.
   */
  @Column({ type: 'integer', default: 0 })
  revision: number;
}

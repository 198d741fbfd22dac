import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';
import { KnowledgeBase } from './knowledge-base.entity';

export const SOURCE_TYPES = ['text', 'url', 'file'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

/** `ready`: its passages are searchable; `pending`: being indexed (a url source fetched, a file read); `failed`: see `error`. */
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

  /** A text source's text; a url source's URL (its fetched text lives only in its passages); a file source's extracted text. */
  @Column({ type: 'text' })
  content: string;

  /** A file source's file name as uploaded (its last path segment, cleaned: see file-name.ts); "" for other types. */
  @Column({ type: 'varchar', length: 255, default: '' })
  fileName: string;

  /** A file source's type, as its content showed it (`application/pdf`, …); "" for other types. */
  @Column({ type: 'varchar', length: 100, default: '' })
  contentType: string;

  /** A file source's size in bytes; 0 for other types. */
  @Column({ type: 'integer', default: 0 })
  bytes: number;

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

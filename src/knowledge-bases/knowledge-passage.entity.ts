import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';
import { KnowledgeBaseSource } from './knowledge-base-source.entity';

/**
 * A passage of a source's text (src/knowledge-bases/passages.ts) with its search tokens
 * (src/knowledge-bases/search-tokens.ts). A source has passages only while it is `ready`. Written only through
 * KnowledgeBasesRepository; the triggers of migration KnowledgePassages keep knowledge_token_stats and
 * knowledge_corpus in step with every insert and delete (cascades included).
 */
@Entity('knowledge_passages')
@Index(['sourceId'])
// GIN on (account_id, tokens) through btree_gin, written by hand in the migration.
@Index('IDX_knowledge_passages_search', { synchronize: false })
export class KnowledgePassage extends AccountOwnedEntity {
  /** The source's knowledge base (sources never move), so that search filters without a join. */
  @Column({ type: 'integer' })
  knowledgeBaseId: number;

  @Column({ type: 'integer' })
  sourceId: number;

  /** Deleting a source (or its knowledge base) deletes its passages. */
  @ManyToOne(() => KnowledgeBaseSource, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'source_id' })
  source?: KnowledgeBaseSource;

  /** Order within the source, from 0. */
  @Column({ type: 'integer' })
  position: number;

  @Column({ type: 'text' })
  text: string;

  /** The distinct search tokens, as `array_to_tsvector(tokens)`: no text-search parser involved. */
  @Column({ type: 'tsvector' })
  tokens: string;

  /** How many distinct tokens: the passage's length for ranking, without reading `tokens`. */
  @Column({ type: 'integer' })
  tokenCount: number;
}

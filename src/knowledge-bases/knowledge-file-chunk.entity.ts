import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../auth/account.entity';
import { KnowledgeBaseSource } from './knowledge-base-source.entity';

/**
 * An uploaded file of a `file` source, kept in pieces of at most FILE_CHUNK_BYTES in PostgreSQL: every instance
 * can extract it (the job may run anywhere), refresh extracts it again, and deleting the source (or its knowledge
 * base, or the account) deletes it in the same transaction. While an upload is streaming, its pieces have no
 * source yet; a completed upload gets its source in the transaction that creates the source.
 */
@Entity('knowledge_file_chunks')
@Index(['sourceId'])
// Uploads a process left unfinished (no source), for the sweep that removes them (migration KnowledgeFiles).
@Index('IDX_knowledge_file_chunks_unfinished', { synchronize: false })
export class KnowledgeFileChunk {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  /** The upload's id, chosen as it starts. */
  @PrimaryColumn({ type: 'uuid' })
  fileId: string;

  /** Order within the file, from 0. */
  @PrimaryColumn({ type: 'integer' })
  position: number;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** Null while the upload is streaming. */
  @Column({ type: 'integer', nullable: true })
  sourceId: number | null;

  @ManyToOne(() => KnowledgeBaseSource, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'source_id' })
  source?: KnowledgeBaseSource;

  @Column({ type: 'bytea' })
  data: Buffer;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}

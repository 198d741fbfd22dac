import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../auth/account.entity';

/**
 * Document frequencies for ranking: in how many of the account's passages each token occurs. Maintained by the
 * triggers on knowledge_passages (migration KnowledgePassages), never written by the application.
 */
@Entity('knowledge_token_stats')
export class KnowledgeTokenStat {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  @PrimaryColumn({ type: 'text' })
  token: string;

  @Column({ type: 'integer' })
  passages: number;
}

/**
 * The size of an account's corpus (passages, and their distinct tokens summed), for ranking. Maintained by the same
 * triggers; its row is also the per-account lock that orders their updates (no deadlock between two writers).
 */
@Entity('knowledge_corpus')
export class KnowledgeCorpus {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  @Column({ type: 'integer' })
  passages: number;

  @Column({ type: 'bigint' })
  tokens: string;
}

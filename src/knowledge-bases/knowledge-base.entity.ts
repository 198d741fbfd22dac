import { Column, Entity, Index, UpdateDateColumn, VirtualColumn } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';

@Entity('knowledge_bases')
@Index(['accountId', 'id'], { unique: true }) // unique: the target of agent_knowledge_bases' foreign key
export class KnowledgeBase extends AccountOwnedEntity {
  @Column({ type: 'varchar', length: 200 })
  name: string;

  /** Counted in the same query that loads the knowledge base (a correlated subquery on the source index). */
  @VirtualColumn({
    type: 'integer',
    query: (alias) => `SELECT count(*) FROM knowledge_base_sources s WHERE s.knowledge_base_id = ${alias}.id`,
    transformer: { from: (value: string | number | null) => Number(value ?? 0), to: (value: number) => value },
  })
  sourceCount: number;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}

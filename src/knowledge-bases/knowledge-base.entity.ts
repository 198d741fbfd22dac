import { Column, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';

/** The table's declaration (migrations, drift test); its queries are KnowledgeBasesRepository's. */
@Entity('knowledge_bases')
@Index(['accountId', 'id'], { unique: true }) // unique: the target of agent_knowledge_bases' foreign key
export class KnowledgeBase extends AccountOwnedEntity {
  @Column({ type: 'varchar', length: 200 })
  name: string;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}

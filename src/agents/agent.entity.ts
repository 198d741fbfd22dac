import { Column, Entity, Index, UpdateDateColumn } from 'typeorm';
import { AccountOwnedEntity } from '../database/account-owned.entity';

@Entity('agents')
@Index(['accountId', 'id'], { unique: true }) // unique: the target of agent_knowledge_bases' foreign key
export class Agent extends AccountOwnedEntity {
  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 2000 })
  description: string;

  @Column({ type: 'varchar', length: 100 })
  model: string;

  @Column({ type: 'varchar', length: 50 })
  voice: string;

  @Column({ type: 'varchar', length: 10 })
  language: string;

  @Column({ type: 'text' })
  systemPrompt: string;

  /** The latest version published (src/agent-versions); null until the first. */
  @Column({ type: 'integer', nullable: true })
  publishedVersion: number | null;

  @UpdateDateColumn({ type: 'timestamptz' })
  updatedAt: Date;
}

import { Column, CreateDateColumn, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Agent } from '../agents/agent.entity';

/**
 * A published version of an agent's settings (contract section 19), numbered 1, 2, 3 per agent. Immutable: a
 * trigger (migration AgentVersions1796400000000) refuses every UPDATE, whoever sends it. Deleting the agent
 * deletes its versions; its calls keep the number of the version that answered (calls.agent_version).
 */
@Entity('agent_versions')
export class AgentVersion {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  @PrimaryColumn({ type: 'integer' })
  agentId: number;

  @PrimaryColumn({ type: 'integer' })
  version: number;

  @ManyToOne(() => Agent, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'account_id', referencedColumnName: 'accountId' },
    { name: 'agent_id', referencedColumnName: 'id' },
  ])
  agent?: Agent;

  /** What the publisher said of this version. */
  @Column({ type: 'varchar', length: 500 })
  description: string;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;

  // The agent's settings as published.
  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 2000 })
  agentDescription: string;

  @Column({ type: 'varchar', length: 100 })
  model: string;

  @Column({ type: 'varchar', length: 50 })
  voice: string;

  @Column({ type: 'varchar', length: 10 })
  language: string;

  @Column({ type: 'text' })
  systemPrompt: string;

  /** As published; a knowledge base or tool deleted since is left out when the version answers or is restored. */
  @Column({ type: 'integer', array: true })
  knowledgeBaseIds: number[];

  @Column({ type: 'integer', array: true })
  toolIds: number[];
}

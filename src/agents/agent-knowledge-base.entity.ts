import { Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { KnowledgeBase } from '../knowledge-bases/knowledge-base.entity';
import { Agent } from './agent.entity';

/**
 * An agent's knowledge bases. Both foreign keys include the account, so the database itself refuses a link
 * between an agent and another account's knowledge base; deleting either side deletes the link.
 */
@Entity('agent_knowledge_bases')
@Index(['accountId', 'knowledgeBaseId'])
export class AgentKnowledgeBase {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  @PrimaryColumn({ type: 'integer' })
  agentId: number;

  @PrimaryColumn({ type: 'integer' })
  knowledgeBaseId: number;

  @ManyToOne(() => Agent, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'account_id', referencedColumnName: 'accountId' },
    { name: 'agent_id', referencedColumnName: 'id' },
  ])
  agent?: Agent;

  @ManyToOne(() => KnowledgeBase, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'account_id', referencedColumnName: 'accountId' },
    { name: 'knowledge_base_id', referencedColumnName: 'id' },
  ])
  knowledgeBase?: KnowledgeBase;
}

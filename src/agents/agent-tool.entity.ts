import { Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Tool } from '../tools/tool.entity';
import { Agent } from './agent.entity';

/**
 * An agent's tools (as agent_knowledge_bases for its knowledge bases). Both foreign keys include the account, so
 * the database itself refuses a link between an agent and another account's tool; deleting either side deletes
 * the link (a deleted tool leaves every agent's list).
 */
@Entity('agent_tools')
@Index(['accountId', 'toolId'])
export class AgentTool {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  @PrimaryColumn({ type: 'integer' })
  agentId: number;

  @PrimaryColumn({ type: 'integer' })
  toolId: number;

  @ManyToOne(() => Agent, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'account_id', referencedColumnName: 'accountId' },
    { name: 'agent_id', referencedColumnName: 'id' },
  ])
  agent?: Agent;

  @ManyToOne(() => Tool, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'account_id', referencedColumnName: 'accountId' },
    { name: 'tool_id', referencedColumnName: 'id' },
  ])
  tool?: Tool;
}

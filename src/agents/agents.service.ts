import { ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { CallerAccount } from '../auth/caller-account';
import { definedFields } from '../common/defined-fields';
import { RequestValidationException } from '../common/validation';
import { Database, Sql } from '../database/database';
import { AgentFields, AgentRow, AgentsRepository } from './agents.repository';
import { CreateAgentDto } from './dto/create-agent.dto';
import { UpdateAgentDto } from './dto/update-agent.dto';
import { mayUseVoice } from './voices';

const notFound = (id: number) => new NotFoundException(`Agent ${id} not found`);

/** PostgreSQL's foreign_key_violation. */
const FOREIGN_KEY_VIOLATION = '23503';

/** The agents' rules (the voice tiers, knowledge bases of the same account, 404s); the SQL is AgentsRepository's. */
@Injectable()
export class AgentsService {
  constructor(
    private readonly agents: AgentsRepository,
    private readonly database: Database,
  ) {}

  list(accountId: number): Promise<AgentRow[]> {
    return this.agents.list(accountId);
  }

  async get(accountId: number, id: number): Promise<AgentRow> {
    return (await this.agents.get(accountId, id)) ?? Promise.reject(notFound(id));
  }

  /** The agent, or undefined (for callers that have a rule of their own when it is gone: a conversation's). */
  find(accountId: number, id: number): Promise<AgentRow | undefined> {
    return this.agents.get(accountId, id);
  }

  /**
   * The agent a request body names in `agentId` (a call's, a widget site's): it must be one of the account's,
   * and a body field that names something else is a 400 on that field, not a 404.
   */
  async getReferenced(accountId: number, agentId: number): Promise<AgentRow> {
    return (await this.agents.get(accountId, agentId)) ?? Promise.reject(unknownAgentField(agentId));
  }

  /** With knowledge bases, the agent and its links are written in one transaction (without, one INSERT). */
  create(account: CallerAccount, dto: CreateAgentDto): Promise<AgentRow> {
    const { knowledgeBaseIds, ...fields } = dto;
    this.checkVoice(account, fields.voice);
    if (!knowledgeBaseIds?.length) return this.agents.insert(account.id, fields as AgentFields);
    return this.withKnowledgeBases(async (sql) => {
      const agent = await this.agents.insert(account.id, fields as AgentFields, sql);
      return { ...agent, knowledgeBaseIds: await this.linkKnowledgeBases(account.id, agent.id, knowledgeBaseIds, sql) };
    });
  }

  /** `knowledgeBaseIds`, when given, replaces the agent's knowledge bases (and touches updatedAt like any change). */
  async update(account: CallerAccount, id: number, dto: UpdateAgentDto): Promise<AgentRow> {
    const { knowledgeBaseIds, ...fields } = definedFields(dto);
    if (Object.keys(fields).length === 0 && knowledgeBaseIds === undefined) return this.get(account.id, id);
    this.checkVoice(account, fields.voice);
    if (knowledgeBaseIds === undefined) return (await this.agents.update(account.id, id, fields)) ?? Promise.reject(notFound(id));
    return this.withKnowledgeBases(async (sql) => {
      const agent = await this.agents.update(account.id, id, fields, sql);
      if (!agent) throw notFound(id);
      return { ...agent, knowledgeBaseIds: await this.linkKnowledgeBases(account.id, id, knowledgeBaseIds, sql) };
    });
  }

  async remove(accountId: number, id: number): Promise<void> {
    if (!(await this.agents.delete(accountId, id))) throw notFound(id);
  }

  /**
   * Links the agent to these knowledge bases (duplicates collapse), which must all be the account's: otherwise a
   * 400 naming the others, and the transaction rolls back.
   */
  private async linkKnowledgeBases(accountId: number, agentId: number, knowledgeBaseIds: number[], sql: Sql): Promise<number[]> {
    const wanted = [...new Set(knowledgeBaseIds)];
    const linked = await this.agents.replaceKnowledgeBases(accountId, agentId, wanted, sql);
    const unknown = wanted.filter((id) => !linked.includes(id));
    if (unknown.length) throw unknownKnowledgeBases(unknown);
    return linked;
  }

  /**
   * Runs `work` in a transaction; a knowledge base deleted between the moment the links were chosen and the
   * moment they were written (the foreign key then refuses the link) is the same 400 as one that never existed.
   */
  private async withKnowledgeBases(work: (sql: Sql) => Promise<AgentRow>): Promise<AgentRow> {
    try {
      return await this.database.transaction(work);
    } catch (error) {
      if ((error as { code?: unknown }).code === FOREIGN_KEY_VIOLATION) throw unknownKnowledgeBases();
      throw error;
    }
  }

  private checkVoice(account: CallerAccount, voice: string | undefined): void {
    if (voice !== undefined && !mayUseVoice(voice, account)) {
      throw new ForbiddenException(`Voice ${voice} is reserved for the platform account`);
    }
  }
}

const unknownKnowledgeBases = (ids?: number[]) =>
  new RequestValidationException([
    {
      field: 'knowledgeBaseIds',
      message: ids
        ? `knowledgeBaseIds ${ids.join(', ')} ${ids.length === 1 ? 'is not a knowledge base' : 'are not knowledge bases'} of this account`
        : 'knowledgeBaseIds names a knowledge base that was just deleted',
    },
  ]);

export const unknownAgentField = (agentId: number) =>
  new RequestValidationException([{ field: 'agentId', message: `agentId ${agentId} is not an agent of this account` }]);

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

/** The agents' rules (the voice tiers, knowledge bases and tools of the same account, 404s); the SQL is AgentsRepository's. */
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

  /** With knowledge bases or tools, the agent and its links are written in one transaction (without, one INSERT). */
  create(account: CallerAccount, dto: CreateAgentDto): Promise<AgentRow> {
    const { knowledgeBaseIds, toolIds, ...fields } = dto;
    this.checkVoice(account, fields.voice);
    const lists = {
      knowledgeBaseIds: knowledgeBaseIds?.length ? knowledgeBaseIds : undefined,
      toolIds: toolIds?.length ? toolIds : undefined,
    };
    if (!lists.knowledgeBaseIds && !lists.toolIds) return this.agents.insert(account.id, fields as AgentFields);
    return this.withLinks(async (sql) => {
      const agent = await this.agents.insert(account.id, fields as AgentFields, sql);
      return { ...agent, ...(await this.link(account.id, agent.id, lists, sql)) };
    });
  }

  /** `knowledgeBaseIds` and `toolIds`, when given, replace the agent's lists (and touch updatedAt like any change). */
  async update(account: CallerAccount, id: number, dto: UpdateAgentDto): Promise<AgentRow> {
    const { knowledgeBaseIds, toolIds, ...fields } = definedFields(dto);
    const lists = { knowledgeBaseIds, toolIds };
    if (Object.keys(fields).length === 0 && knowledgeBaseIds === undefined && toolIds === undefined) return this.get(account.id, id);
    this.checkVoice(account, fields.voice);
    if (knowledgeBaseIds === undefined && toolIds === undefined) {
      return (await this.agents.update(account.id, id, fields)) ?? Promise.reject(notFound(id));
    }
    return this.withLinks(async (sql) => {
      const agent = await this.agents.update(account.id, id, fields, sql);
      if (!agent) throw notFound(id);
      return { ...agent, ...(await this.link(account.id, id, lists, sql)) };
    });
  }

  /**
   * Replaces every setting of the agent (a version's, restored), in one transaction: the knowledge bases and tools
   * given that are still the account's are linked, the others (deleted since) left out.
   */
  async replaceSettings(accountId: number, id: number, settings: AgentFields & Record<LinkField, number[]>): Promise<AgentRow> {
    const { knowledgeBaseIds, toolIds, ...fields } = settings;
    return this.withLinks(async (sql) => {
      const agent = await this.agents.update(accountId, id, fields, sql);
      if (!agent) throw notFound(id);
      return {
        ...agent,
        knowledgeBaseIds: await this.agents.replaceKnowledgeBases(accountId, id, knowledgeBaseIds, sql),
        toolIds: await this.agents.replaceTools(accountId, id, toolIds, sql),
      };
    });
  }

  async remove(accountId: number, id: number): Promise<void> {
    if (!(await this.agents.delete(accountId, id))) throw notFound(id);
  }

  /**
   * Links the agent to the knowledge bases and tools of the lists given (duplicates collapse), which must all be
   * the account's: otherwise a 400 naming the others, and the transaction rolls back. The lists linked, ascending.
   */
  private async link(
    accountId: number,
    agentId: number,
    lists: Partial<Record<LinkField, number[]>>,
    sql: Sql,
  ): Promise<Partial<AgentRow>> {
    const linked: Partial<Record<LinkField, number[]>> = {};
    for (const field of LINK_FIELDS) {
      const ids = lists[field];
      if (ids === undefined) continue;
      const wanted = [...new Set(ids)];
      linked[field] =
        field === 'toolIds'
          ? await this.agents.replaceTools(accountId, agentId, wanted, sql)
          : await this.agents.replaceKnowledgeBases(accountId, agentId, wanted, sql);
      const unknown = wanted.filter((id) => !linked[field]!.includes(id));
      if (unknown.length) throw unknownLinks(field, unknown);
    }
    return linked;
  }

  /**
   * Runs `work` in a transaction; a knowledge base or tool deleted between the moment the links were chosen and the
   * moment they were written (the foreign key then refuses the link) is the same 400 as one that never existed.
   */
  private async withLinks(work: (sql: Sql) => Promise<AgentRow>): Promise<AgentRow> {
    try {
      return await this.database.transaction(work);
    } catch (error) {
      const { code, table } = error as { code?: unknown; table?: unknown };
      if (code === FOREIGN_KEY_VIOLATION) throw unknownLinks(table === 'agent_tools' ? 'toolIds' : 'knowledgeBaseIds');
      throw error;
    }
  }

  private checkVoice(account: CallerAccount, voice: string | undefined): void {
    if (voice !== undefined && !mayUseVoice(voice, account)) {
      throw new ForbiddenException(`Voice ${voice} is reserved for the platform account`);
    }
  }
}

/** The lists of an agent's links, and what each names. */
const LINK_FIELDS = ['knowledgeBaseIds', 'toolIds'] as const;
type LinkField = (typeof LINK_FIELDS)[number];
const LINKED: Record<LinkField, [string, string]> = {
  knowledgeBaseIds: ['a knowledge base', 'knowledge bases'],
  toolIds: ['a tool', 'tools'],
};

const unknownLinks = (field: LinkField, ids?: number[]) => {
  const [one, many] = LINKED[field];
  return new RequestValidationException([
    {
      field,
      message: ids
        ? `${field} ${ids.join(', ')} ${ids.length === 1 ? `is not ${one}` : `are not ${many}`} of this account`
        : `${field} names ${one} that was just deleted`,
    },
  ]);
};

export const unknownAgentField = (agentId: number) =>
  new RequestValidationException([{ field: 'agentId', message: `agentId ${agentId} is not an agent of this account` }]);

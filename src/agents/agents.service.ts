import { ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { CallerAccount } from '../auth/caller-account';
import { definedFields } from '../common/defined-fields';
import { RequestValidationException } from '../common/validation';
import { AgentFields, AgentRow, AgentsRepository } from './agents.repository';
import { CreateAgentDto } from './dto/create-agent.dto';
import { UpdateAgentDto } from './dto/update-agent.dto';
import { mayUseVoice } from './voices';

const notFound = (id: number) => new NotFoundException(`Agent ${id} not found`);

/** The agents' rules (the voice tiers, 404s); the SQL is AgentsRepository's. */
@Injectable()
export class AgentsService {
  constructor(private readonly agents: AgentsRepository) {}

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

  create(account: CallerAccount, dto: CreateAgentDto): Promise<AgentRow> {
    this.checkVoice(account, dto.voice);
    return this.agents.insert(account.id, dto as AgentFields);
  }

  async update(account: CallerAccount, id: number, dto: UpdateAgentDto): Promise<AgentRow> {
    const fields = definedFields(dto);
    if (Object.keys(fields).length === 0) return this.get(account.id, id);
    this.checkVoice(account, fields.voice);
    return (await this.agents.update(account.id, id, fields)) ?? Promise.reject(notFound(id));
  }

  async remove(accountId: number, id: number): Promise<void> {
    if (!(await this.agents.delete(accountId, id))) throw notFound(id);
  }

  private checkVoice(account: CallerAccount, voice: string | undefined): void {
    if (voice !== undefined && !mayUseVoice(voice, account)) {
      throw new ForbiddenException(`Voice ${voice} is reserved for the platform account`);
    }
  }
}

export const unknownAgentField = (agentId: number) =>
  new RequestValidationException([{ field: 'agentId', message: `agentId ${agentId} is not an agent of this account` }]);

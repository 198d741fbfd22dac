import { Injectable, NotFoundException } from '@nestjs/common';
import { AgentRow } from '../agents/agents.repository';
import { AgentsService } from '../agents/agents.service';
import { Database } from '../database/database';
import { AgentVersionRow, AgentVersionsRepository, StartingVersion } from './agent-versions.repository';

const agentNotFound = (id: number) => new NotFoundException(`Agent ${id} not found`);
const versionNotFound = (agentId: number, version: number) => new NotFoundException(`Version ${version} of agent ${agentId} not found`);

/** Agent versions (contract section 19): publish, list, read, restore, and which version a new conversation runs. */
@Injectable()
export class AgentVersionsService {
  constructor(
    private readonly versions: AgentVersionsRepository,
    private readonly agents: AgentsService,
    private readonly database: Database,
  ) {}

  async publish(accountId: number, agentId: number, description: string): Promise<AgentVersionRow> {
    const row = await this.database.transaction((sql) => this.versions.publish(accountId, agentId, description, sql));
    return row ?? Promise.reject(agentNotFound(agentId));
  }

  async list(accountId: number, agentId: number, limit: number, before: number | undefined): Promise<AgentVersionRow[]> {
    return (await this.versions.list(accountId, agentId, limit, before)) ?? Promise.reject(agentNotFound(agentId));
  }

  async get(accountId: number, agentId: number, version: number): Promise<AgentVersionRow> {
    const row = await this.versions.get(accountId, agentId, version);
    if (row) return row;
    await this.agents.get(accountId, agentId); // a missing agent is named as such
    throw versionNotFound(agentId, version);
  }

  /**
   * Copies the version's settings back onto the agent (its current settings; publishedVersion is unchanged: publish
   * again to make them what conversations run). Knowledge bases and tools deleted since are left out.
   */
  async restore(accountId: number, agentId: number, version: number): Promise<AgentRow> {
    const { settings } = await this.get(accountId, agentId, version);
    return this.agents.replaceSettings(accountId, agentId, settings);
  }

  /**
   * The version a new conversation runs: none (its current settings) for a test, or while the agent has never been
   * published; otherwise the latest.
   */
  async forConversation(accountId: number, agentId: number, isTest: boolean): Promise<StartingVersion | undefined> {
    return isTest ? undefined : this.versions.latest(accountId, agentId);
  }
}

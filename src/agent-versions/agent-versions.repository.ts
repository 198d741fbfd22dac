import { Injectable } from '@nestjs/common';
import { AgentRow, answeringAgentJson } from '../agents/agents.repository';
import { Database, Sql } from '../database/database';
import { AccountQuery } from '../database/query.decorator';

/** The settings a version holds: the agent's, as they were when it was published. */
export type AgentSettings = Pick<
  AgentRow,
  'name' | 'description' | 'model' | 'voice' | 'language' | 'systemPrompt' | 'knowledgeBaseIds' | 'toolIds'
>;

export interface AgentVersionRow {
  version: number;
  description: string;
  createdAt: Date;
  settings: AgentSettings;
}

/** What a conversation takes of the version it runs when it starts. */
export interface StartingVersion {
  version: number;
  name: string;
  language: string;
}

const COLUMNS = `version, description, created_at AS "createdAt",
  json_build_object('name', name, 'description', agent_description, 'model', model, 'voice', voice, 'language', language,
                    'systemPrompt', system_prompt, 'knowledgeBaseIds', knowledge_base_ids, 'toolIds', tool_ids) AS settings`;

/** Of a version `v`'s ids, those still of the account (a knowledge base or tool deleted since is left out). */
const STILL = (table: string, column: string) =>
  `array(SELECT t.id FROM ${table} t WHERE t.account_id = v.account_id AND t.id = ANY(v.${column}) ORDER BY t.id)`;

/**
 * SQL of a JSON value: what answers a conversation (an AnsweringAgent), or null once its agent was deleted. With
 * `version` (an SQL expression) null, the agent's current settings; otherwise that version's (which goes with its
 * agent: versions cascade). The account id always takes part in the lookup.
 */
export function answeringVersionJson(accountId: string, agentId: string, version: string): string {
  return `CASE WHEN ${version} IS NULL THEN ${answeringAgentJson(accountId, agentId)} ELSE
          (SELECT json_build_object('model', v.model, 'language', v.language, 'systemPrompt', v.system_prompt,
                                    'knowledgeBaseIds', ${STILL('knowledge_bases', 'knowledge_base_ids')}, 'toolIds', ${STILL('tools', 'tool_ids')})
             FROM agent_versions v WHERE v.account_id = ${accountId} AND v.agent_id = ${agentId} AND v.version = ${version}) END`;
}

/** Every query of agent_versions. Each method takes the account id first and puts it in the WHERE. */
@Injectable()
export class AgentVersionsRepository {
  constructor(private readonly db: Database) {}

  /**
   * Publishes the agent's settings as its next version, in `sql`'s transaction: the UPDATE numbers it and locks the
   * agent until the commit (so concurrent publishes, and changes of the agent, wait: no two get the same number), then
   * the INSERT, a statement of its own and so a snapshot taken after that lock, copies what the agent is now.
   * Undefined when the account has no such agent.
   */
  @AccountQuery([1, 2, 'Friendlier greeting'])
  async publish(accountId: number, agentId: number, description: string, sql: Sql = this.db): Promise<AgentVersionRow | undefined> {
    const [next] = await sql.query<{ version: number | null }>(
      `UPDATE agents SET published_version = coalesce(published_version, 0) + 1 WHERE account_id = $1 AND id = $2 RETURNING published_version AS version`,
      [accountId, agentId],
    );
    if (!next) return undefined;
    const [row] = await sql.query<AgentVersionRow>(
      `INSERT INTO agent_versions (account_id, agent_id, version, description, name, agent_description, model, voice, language, system_prompt,
                                   knowledge_base_ids, tool_ids)
       SELECT $1, $2, $3, $4, agents.name, agents.description, agents.model, agents.voice, agents.language, agents.system_prompt,
              array(SELECT l.knowledge_base_id FROM agent_knowledge_bases l WHERE l.account_id = $1 AND l.agent_id = $2 ORDER BY l.knowledge_base_id),
              array(SELECT l.tool_id FROM agent_tools l WHERE l.account_id = $1 AND l.agent_id = $2 ORDER BY l.tool_id)
         FROM agents WHERE agents.account_id = $1 AND agents.id = $2
       RETURNING ${COLUMNS}`,
      [accountId, agentId, next.version, description],
    );
    return row;
  }

  /** The agent's versions, newest first, older than `before` when given; undefined when the account has no such agent. */
  @AccountQuery({ name: 'first page', params: [1, 2, 50, undefined] }, { name: 'next page', params: [1, 2, 50, 7] })
  async list(accountId: number, agentId: number, limit: number, before: number | undefined): Promise<AgentVersionRow[] | undefined> {
    const rows = await this.db.query<AgentVersionRow | { version: null }>(
      `SELECT v.* FROM agents a
         LEFT JOIN LATERAL (
           SELECT ${COLUMNS} FROM agent_versions v
            WHERE v.account_id = a.account_id AND v.agent_id = a.id AND ($4::integer IS NULL OR v.version < $4)
            ORDER BY v.version DESC LIMIT $3
         ) v ON true
        WHERE a.account_id = $1 AND a.id = $2`,
      [accountId, agentId, limit, before ?? null],
    );
    if (rows.length === 0) return undefined;
    return rows.filter((row): row is AgentVersionRow => row.version !== null);
  }

  @AccountQuery([1, 2, 3])
  async get(accountId: number, agentId: number, version: number): Promise<AgentVersionRow | undefined> {
    const [row] = await this.db.query<AgentVersionRow>(
      `SELECT ${COLUMNS} FROM agent_versions WHERE account_id = $1 AND agent_id = $2 AND version = $3`,
      [accountId, agentId, version],
    );
    return row;
  }

  /** The agent's latest version (undefined when it has none): what a new conversation that is not a test runs. */
  @AccountQuery([1, 2])
  async latest(accountId: number, agentId: number, sql: Sql = this.db): Promise<StartingVersion | undefined> {
    const [row] = await sql.query<StartingVersion>(
      `SELECT version, name, language FROM agent_versions WHERE account_id = $1 AND agent_id = $2 ORDER BY version DESC LIMIT 1`,
      [accountId, agentId],
    );
    return row;
  }
}

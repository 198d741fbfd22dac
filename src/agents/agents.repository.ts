import { Injectable } from '@nestjs/common';
import { Database, Sql } from '../database/database';
import { AccountQuery } from '../database/query.decorator';

/** An agent as the API shows it (no account id: a row is scoped by the query that read it). */
export interface AgentRow {
  id: number;
  name: string;
  description: string;
  model: string;
  voice: string;
  language: string;
  systemPrompt: string;
  /** Its knowledge bases' ids, ascending. */
  knowledgeBaseIds: number[];
  /** Its tools' ids, ascending. */
  toolIds: number[];
  /** The latest version published (src/agent-versions); null until the first. */
  publishedVersion: number | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The fields a client sets; every one is present on create (defaults applied), any subset on update. */
export type AgentFields = Pick<AgentRow, 'name' | 'description' | 'model' | 'voice' | 'language' | 'systemPrompt'>;

const AGENT_COLUMNS = `id, name, description, model, voice, language, system_prompt AS "systemPrompt", published_version AS "publishedVersion", created_at AS "createdAt", updated_at AS "updatedAt"`;
/** An agent's knowledge bases, ascending, through the primary key of agent_knowledge_bases (account, agent, knowledge base). */
const KNOWLEDGE_BASE_ID_ARRAY = `array(SELECT l.knowledge_base_id FROM agent_knowledge_bases l WHERE l.account_id = agents.account_id AND l.agent_id = agents.id ORDER BY l.knowledge_base_id)`;
const KNOWLEDGE_BASE_IDS = `${KNOWLEDGE_BASE_ID_ARRAY} AS "knowledgeBaseIds"`;
/** An agent's tools, ascending, through the primary key of agent_tools (account, agent, tool). */
const TOOL_ID_ARRAY = `array(SELECT l.tool_id FROM agent_tools l WHERE l.account_id = agents.account_id AND l.agent_id = agents.id ORDER BY l.tool_id)`;
const COLUMNS = `${AGENT_COLUMNS}, ${KNOWLEDGE_BASE_IDS}, ${TOOL_ID_ARRAY} AS "toolIds"`;

/** What answering a visitor needs of an agent. */
export type AnsweringAgent = Pick<AgentRow, 'model' | 'language' | 'systemPrompt' | 'knowledgeBaseIds' | 'toolIds'>;

/**
 * SQL of a JSON value: the agent `agentId` of account `accountId` as an AnsweringAgent, or null when there is
 * none. Both are SQL expressions of the statement it goes into (for instance columns of the row that names the
 * agent), so that a statement of another module reads its agent along, in the same round trip, with this
 * module's columns; the account id always takes part in the lookup.
 */
export function answeringAgentJson(accountId: string, agentId: string): string {
  return `(SELECT json_build_object('model', agents.model, 'language', agents.language, 'systemPrompt', agents.system_prompt,
                                   'knowledgeBaseIds', ${KNOWLEDGE_BASE_ID_ARRAY}, 'toolIds', ${TOOL_ID_ARRAY})
             FROM agents WHERE agents.account_id = ${accountId} AND agents.id = ${agentId})`;
}

const EXAMPLE_FIELDS: AgentFields = {
  name: 'Reception',
  description: '',
  model: 'gpt-4.1',
  voice: 'shubh',
  language: 'hi-IN',
  systemPrompt: '',
};

/** Every query of the agents table. Each method takes the account id first and puts it in the WHERE. */
@Injectable()
export class AgentsRepository {
  constructor(private readonly db: Database) {}

  @AccountQuery([1])
  list(accountId: number): Promise<AgentRow[]> {
    return this.db.query<AgentRow>(`SELECT ${COLUMNS} FROM agents WHERE account_id = $1 ORDER BY id`, [accountId]);
  }

  @AccountQuery([1, 2])
  async get(accountId: number, id: number): Promise<AgentRow | undefined> {
    const [agent] = await this.db.query<AgentRow>(`SELECT ${COLUMNS} FROM agents WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return agent;
  }

  /** A new agent has no knowledge bases or tools yet (the service links them, in the same transaction). */
  @AccountQuery([1, EXAMPLE_FIELDS])
  async insert(accountId: number, fields: AgentFields, sql: Sql = this.db): Promise<AgentRow> {
    const [agent] = await sql.query<AgentRow>(
      `INSERT INTO agents (account_id, name, description, model, voice, language, system_prompt)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${AGENT_COLUMNS}, '{}'::int[] AS "knowledgeBaseIds", '{}'::int[] AS "toolIds"`,
      [accountId, fields.name, fields.description, fields.model, fields.voice, fields.language, fields.systemPrompt],
    );
    return agent;
  }

  /** Changes the fields given (the others keep their values: every column is NOT NULL, so null means "not given"). */
  @AccountQuery([1, 2, { name: 'Reception (night)' }])
  async update(accountId: number, id: number, fields: Partial<AgentFields>, sql: Sql = this.db): Promise<AgentRow | undefined> {
    const [agent] = await sql.query<AgentRow>(
      `UPDATE agents SET name = coalesce($3, name), description = coalesce($4, description), model = coalesce($5, model),
              voice = coalesce($6, voice), language = coalesce($7, language), system_prompt = coalesce($8, system_prompt), updated_at = now()
        WHERE account_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [accountId, id, fields.name, fields.description, fields.model, fields.voice, fields.language, fields.systemPrompt].map(
        (value) => value ?? null,
      ),
    );
    return agent;
  }

  /**
   * Makes these (distinct) knowledge bases the agent's, replacing those it had; the ids linked, ascending. Only
   * knowledge bases of the account are linked: the caller compares, and refuses the others. The foreign keys
   * (which include the account) lock each linked knowledge base until the transaction ends, so a concurrent
   * delete of one either waits and then takes the link with it, or came first and fails this statement (23503).
   */
  @AccountQuery([1, 2, [3, 4]])
  async replaceKnowledgeBases(accountId: number, agentId: number, knowledgeBaseIds: number[], sql: Sql = this.db): Promise<number[]> {
    await sql.query(`DELETE FROM agent_knowledge_bases WHERE account_id = $1 AND agent_id = $2`, [accountId, agentId]);
    const linked = await sql.query<{ id: number }>(
      `INSERT INTO agent_knowledge_bases (account_id, agent_id, knowledge_base_id)
       SELECT $1, $2, kb.id FROM knowledge_bases kb WHERE kb.account_id = $1 AND kb.id = ANY($3::int[])
       RETURNING knowledge_base_id AS id`,
      [accountId, agentId, knowledgeBaseIds],
    );
    return linked.map(({ id }) => id).sort((a, b) => a - b);
  }

  /**
   * Makes these (distinct) tools the agent's, replacing those it had; the ids linked, ascending. Only tools of the
   * account are linked (the caller refuses the others), and the foreign keys lock them as replaceKnowledgeBases's do.
   */
  @AccountQuery([1, 2, [3, 4]])
  async replaceTools(accountId: number, agentId: number, toolIds: number[], sql: Sql = this.db): Promise<number[]> {
    await sql.query(`DELETE FROM agent_tools WHERE account_id = $1 AND agent_id = $2`, [accountId, agentId]);
    const linked = await sql.query<{ id: number }>(
      `INSERT INTO agent_tools (account_id, agent_id, tool_id)
       SELECT $1, $2, tool.id FROM tools tool WHERE tool.account_id = $1 AND tool.id = ANY($3::int[])
       RETURNING tool_id AS id`,
      [accountId, agentId, toolIds],
    );
    return linked.map(({ id }) => id).sort((a, b) => a - b);
  }

  /** Whether the agent existed. Widget sites that named it are left without an agent (ON DELETE SET NULL). */
  @AccountQuery([1, 2])
  async delete(accountId: number, id: number): Promise<boolean> {
    const deleted = await this.db.query(`DELETE FROM agents WHERE account_id = $1 AND id = $2 RETURNING id`, [accountId, id]);
    return deleted.length > 0;
  }
}

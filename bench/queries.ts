/**
 * The SQL of the benchmark's scenarios, as the service sends it (same tables, columns, filters, order and
 * indexes): used by the baseline server to answer, and by the runner for EXPLAIN ANALYZE.
 */
import { hasWordJoiningMark, nameSearchKey, nameSearchKeySql } from '../src/calls/name-search-key';

/** A bad query parameter value (the baseline answers 400). */
export class QueryParamError extends Error {}

export const AUTH_SQL = `SELECT account.id AS id, account.name AS name, account.is_platform AS "isPlatform"
  FROM api_keys key INNER JOIN accounts account ON account.id = key.account_id
  WHERE key.key_hash = $1 AND key.revoked_at IS NULL`;

const LIST_COLUMNS = `id, name, phone, email, status, call_status, sentiment, channel, call_type, website, agent_name, agent_id,
  call_date, duration_seconds, reply_language, feedback, extracted_data, recording_key`;
/** Exactly the expression of the search index (IDX_calls_account_search). */
const PHONE_DIGITS_SQL = `regexp_replace(phone, '[^0-9]', '', 'g')`;
const PHONE_LIKE_SEARCH = /^[0-9+\-().\/\s]*[0-9][0-9+\-().\/\s]*$/;
const escapeLike = (value: string) => value.replace(/[\\%_]/g, (character) => `\\${character}`);

export const GET_CALL_SQL = `SELECT ${LIST_COLUMNS}, account_id, transcript, is_test FROM calls WHERE account_id = $1 AND id = $2 LIMIT 1`;
const AGENT_FIELDS = 'id, account_id, name, description, model, voice, language, system_prompt, created_at, updated_at';
/** The agent's knowledge bases, ascending (as AgentsRepository reads them). */
const KNOWLEDGE_BASE_IDS = `array(SELECT l.knowledge_base_id FROM agent_knowledge_bases l WHERE l.account_id = agents.account_id AND l.agent_id = agents.id ORDER BY l.knowledge_base_id) AS knowledge_base_ids`;
export const AGENT_COLUMNS = `${AGENT_FIELDS}, ${KNOWLEDGE_BASE_IDS}`;
export const LIST_AGENTS_SQL = `SELECT ${AGENT_COLUMNS} FROM agents WHERE account_id = $1 ORDER BY id ASC`;
export const INSERT_AGENT_SQL = `INSERT INTO agents (account_id, name, description, model, voice, language, system_prompt)
  VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${AGENT_FIELDS}, '{}'::int[] AS knowledge_base_ids`;

export interface SqlQuery {
  text: string;
  values: unknown[];
}

function intParam(query: URLSearchParams, name: string, fallback: number | undefined, min: number, max: number): number | undefined {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  const value = /^-?\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(value) || value < min || value > max) throw new QueryParamError(`${name} must be an integer between ${min} and ${max}`);
  return value;
}

/** GET /calls: the list query with the service's filters (they combine), newest first, never a test call. */
export function listCallsQuery(accountId: number, query: URLSearchParams): SqlQuery {
  const values: unknown[] = [accountId];
  const where = ['account_id = $1', 'NOT is_test'];
  const param = (value: unknown) => `$${values.push(value)}`;
  const search = (query.get('search') ?? '').trim();
  if (search) {
    if (search.length > 200) throw new QueryParamError('search must be shorter than or equal to 200 characters');
    const like = `%${escapeLike(search)}%`;
    const pattern = param(like);
    if (hasWordJoiningMark(like)) {
      where.push(`${nameSearchKeySql('name')} ILIKE ${param(nameSearchKey(like))} AND name ILIKE ${pattern}`);
    } else {
      const conditions = [`name ILIKE ${pattern}`, `phone ILIKE ${pattern}`];
      const digits = PHONE_LIKE_SEARCH.test(search) ? search.replace(/[^0-9]/g, '') : '';
      if (digits) conditions.push(`${PHONE_DIGITS_SQL} LIKE ${param(`%${digits}%`)}`);
      where.push(`(${conditions.join(' OR ')})`);
    }
  }
  const status = (query.get('status') ?? '').trim();
  if (status) where.push(`lower(status) = lower(${param(status)})`);
  const callStatus = (query.get('callStatus') ?? '').trim();
  if (callStatus) where.push(`lower(call_status) = lower(${param(callStatus)})`);
  const agentId = intParam(query, 'agentId', undefined, 1, 2_147_483_647);
  if (agentId !== undefined) where.push(`agent_id = ${param(agentId)}`);
  const days = intParam(query, 'days', 0, 0, 3650)!;
  if (days > 0) where.push(`call_date >= now() - make_interval(hours => ${param(days * 24)})`);
  const limit = intParam(query, 'limit', 200, 1, 1000)!;
  return {
    text: `SELECT ${LIST_COLUMNS} FROM calls WHERE ${where.join(' AND ')} ORDER BY call_date DESC, id DESC LIMIT ${limit}`,
    values,
  };
}

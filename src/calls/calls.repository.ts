import { Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { Database, Sql } from '../database/database';
import { AccountQuery } from '../database/query.decorator';
import { CallLatency, EndedReason, TranscriptTurn } from './call.entity';
import { AccountExportRunningException } from './calls-export';
import { ListCursor } from './list-cursor';
import { hasWordJoiningMark, nameSearchKey, nameSearchKeySql } from './name-search-key';
import { digitsOf, isPhoneLikeSearch } from './phone';

/** A call as `GET /calls` lists it. */
export interface CallRow {
  id: string;
  name: string;
  phone: string;
  email: string;
  status: string;
  callStatus: string;
  sentiment: string;
  channel: string;
  callType: string;
  website: string;
  /** The agent's name when the call was recorded. */
  agent: string;
  agentId: number | null;
  callDate: Date;
  durationSeconds: number;
  replyLanguage: string;
  hasRecording: boolean;
  feedback: unknown;
  extractedData: Record<string, unknown>;
}

/** A call as the export reads it: a list row whose JSON values are JSON text (`feedback` "null" is SQL NULL). */
export interface ExportRow extends Omit<CallRow, 'feedback' | 'extractedData'> {
  feedback: string | null;
  extractedData: string;
}

/** A call as `GET /calls/{callId}` shows it. */
export interface CallDetailRow extends CallRow {
  /** The agent version that answered; null when none. */
  agentVersion: number | null;
  transcript: TranscriptTurn[];
  /** How it ended; "" when not known. */
  endedReason: EndedReason | '';
  /** Its turns' latency, stored as the call was made; null when it was not spoken. */
  latency: CallLatency | null;
}

/** What a new call is made of (every field has its value: the service applies the defaults). */
export interface NewCall extends Omit<CallDetailRow, 'id' | 'hasRecording'> {
  isTest: boolean;
  /** The id to give the call (a conversation's id); the database generates one when absent. */
  id?: string;
}

/** What a call's analysis sets. */
export interface CallAnalysisFields {
  sentiment: string;
  status: string;
  summary: string;
}

/** The filters of `GET /calls`; absent ones are not in the SQL at all. */
export interface CallFilters {
  search?: string;
  status?: string;
  callStatus?: string;
  agentId?: number;
  /** Only calls within the last `days` × 24 hours, up to now. */
  days?: number;
}

const COLUMNS_BEFORE_JSON = `id, name, phone, email, status, call_status AS "callStatus", sentiment, channel, call_type AS "callType", website,
  agent_name AS agent, agent_id AS "agentId", call_date AS "callDate", duration_seconds AS "durationSeconds",
  reply_language AS "replyLanguage", recording_key IS NOT NULL AS "hasRecording"`;
const LIST_COLUMNS = `${COLUMNS_BEFORE_JSON}, feedback, extracted_data AS "extractedData"`;
/** The export's: the JSON values as their JSON text, written out as they are (never parsed and serialised again). */
const EXPORT_COLUMNS = `${COLUMNS_BEFORE_JSON}, feedback::text AS feedback, extracted_data::text AS "extractedData"`;
const DETAIL_COLUMNS = `${LIST_COLUMNS}, transcript, ended_reason AS "endedReason", agent_version AS "agentVersion", latency`;

/**
 * The digits of the phone, exactly as written in the search index (IDX_calls_account_search): the planner
 * uses the index only for this very expression.
 */
const PHONE_DIGITS_SQL = `regexp_replace(phone, '[^0-9]', '', 'g')`;

/** `%`, `_` and `\` match themselves in a LIKE pattern (backslash is PostgreSQL's default escape). */
export const escapeLike = (value: string) => value.replace(/[\\%_]/g, (character) => `\\${character}`);

/** The WHERE of the list and the export for these filters, its values bound through `bind`. */
function callsWhere(filters: CallFilters, bind: (value: unknown) => string): string {
  const conditions = ['account_id = $1', 'NOT is_test'];
  if (filters.search) {
    const pattern = bind(`%${escapeLike(filters.search)}%`);
    if (hasWordJoiningMark(filters.search)) {
      // Around an Indic virama or nukta: pre-select through the name's search key (src/calls/name-search-key.ts).
      // The name only: a phone holds phone characters, never such a mark.
      conditions.push(
        `${nameSearchKeySql('name')} ILIKE ${bind(nameSearchKey(`%${escapeLike(filters.search)}%`))} AND name ILIKE ${pattern}`,
      );
    } else {
      const matches = [`name ILIKE ${pattern}`, `phone ILIKE ${pattern}`];
      if (isPhoneLikeSearch(filters.search)) matches.push(`${PHONE_DIGITS_SQL} LIKE ${bind(`%${digitsOf(filters.search)}%`)}`);
      conditions.push(`(${matches.join(' OR ')})`);
    }
  }
  if (filters.status) conditions.push(`lower(status) = lower(${bind(filters.status)})`);
  if (filters.callStatus) conditions.push(`lower(call_status) = lower(${bind(filters.callStatus)})`);
  if (filters.agentId !== undefined) conditions.push(`agent_id = ${bind(filters.agentId)}`);
  if (filters.days) conditions.push(`call_date >= now() - make_interval(hours => ${bind(filters.days * 24)})`, 'call_date <= now()');
  return conditions.join(' AND ');
}

/** The account's calls in the list's order for these filters: `SELECT … ORDER BY`, with its values so far. */
function callsQuery(
  accountId: number,
  filters: CallFilters,
  before?: ListCursor,
  columns = LIST_COLUMNS,
  gate?: string,
): { sql: string; values: unknown[]; bind: (value: unknown) => string } {
  const values: unknown[] = [accountId];
  const bind = (value: unknown) => `$${values.push(value)}`;
  let where = callsWhere(filters, bind);
  if (gate) where = `${gate} AND ${where}`;
  // Keyset paging: the rows after the cursor's in the list's order, read from the same indexes as page one.
  if (before) where += ` AND (call_date, id) < (${bind(before.callDate)}, ${bind(before.id)})`;
  return { sql: `SELECT ${columns} FROM calls WHERE ${where} ORDER BY call_date DESC, id DESC`, values, bind };
}

/**
 * The list query for these filters (one shape per combination of filters present), after `before` when given,
 * and its values. Exported for the benchmarks (bench/calls-explain.ts, bench/integrators.ts), which run EXPLAIN
 * on exactly what the API runs.
 */
export function listCallsStatement(accountId: number, filters: CallFilters, limit: number, before?: ListCursor): [string, unknown[]] {
  const { sql, values, bind } = callsQuery(accountId, filters, before);
  return [`${sql} LIMIT ${bind(limit)}`, values];
}

/**
 * One export per account at a time, whichever instance runs it: the export's query first takes a lock of the
 * account, a transaction-level advisory lock (allowed in its READ ONLY transaction), which its own transaction
 * on its own connection (Database.stream) holds until the cursor is closed, however the export ends (done, the
 * client gone, EXPORT_MAX_SECONDS, the server ending the session). It waits 500 ms at most (`lock_timeout`, set
 * first, for the rest of that transaction), since the previous export commits just after its last byte reached
 * the client, which may already be asking for the next: held longer by another export, the first FETCH, before any
 * byte is sent, fails with lock_not_available. The CTE is a one-time filter of the scan, so it is run once.
 */
const EXPORT_LOCK = `WITH export_lock AS MATERIALIZED (
  SELECT pg_advisory_xact_lock(hashtext('calls-export'), $1) FROM (SELECT set_config('lock_timeout', '500', true)) AS short_wait
)`;
/** SQLSTATE lock_not_available: EXPORT_LOCK is held by another export of the account. */
const LOCK_NOT_AVAILABLE = '55P03';

/** The export's query: every call the filters match, in the list's order, under the account's EXPORT_LOCK. */
export function exportCallsStatement(accountId: number, filters: CallFilters): [string, unknown[]] {
  const { sql, values } = callsQuery(accountId, filters, undefined, EXPORT_COLUMNS, 'EXISTS (SELECT FROM export_lock)');
  return [`${EXPORT_LOCK} ${sql}`, values];
}

/**
 * Rows per FETCH of the export's cursor. Small: a batch alive across two young-generation collections is
 * promoted to V8's old generation, which then swells with garbage until a full collection (docs/experiments.md);
 * a round trip per 100 rows costs little.
 */
const EXPORT_BATCH_ROWS = 100;

const EXAMPLE_CALL: NewCall = {
  name: 'Priya Sharma',
  phone: '+91-98765-43210',
  email: '',
  status: 'new',
  callStatus: 'completed',
  sentiment: '',
  channel: 'phone',
  callType: 'inbound',
  website: '',
  agent: 'Reception',
  agentId: 2,
  callDate: new Date('2026-11-22T09:15:02.123Z'),
  durationSeconds: 95,
  replyLanguage: 'hi-IN',
  feedback: null,
  extractedData: {},
  transcript: [
    { speaker: 'user', text: 'नमस्ते', startSeconds: 0.42 },
    {
      speaker: 'agent',
      text: 'नमस्ते, कैसे मदद करूँ?',
      startSeconds: 2.18,
      latencyMs: { endOfTurn: 700, transcription: 310.2, firstToken: 240.6, firstAudio: 120.4, total: 1_412.5 },
    },
  ],
  endedReason: 'caller-hung-up',
  agentVersion: 3,
  latency: { turns: 1, p50Ms: 1_412.5, p90Ms: 1_412.5, maxMs: 1_412.5 },
  isTest: false,
};
const EXAMPLE_ID = '5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90';
const EXAMPLE_CURSOR: ListCursor = { callDate: EXAMPLE_CALL.callDate, id: EXAMPLE_ID };

/** Every query of the calls table but its recording key (src/recordings owns that). Account id first, in every WHERE. */
@Injectable()
export class CallsRepository {
  constructor(private readonly db: Database) {}

  @AccountQuery(
    { name: 'no filter', params: [1, {}, 200] },
    {
      name: 'every filter, a name search',
      params: [1, { search: 'priya', status: 'qualified', callStatus: 'completed', agentId: 2, days: 7 }, 50],
    },
    { name: 'a phone search', params: [1, { search: '98765 43' }, 200] },
    { name: 'a search around a virama', params: [1, { search: 'श्र' }, 200] },
    { name: 'a next page', params: [1, {}, 200, EXAMPLE_CURSOR] },
    { name: 'a next page, by agent', params: [1, { agentId: 2 }, 1000, EXAMPLE_CURSOR] },
  )
  list(accountId: number, filters: CallFilters, limit: number, before?: ListCursor): Promise<CallRow[]> {
    const [sql, values] = listCallsStatement(accountId, filters, limit, before);
    return this.db.query<CallRow>(sql, values);
  }

  /**
   * Every call the filters match, in the list's order, as a stream of batches of ExportRow (Database.stream);
   * AccountExportRunningException while another export of the account runs (EXPORT_LOCK).
   */
  @AccountQuery(
    { name: 'no filter', params: [1, {}] },
    { name: 'every filter', params: [1, { search: 'priya', status: 'qualified', callStatus: 'completed', agentId: 2, days: 7 }] },
  )
  streamAll(accountId: number, filters: CallFilters): Promise<Readable> {
    const [sql, values] = exportCallsStatement(accountId, filters);
    return this.db.stream(sql, values, EXPORT_BATCH_ROWS).catch((error: unknown) => {
      throw (error as { code?: unknown } | null)?.code === LOCK_NOT_AVAILABLE ? new AccountExportRunningException() : error;
    });
  }

  /** One call; inside `sql`'s transaction when given (a webhook event's payload, read where the change was made). */
  @AccountQuery([1, EXAMPLE_ID])
  async get(accountId: number, id: string, sql: Sql = this.db): Promise<CallDetailRow | undefined> {
    const [call] = await sql.query<CallDetailRow>(`SELECT ${DETAIL_COLUMNS} FROM calls WHERE account_id = $1 AND id = $2`, [accountId, id]);
    return call;
  }

  /** Records a call; inside `sql`'s transaction when given (a conversation's end). */
  @AccountQuery([1, EXAMPLE_CALL])
  async insert(accountId: number, call: NewCall, sql: Sql = this.db): Promise<CallDetailRow> {
    const [row] = await sql.query<CallDetailRow>(
      `INSERT INTO calls (account_id, id, name, phone, email, status, call_status, sentiment, channel, call_type, website, agent_name, agent_id,
                          call_date, duration_seconds, reply_language, feedback, extracted_data, transcript, is_test, ended_reason, agent_version, latency)
       VALUES ($1, coalesce($2, gen_random_uuid()), $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
       RETURNING ${DETAIL_COLUMNS}`,
      [
        accountId,
        call.id ?? null,
        call.name,
        call.phone,
        call.email,
        call.status,
        call.callStatus,
        call.sentiment,
        call.channel,
        call.callType,
        call.website,
        call.agent,
        call.agentId,
        call.callDate,
        call.durationSeconds,
        call.replyLanguage,
        // jsonb parameters as JSON text: the driver would send a JS array as a PostgreSQL array. No feedback is SQL NULL.
        call.feedback === null ? null : JSON.stringify(call.feedback),
        JSON.stringify(call.extractedData),
        JSON.stringify(call.transcript),
        call.isTest,
        call.endedReason,
        call.agentVersion,
        call.latency === null ? null : JSON.stringify(call.latency),
      ],
    );
    return row;
  }

  /** Deletes the call (its transcript is a column of it), inside `sql`'s transaction; undefined when there was none. */
  @AccountQuery([1, EXAMPLE_ID])
  async delete(accountId: number, id: string, sql: Sql = this.db): Promise<{ id: string; isTest: boolean } | undefined> {
    const [row] = await sql.query<{ id: string; isTest: boolean }>(
      `DELETE FROM calls WHERE account_id = $1 AND id = $2 RETURNING id, is_test AS "isTest"`,
      [accountId, id],
    );
    return row;
  }

  /** A call's analysis (a conversation's, after it ended): sentiment, status and `extractedData.summary`. */
  @AccountQuery([1, EXAMPLE_ID, { sentiment: 'positive', status: 'interested', summary: 'Asked about Sunday delivery; wants a callback.' }])
  async updateAnalysis(accountId: number, id: string, analysis: CallAnalysisFields): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE calls SET sentiment = $3, status = $4, extracted_data = extracted_data || jsonb_build_object('summary', $5::text)
        WHERE account_id = $1 AND id = $2 RETURNING id`,
      [accountId, id, analysis.sentiment, analysis.status, analysis.summary],
    );
    return rows.length > 0;
  }
}

import { Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository, SelectQueryBuilder } from 'typeorm';
import { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { AgentsService } from '../agents/agents.service';
import { UuidPipe } from '../common/id.pipes';
import { AppConfig } from '../config/config';
import { PreparedSelect } from '../database/prepared-select';
import { selectProperties } from '../database/select-properties';
import { InjectConfig } from '../config/config.module';
import { Call } from './call.entity';
import { creditsUsed } from './credits';
import { hasWordJoiningMark, nameSearchKey, nameSearchKeySql } from './name-search-key';
import { CallDetail } from './dto/call-response.dto';
import { CreateCallDto } from './dto/create-call.dto';
import { ListCallsQuery } from './dto/list-calls-query.dto';

/** Anything that is not a UUID names no call: the same 404 as an unknown id. */
const callIdPipe = new UuidPipe('Call');

/** The columns of a list item: everything but the transcript (which can be large) and the test flag. */
const LIST_COLUMNS = [
  'id',
  'name',
  'phone',
  'email',
  'status',
  'callStatus',
  'sentiment',
  'channel',
  'callType',
  'website',
  'agentName',
  'agentId',
  'callDate',
  'durationSeconds',
  'replyLanguage',
  'feedback',
  'extractedData',
  'recordingKey',
] as const satisfies readonly (keyof Call)[];

/** Every column: what `GET /calls/{callId}` and the recordings module need. */
const ALL_COLUMNS = [...LIST_COLUMNS, 'accountId', 'transcript', 'isTest'] as const satisfies readonly (keyof Call)[];

/**
 * The digits of the phone, exactly as written in the search index (IDX_calls_account_search): the planner
 * uses the index only for this very expression.
 */
const PHONE_DIGITS_SQL = `regexp_replace(call.phone, '[^0-9]', '', 'g')`;

/** A search made only of digits and phone punctuation, with at least one digit. */
const PHONE_LIKE_SEARCH = /^[0-9+\-().\/\s]*[0-9][0-9+\-().\/\s]*$/;

/** `%`, `_` and `\` match themselves in a LIKE pattern (backslash is PostgreSQL's default escape). */
export const escapeLike = (value: string) => value.replace(/[\\%_]/g, (character) => `\\${character}`);

/** The bound values of a list query; a filter the request does not use is undefined (and absent from the SQL). */
interface ListParameters extends Record<string, unknown> {
  accountId: number;
  /** `search` as a LIKE pattern, matched against the name and the phone as written. */
  pattern?: string;
  /**
   * For a search with an Indic virama or nukta: the pattern's name search key, which pre-selects through
   * IDX_calls_account_name_key before the name itself is matched (src/calls/name-search-key.ts).
   */
  keyPattern?: string;
  /** The digits of a phone-like `search`, matched against the phone's digits. */
  digitsPattern?: string;
  status?: string;
  callStatus?: string;
  agentId?: number;
  /** `days` in hours: from now − hours up to now (never a call dated in the future). */
  hours?: number;
  limit: number;
}

function listParameters(accountId: number, query: ListCallsQuery): ListParameters {
  const digits = query.search && PHONE_LIKE_SEARCH.test(query.search) ? query.search.replace(/[^0-9]/g, '') : '';
  const pattern = query.search ? `%${escapeLike(query.search)}%` : undefined;
  return {
    accountId,
    pattern,
    keyPattern: pattern !== undefined && hasWordJoiningMark(pattern) ? nameSearchKey(pattern) : undefined,
    digitsPattern: digits ? `%${digits}%` : undefined,
    status: query.status || undefined,
    callStatus: query.callStatus || undefined,
    agentId: query.agentId,
    hours: query.days > 0 ? query.days * 24 : undefined,
    limit: query.limit,
  };
}

/** Every method takes the caller's account first and puts it in the WHERE of every read and write. */
@Injectable()
export class CallsService {
  private readonly listQueries = new Map<string, PreparedSelect<ListParameters, Call>>();
  private readonly getQuery = new PreparedSelect<{ accountId: number; id: string }, Call>(['accountId', 'id'], (parameters) =>
    selectProperties(this.calls.createQueryBuilder('call'), ALL_COLUMNS).where('call.account_id = :accountId AND call.id = :id', parameters),
  );

  constructor(
    @InjectRepository(Call) private readonly calls: Repository<Call>,
    private readonly agents: AgentsService,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  /**
   * One call of the account (with its transcript and recording key); 404 if absent or another account's.
   * Plain rows here and in `list`, not hydrated entities: hydration was the service's largest cost on these
   * routes (BENCHMARKS.md, "Performance").
   */
  async get(accountId: number, callId: string): Promise<Call> {
    const call = await this.getQuery.one({ accountId, id: callIdPipe.transform(callId) });
    if (!call) throw new NotFoundException(`Call ${callId} not found`);
    return call;
  }

  /** The call with the credits it used. */
  async getDetail(accountId: number, callId: string): Promise<CallDetail> {
    return this.withCredits(await this.get(accountId, callId));
  }

  /** Records or clears the storage key of the call's audio (the recordings module owns the key). */
  async setRecordingKey(accountId: number, callId: string, key: string | null): Promise<void> {
    const { affected } = await this.calls.update({ accountId, id: callIdPipe.transform(callId) }, { recordingKey: key });
    if (!affected) throw new NotFoundException(`Call ${callId} not found`);
  }

  /**
   * (Added for the recordings module.) Sets the recording key and returns the one it replaced, atomically:
   * the row is locked while the old key is read, so two concurrent uploads or an upload racing a delete each
   * get the key they really replaced, and no object is orphaned. 404 if the call is absent or another account's.
   */
  async swapRecordingKey(accountId: number, callId: string, key: string | null): Promise<string | null> {
    const rows: { previous: string | null }[] = await this.calls.query(
      // In a WITH, so that the driver returns the rows as for a SELECT.
      `WITH swapped AS (
         UPDATE calls AS c SET recording_key = $3
           FROM (SELECT account_id, id, recording_key FROM calls WHERE account_id = $1 AND id = $2 FOR UPDATE) AS old
          WHERE c.account_id = old.account_id AND c.id = old.id
          RETURNING old.recording_key AS previous
       )
       SELECT previous FROM swapped`,
      [accountId, callIdPipe.transform(callId), key],
    );
    if (rows.length === 0) throw new NotFoundException(`Call ${callId} not found`);
    return rows[0].previous;
  }

  async create(accountId: number, dto: CreateCallDto): Promise<CallDetail> {
    const agent = dto.agentId == null ? null : await this.agents.getReferenced(accountId, dto.agentId);
    const { agentId: _agentId, callDate, replyLanguage, ...fields } = dto;
    const values = {
      ...fields,
      accountId,
      agentId: agent?.id ?? null,
      agentName: agent?.name ?? '',
      replyLanguage: replyLanguage ?? agent?.language ?? '',
      callDate: callDate ?? new Date(),
    } as QueryDeepPartialEntity<Call>;
    const { identifiers } = await this.calls.insert(values);
    return this.getDetail(accountId, identifiers[0].id as string);
  }

  /** The account's calls, newest first, never a test call; the filters combine. */
  list(accountId: number, query: ListCallsQuery): Promise<Call[]> {
    const parameters = listParameters(accountId, query);
    return this.listQueryFor(parameters).many(parameters);
  }

  /** The SQL and values `list` runs for this request (bench/calls-explain.ts runs EXPLAIN ANALYZE on them). */
  listStatement(accountId: number, query: ListCallsQuery): [string, unknown[]] {
    const parameters = listParameters(accountId, query);
    return this.listQueryFor(parameters).statement(parameters);
  }

  /** One prepared query per combination of filters (at most 2⁶ of them), built on first use. */
  private listQueryFor(parameters: ListParameters): PreparedSelect<ListParameters, Call> {
    const present = Object.keys(parameters).filter((name) => parameters[name] !== undefined) as (keyof ListParameters & string)[];
    const shape = present.join(',');
    let prepared = this.listQueries.get(shape);
    if (!prepared) {
      prepared = new PreparedSelect<ListParameters, Call>(present, (slots) => this.buildList(slots), { limit: 'limit' });
      this.listQueries.set(shape, prepared);
    }
    return prepared;
  }

  /** The list query for the filters present in `parameters` (their values are placeholders here). */
  private buildList(parameters: ListParameters): SelectQueryBuilder<Call> {
    const builder = selectProperties(this.calls.createQueryBuilder('call'), LIST_COLUMNS)
      .where('call.account_id = :accountId', parameters)
      .andWhere('NOT call.is_test');
    if (parameters.keyPattern !== undefined) {
      // The name only: a phone holds digits, spaces and punctuation (PHONE_PATTERN), never such a mark.
      builder.andWhere(`${nameSearchKeySql('call.name')} ILIKE :keyPattern AND call.name ILIKE :pattern`, parameters);
    } else if (parameters.pattern !== undefined) {
      const conditions = ['call.name ILIKE :pattern', 'call.phone ILIKE :pattern'];
      if (parameters.digitsPattern !== undefined) conditions.push(`${PHONE_DIGITS_SQL} LIKE :digitsPattern`);
      builder.andWhere(`(${conditions.join(' OR ')})`, parameters);
    }
    if (parameters.status !== undefined) builder.andWhere('lower(call.status) = lower(:status)', parameters);
    if (parameters.callStatus !== undefined) builder.andWhere('lower(call.call_status) = lower(:callStatus)', parameters);
    if (parameters.agentId !== undefined) builder.andWhere('call.agent_id = :agentId', parameters);
    if (parameters.hours !== undefined) builder.andWhere('call.call_date BETWEEN now() - make_interval(hours => :hours) AND now()', parameters);
    return builder.orderBy('call.call_date', 'DESC').addOrderBy('call.id', 'DESC');
  }

  private withCredits(call: Call): CallDetail {
    return { call, creditsUsed: creditsUsed(call.durationSeconds, this.config.creditsPerMinute) };
  }
}

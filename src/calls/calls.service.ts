import { forwardRef, Inject, Injectable, ServiceUnavailableException } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { AgentsService } from '../agents/agents.service';
import { isUuid } from '../common/id.pipes';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { AgentRow } from '../agents/agents.repository';
import { Database, Sql, TransactionSql } from '../database/database';
import { RecordingsService } from '../recordings/recordings.service';
import { WebhookEvents } from '../webhooks/webhook-events.service';
import { callNotFound } from './call-not-found';
import { CallAnalysisFields, CallDetailRow, CallFilters, CallRow, CallsRepository, NewCall } from './calls.repository';
import { CallDetail, toCallResponse, withCredits } from './dto/call-response.dto';
import { CreateCallDto } from './dto/create-call.dto';
import { CallFiltersQuery, ListCallsQuery } from './dto/list-calls-query.dto';
import { decodeListCursor, encodeListCursor } from './list-cursor';

/** More exports at once than this process runs (each holds a database connection while it runs): a 503 to retry. */
export class ExportsBusyException extends ServiceUnavailableException {
  readonly retryAfterSeconds = 5;

  constructor() {
    super('Too many exports are running; try again shortly');
  }
}

/**
 * Erases what another module keeps of a call (a conversation's transcript, say), in the erasure's transaction:
 * registered with `CallsService.alsoErase` by a module that depends on this one.
 */
export type CallEraser = (sql: TransactionSql, accountId: number, callId: string) => Promise<void>;

/** A page of the list, and the cursor of the next one when the page is full. */
export interface CallsPage {
  calls: CallRow[];
  next?: string;
}

/** The calls' rules (defaults, the agent reference, credits); the SQL is CallsRepository's. */
@Injectable()
export class CallsService {
  /** Exports running in this process; at most as many as streams can hold a client (Database.maxStreams). */
  private exportsRunning = 0;
  /** What else holds a call's data (see CallEraser). */
  private readonly erasers: CallEraser[] = [];

  constructor(
    private readonly calls: CallsRepository,
    private readonly agents: AgentsService,
    // The two services need each other: typed by what is used, so that neither class is read while the other loads.
    @Inject(forwardRef(() => RecordingsService)) private readonly recordings: Pick<RecordingsService, 'deleteForErasure'>,
    private readonly database: Database,
    private readonly webhookEvents: WebhookEvents,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  /**
   * A page of the account's calls, newest first, never a test call; the filters combine. After `before`'s
   * call when given (keyset paging: no row repeated or skipped however many calls arrive meanwhile). A full
   * page comes with the cursor of its last call, to ask for the next one.
   */
  async list(accountId: number, query: ListCallsQuery): Promise<CallsPage> {
    // The query was validated (IsListCursor): a cursor that does not decode never gets here.
    const before = query.before ? decodeListCursor(query.before) : undefined;
    const calls = await this.calls.list(accountId, filtersOf(query), query.limit, before);
    const last = calls.at(-1);
    return { calls, next: last && calls.length === query.limit ? encodeListCursor(last) : undefined };
  }

  /**
   * Every call the filters match, newest first, as a stream of batches of rows (see CallsRepository.streamAll).
   * Each running export holds a client of the streams' pool: beyond its size, a 503 (ExportsBusyException) rather
   * than a wait for one.
   */
  async streamAll(accountId: number, query: CallFiltersQuery): Promise<Readable> {
    if (this.exportsRunning >= this.database.maxStreams) throw new ExportsBusyException();
    this.exportsRunning++;
    try {
      const batches = await this.calls.streamAll(accountId, filtersOf(query));
      batches.once('close', () => this.exportsRunning--);
      return batches;
    } catch (error) {
      this.exportsRunning--;
      throw error;
    }
  }

  /**
   * Erases a call: its recording's object first, then the row (with its transcript) and what other modules keep
   * of it (`alsoErase`), in one transaction, so that a storage failure (503) leaves the call and its audio as
   * they were; the `call.deleted` event commits with the deletion (the webhooks' outbox). 404 if absent or
   * another account's.
   */
  async erase(accountId: number, callId: string): Promise<void> {
    if (!isUuid(callId)) throw callNotFound(callId);
    const id = callId.toLowerCase();
    await this.database.transaction(async (sql) => {
      if (!(await this.recordings.deleteForErasure(accountId, id, sql))) throw callNotFound(callId);
      const deleted = await this.calls.delete(accountId, id, sql);
      if (!deleted) return;
      for (const eraser of this.erasers) await eraser(sql, accountId, id);
      await this.webhookEvents.callDeleted(sql, accountId, deleted);
    });
  }

  /** Has `eraser` run whenever a call is erased (see CallEraser). */
  alsoErase(eraser: CallEraser): void {
    this.erasers.push(eraser);
  }

  /** One call of the account with the credits it used; 404 if absent, another account's, or not even a UUID. */
  async getDetail(accountId: number, callId: string): Promise<CallDetail> {
    const call = isUuid(callId) ? await this.calls.get(accountId, callId.toLowerCase()) : undefined;
    if (!call) throw callNotFound(callId);
    return withCredits(call, this.config.creditsPerMinute);
  }

  /** `POST /calls`: the call, with its agent's name and language, recorded as `record` does. */
  async create(accountId: number, dto: CreateCallDto): Promise<CallDetail> {
    const agent = dto.agentId == null ? null : await this.agents.getReferenced(accountId, dto.agentId);
    return this.database.transaction((sql) => this.record(accountId, this.newCall(dto, agent), sql));
  }

  /**
   * Records a call (posted, or a conversation's when it ends) and, unless it is a test call, its `call.created`
   * event, in the caller's transaction: they commit together or not at all (the webhooks' outbox).
   */
  async record(accountId: number, call: NewCall, sql: TransactionSql): Promise<CallDetail> {
    const detail = withCredits(await this.calls.insert(accountId, call, sql), this.config.creditsPerMinute);
    if (!call.isTest) await this.webhookEvents.record(sql, accountId, { type: 'call.created', data: toCallResponse(detail) });
    return detail;
  }

  /** One call of the account, or undefined (no 404): for a module that acts on a call it made, such as a conversation's analysis. */
  find(accountId: number, callId: string, sql?: Sql): Promise<CallDetailRow | undefined> {
    return this.calls.get(accountId, callId, sql);
  }

  /** Fills in a call's analysis (sentiment, status, summary); false when the call is no longer there. */
  updateAnalysis(accountId: number, callId: string, analysis: CallAnalysisFields): Promise<boolean> {
    return this.calls.updateAnalysis(accountId, callId, analysis);
  }

  private newCall(dto: CreateCallDto, agent: AgentRow | null): NewCall {
    return {
      name: dto.name!,
      phone: dto.phone!,
      email: dto.email!,
      status: dto.status!,
      callStatus: dto.callStatus!,
      sentiment: dto.sentiment!,
      channel: dto.channel!,
      callType: dto.callType!,
      website: dto.website!,
      agent: agent?.name ?? '',
      agentId: agent?.id ?? null,
      agentVersion: null, // posted, not answered
      callDate: dto.callDate ?? new Date(),
      durationSeconds: dto.durationSeconds!,
      replyLanguage: dto.replyLanguage ?? agent?.language ?? '',
      feedback: dto.feedback ?? null,
      extractedData: dto.extractedData!,
      transcript: dto.transcript!.map(({ speaker, text }) => ({ speaker, text })),
      endedReason: dto.endedReason!,
      latency: null, // not spoken here
      isTest: dto.isTest!,
    };
  }
}

function filtersOf({ search, status, callStatus, agentId, days }: CallFiltersQuery): CallFilters {
  return { search, status, callStatus, agentId, days };
}

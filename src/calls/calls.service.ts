import { Injectable, NotFoundException } from '@nestjs/common';
import { AgentsService } from '../agents/agents.service';
import { isUuid } from '../common/id.pipes';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { Database, Sql } from '../database/database';
import { WebhookEvents } from '../webhooks/webhook-events.service';
import { AgentRow } from '../agents/agents.repository';
import { CallDetailRow, CallRow, CallsRepository, NewCall } from './calls.repository';
import { creditsUsed } from './credits';
import { CallDetail, toCallResponse } from './dto/call-response.dto';
import { CreateCallDto } from './dto/create-call.dto';
import { ListCallsQuery } from './dto/list-calls-query.dto';

export const callNotFound = (callId: string) => new NotFoundException(`Call ${callId} not found`);

/** The calls' rules (defaults, the agent reference, credits); the SQL is CallsRepository's. */
@Injectable()
export class CallsService {
  constructor(
    private readonly calls: CallsRepository,
    private readonly agents: AgentsService,
    private readonly database: Database,
    private readonly webhookEvents: WebhookEvents,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  /** The account's calls, newest first, never a test call; the filters combine. */
  list(accountId: number, query: ListCallsQuery): Promise<CallRow[]> {
    const { limit, search, status, callStatus, agentId, days } = query;
    return this.calls.list(accountId, { search, status, callStatus, agentId, days }, limit);
  }

  /** One call of the account with the credits it used; 404 if absent, another account's, or not even a UUID. */
  async getDetail(accountId: number, callId: string, sql?: Sql): Promise<CallDetail> {
    const call = isUuid(callId) ? await this.calls.get(accountId, callId.toLowerCase(), sql) : undefined;
    if (!call) throw callNotFound(callId);
    return this.withCredits(call);
  }

  /** Records the call and, unless it is a test call, its `call.created` event: in one transaction (the outbox). */
  async create(accountId: number, dto: CreateCallDto): Promise<CallDetail> {
    const agent = dto.agentId == null ? null : await this.agents.getReferenced(accountId, dto.agentId);
    return this.database.transaction(async (sql) => {
      const detail = this.withCredits(await this.calls.insert(accountId, this.newCall(dto, agent), sql));
      if (!dto.isTest) await this.webhookEvents.record(sql, accountId, { type: 'call.created', data: toCallResponse(detail) });
      return detail;
    });
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
      callDate: dto.callDate ?? new Date(),
      durationSeconds: dto.durationSeconds!,
      replyLanguage: dto.replyLanguage ?? agent?.language ?? '',
      feedback: dto.feedback ?? null,
      extractedData: dto.extractedData!,
      transcript: dto.transcript!.map(({ speaker, text }) => ({ speaker, text })),
      isTest: dto.isTest!,
    };
  }

  private withCredits(call: CallDetailRow): CallDetail {
    return { call, creditsUsed: creditsUsed(call.durationSeconds, this.config.creditsPerMinute) };
  }
}

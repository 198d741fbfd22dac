import { Injectable, OnModuleInit } from '@nestjs/common';
import { EndedReason } from '../calls/call.entity';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { Database, TransactionSql } from '../database/database';
import { Jobs } from '../jobs/jobs.service';
import { ConversationCalls, UnansweredOutcome } from './conversation-calls.service';
import { ConversationRef, JOB_END_IDLE, JOB_END_IF_IDLE } from './conversation-jobs';
import { IdleRule, idleRule } from './conversation-rules';
import { ConversationChannel } from './conversation.entity';
import { ConversationAccess, ConversationsRepository } from './conversations.repository';

const IDLE_BATCH = 200;

/** A conversation that has just ended (its end committed), and how. */
export interface ConversationEnded {
  accountId: number;
  id: string;
  channel: ConversationChannel;
  reason: EndedReason;
  /** Where a phone call is moved (`transferred`: the agent's transfer_call). */
  transferTo?: string;
}

/**
 * Ending conversations: explicitly, when their agent is deleted, or when idle (each conversation's own idle job,
 * and a sweep behind them), exactly once whichever instance tries first, with the call recorded in the same
 * transaction (ConversationCalls).
 */
@Injectable()
export class ConversationEnds implements OnModuleInit {
  private readonly idleRule: IdleRule;
  private readonly endedListeners: ((ended: ConversationEnded) => void)[] = [];

  constructor(
    private readonly conversations: ConversationsRepository,
    private readonly db: Database,
    private readonly jobs: Jobs,
    private readonly calls: ConversationCalls,
    @InjectConfig() config: AppConfig,
  ) {
    this.idleRule = idleRule(config);
  }

  onModuleInit(): void {
    // Each conversation has one job waiting for its idle time (policy `short`: one per conversation), which ends
    // it, or, when messages moved that time, waits again; the sweep is the safety net (once a minute, one instance).
    this.jobs.define<ConversationRef>({
      name: JOB_END_IF_IDLE,
      policy: 'short',
      handler: ({ accountId, conversationId }) => this.endOrWaitAgain(accountId, conversationId),
      concurrency: 4,
      expireInSeconds: 60,
    });
    this.jobs.define({
      name: JOB_END_IDLE,
      cron: '* * * * *',
      handler: () => this.endIdleConversations(),
      retryLimit: 0,
      expireInSeconds: 300,
    });
  }

  /**
   * Ends the conversation now, at the request of whoever holds its token (nothing to do if it already has): its
   * visitor's, or on the phone, where the caller hangs up by hanging up, the agent's (the call is then hung up).
   */
  async end(access: ConversationAccess): Promise<void> {
    if (access.status === 'active') {
      await this.finish(access.accountId, access.id, undefined, { reason: 'visitor-ended', onThePhone: 'agent-hung-up' });
    }
  }

  /**
   * Tells `listener` of every conversation this instance ends, once its end is committed (the telephony module hangs
   * up a phone call's carrier call). Called synchronously: a listener does its own work, and its own errors, apart.
   */
  afterEnd(listener: (ended: ConversationEnded) => void): void {
    this.endedListeners.push(listener);
  }

  /**
   * Ends the conversation now, whatever its state (false when it had already ended); `reason` is its call's
   * `endedReason` (by default the visitor's end, as the voice socket's `end` message).
   */
  endNow(accountId: number, id: string, reason: EndedReason = 'visitor-ended'): Promise<boolean> {
    return this.finish(accountId, id, undefined, { reason });
  }

  /**
   * Ends a phone conversation whose agent moved the call to `number` (`transferred`); its listeners hand the call over.
   * False when it had already ended.
   */
  transfer(accountId: number, id: string, number: string): Promise<boolean> {
    return this.finish(accountId, id, undefined, { reason: 'transferred', transferTo: number });
  }

  /** Ends the conversation if it is idle; false when it is not (or had already ended). */
  endIfIdle(accountId: number, id: string): Promise<boolean> {
    return this.finish(accountId, id, this.idleRule, { reason: 'idle-timeout' });
  }

  /**
   * Ends a phone conversation whose call was never answered (busy, no answer, failed): it becomes a call with that
   * status and no transcript, whatever was said. False when it had already ended.
   */
  endUnanswered(accountId: number, id: string, outcome: UnansweredOutcome): Promise<boolean> {
    return this.finish(accountId, id, undefined, { reason: outcome, unanswered: outcome });
  }

  /**
   * Schedules the idle check of a conversation that started at `startedAt`, in `sql`'s transaction, and returns
   * when it is due (when the conversation ends if no message comes before).
   */
  async scheduleIdleCheck(accountId: number, id: string, startedAt: Date, sql: TransactionSql): Promise<Date> {
    const idleAt = new Date(startedAt.getTime() + this.idleRule.idleSeconds * 1000);
    await this.waitForIdleTime(accountId, id, idleAt, sql);
    return idleAt;
  }

  /**
   * The idle sweep (once a minute, on one instance), a safety net behind each conversation's own idle check:
   * ends every conversation idle for CONVERSATION_IDLE_SECONDS.
   */
  async endIdleConversations(): Promise<void> {
    for (;;) {
      const idle = await this.conversations.idleConversations(this.idleRule.idleSeconds, this.idleRule.staleReplySeconds, IDLE_BATCH);
      let ended = 0;
      for (const { accountId, id } of idle) if (await this.endIfIdle(accountId, id)) ended++;
      if (idle.length < IDLE_BATCH || ended === 0) break;
    }
  }

  /**
   * Ends an active conversation (only if idle, with `idle`), and in the same transaction records its call (with
   * `end.reason` as its endedReason) when the visitor said something, or as `end.unanswered` (a phone call never
   * answered): the conditional UPDATE makes this happen once, whichever instance tries first.
   */
  private async finish(
    accountId: number,
    id: string,
    idle: IdleRule | undefined,
    end: { reason: EndedReason; unanswered?: UnansweredOutcome; onThePhone?: EndedReason; transferTo?: string },
  ): Promise<boolean> {
    const ended = await this.db.transaction(async (sql) => {
      const conversation = await this.conversations.end(accountId, id, idle, sql);
      if (!conversation) return undefined;
      const reason = conversation.channel === 'phone' ? (end.onThePhone ?? end.reason) : end.reason;
      const messages = await this.conversations.messages(accountId, id, sql);
      await this.calls.record(accountId, id, conversation, messages, { reason, unanswered: end.unanswered }, sql);
      return { accountId, id, channel: conversation.channel, reason, transferTo: end.transferTo };
    });
    if (!ended) return false;
    for (const listener of this.endedListeners) listener(ended);
    return true;
  }

  /** Schedules the conversation's idle check for `idleAt` (inside `sql`'s transaction when given). */
  private waitForIdleTime(accountId: number, id: string, idleAt: Date, sql?: TransactionSql): Promise<void> {
    return this.jobs.send<ConversationRef>(
      JOB_END_IF_IDLE,
      { accountId, conversationId: id },
      { sql, startAfter: idleAt, singletonKey: id },
    );
  }

  /**
   * The conversation's idle time has come: it ends if it is idle; otherwise messages moved its idle time, and
   * the check waits again until then (a failure retries the job, so the chain does not break).
   */
  private async endOrWaitAgain(accountId: number, id: string): Promise<void> {
    if (await this.endIfIdle(accountId, id)) return;
    const next = await this.conversations.nextIdleCheck(accountId, id, this.idleRule.idleSeconds);
    if (next) await this.waitForIdleTime(accountId, id, next);
  }
}

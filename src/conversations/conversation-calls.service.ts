import { Injectable, OnModuleInit } from '@nestjs/common';
import { callLatency } from '../calls/call-latency';
import { EndedReason, TranscriptTurn } from '../calls/call.entity';
import { NewCall } from '../calls/calls.repository';
import { CallsService } from '../calls/calls.service';
import { TransactionSql } from '../database/database';
import { ConversationAnalysis } from './conversation-analysis.service';
import { ConversationsRepository, EndedConversation, MessageRow } from './conversations.repository';

/** A phone call that was never answered (contract section 17): its outcome, `canceled` counted as `no-answer`. */
export type UnansweredOutcome = 'busy' | 'no-answer' | 'failed';

/**
 * The call of an ended conversation in which the visitor said something (contract section 10), and how it ended. A
 * spoken one (a message placed in its recording) has its turns' latency summed up (contract section 19).
 */
export function callOfConversation(id: string, conversation: EndedConversation, messages: MessageRow[], endedReason: EndedReason): NewCall {
  const lastMessageAt = messages.at(-1)?.at ?? conversation.startedAt;
  const transcript = messages.map(transcriptTurn);
  const spoken = messages.some((message) => message.startSeconds !== null);
  return {
    id,
    name: conversation.name,
    phone: conversation.phone,
    email: '',
    status: 'new',
    callStatus: 'completed',
    sentiment: '',
    channel: conversation.channel,
    callType: conversation.callType,
    website: conversation.website,
    agent: conversation.agentName,
    agentId: conversation.agentId,
    agentVersion: conversation.agentVersion,
    callDate: conversation.startedAt,
    durationSeconds: durationOf(conversation, lastMessageAt),
    replyLanguage: conversation.replyLanguage,
    feedback: null,
    extractedData: {},
    transcript,
    endedReason,
    latency: spoken ? callLatency(transcript) : null,
    isTest: conversation.isTest,
  };
}

/** A phone call lasts from its answer to its hang-up; any other conversation from its start to its last message. */
function durationOf(conversation: EndedConversation, lastMessageAt: Date): number {
  const [from, to] = conversation.answeredAt ? [conversation.answeredAt, conversation.endedAt] : [conversation.startedAt, lastMessageAt];
  return Math.max(0, Math.floor((to.getTime() - from.getTime()) / 1000));
}

function transcriptTurn({ speaker, text, startSeconds, latencyMs }: MessageRow): TranscriptTurn {
  const turn: TranscriptTurn = { speaker, text };
  if (startSeconds !== null) turn.startSeconds = startSeconds;
  if (latencyMs !== null) turn.latencyMs = latencyMs;
  return turn;
}

/** The call of a phone conversation whose call was never answered: no duration, nothing said (not even a greeting). */
export function unansweredCall(id: string, conversation: EndedConversation, outcome: UnansweredOutcome): NewCall {
  return { ...callOfConversation(id, conversation, [], outcome), callStatus: outcome };
}

/** Work done in another module's transaction on a conversation (`id`) of the account. */
type ConversationHook = (sql: TransactionSql, accountId: number, id: string) => Promise<void>;

/**
 * A conversation and its call share an id: an ended conversation in which the visitor said something becomes a
 * call (through CallsService, with its analysis queued), and erasing the call erases the conversation too.
 */
@Injectable()
export class ConversationCalls implements OnModuleInit {
  private readonly endedHooks: ConversationHook[] = [];
  private readonly erasedHooks: ConversationHook[] = [];

  constructor(
    private readonly calls: CallsService,
    private readonly conversations: ConversationsRepository,
    private readonly analysis: ConversationAnalysis,
  ) {}

  onModuleInit(): void {
    // A conversation's id is its call's: erasing the call erases the conversation's transcript too.
    this.calls.alsoErase(async (sql, accountId, callId) => {
      for (const hook of this.erasedHooks) await hook(sql, accountId, callId);
      await this.conversations.deleteForErasure(accountId, callId, sql);
    });
  }

  /** Work another module does in the transaction that ends a conversation, after its call (if any) is recorded. */
  whenEnded(hook: ConversationHook): void {
    this.endedHooks.push(hook);
  }

  /** Work another module does in the erasure's transaction while the conversation's rows still exist (they cascade). */
  whenErased(hook: ConversationHook): void {
    this.erasedHooks.push(hook);
  }

  /**
   * Records the call of the conversation that just ended, in `sql`'s transaction: when the visitor said something,
   * or (`unanswered`) a phone call that was never answered, which becomes a call whatever was said.
   */
  async record(
    accountId: number,
    id: string,
    ended: EndedConversation,
    messages: MessageRow[],
    end: { reason: EndedReason; unanswered?: UnansweredOutcome },
    sql: TransactionSql,
  ): Promise<void> {
    if (end.unanswered) {
      await this.calls.record(accountId, unansweredCall(id, ended, end.unanswered), sql);
    } else if (messages.some((message) => message.speaker === 'user')) {
      await this.calls.record(accountId, callOfConversation(id, ended, messages, end.reason), sql);
      await this.analysis.queue(accountId, id, sql);
    }
    for (const hook of this.endedHooks) await hook(sql, accountId, id);
  }
}

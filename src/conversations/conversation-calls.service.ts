import { Injectable, OnModuleInit } from '@nestjs/common';
import { NewCall } from '../calls/calls.repository';
import { CallsService } from '../calls/calls.service';
import { TransactionSql } from '../database/database';
import { ConversationAnalysis } from './conversation-analysis.service';
import { ConversationsRepository, EndedConversation, MessageRow } from './conversations.repository';

/** The call of an ended conversation in which the visitor said something (contract section 10). */
export function callOfConversation(id: string, conversation: EndedConversation, messages: MessageRow[]): NewCall {
  const lastMessageAt = messages[messages.length - 1].at;
  return {
    id,
    name: conversation.name,
    phone: conversation.phone,
    email: '',
    status: 'new',
    callStatus: 'completed',
    sentiment: '',
    channel: conversation.channel,
    callType: 'web',
    website: conversation.website,
    agent: conversation.agentName,
    agentId: conversation.agentId,
    callDate: conversation.startedAt,
    durationSeconds: Math.max(0, Math.floor((lastMessageAt.getTime() - conversation.startedAt.getTime()) / 1000)),
    replyLanguage: conversation.replyLanguage,
    feedback: null,
    extractedData: {},
    transcript: messages.map(({ speaker, text, startSeconds }) =>
      startSeconds === null ? { speaker, text } : { speaker, text, startSeconds },
    ),
    isTest: conversation.isTest,
  };
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

  /** Records the call of the conversation that just ended, in `sql`'s transaction, when the visitor said something. */
  async record(accountId: number, id: string, ended: EndedConversation, messages: MessageRow[], sql: TransactionSql): Promise<void> {
    if (messages.some((message) => message.speaker === 'user')) {
      await this.calls.record(accountId, callOfConversation(id, ended, messages), sql);
      await this.analysis.queue(accountId, id, sql);
    }
    for (const hook of this.endedHooks) await hook(sql, accountId, id);
  }
}

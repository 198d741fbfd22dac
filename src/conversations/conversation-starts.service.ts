import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AgentVersionsService } from '../agent-versions/agent-versions.service';
import { AgentRow } from '../agents/agents.repository';
import { AgentsService } from '../agents/agents.service';
import { Database, TransactionSql } from '../database/database';
import { MAX_HOST_LENGTH } from '../widget-sites/allowed-domain';
import { ConversationEnds } from './conversation-ends.service';
import { ConversationLimits } from './conversation-limits';
import { generateConversationToken, hashConversationToken } from './conversation-token';
import { ConversationCallType, ConversationChannel } from './conversation.entity';
import { ConversationsRepository } from './conversations.repository';

/** Who is talking, as given when the conversation starts (validated, "" when not given). */
export interface Visitor {
  name: string;
  phone: string;
}

export interface StartedConversation {
  conversationId: string;
  token: string;
  greeting: string;
  expiresAt: Date;
}

/** The widget site a session is started on (read by the widget module from its site key). */
export interface SessionSite {
  id: number;
  accountId: number;
  agent: Pick<AgentRow, 'id' | 'name' | 'language'>;
  allowedDomain: string;
  greeting: string;
}

/** A phone call's conversation (src/telephony): its direction, the other party, and the agent's first sentence. */
export interface PhoneCallStart {
  callType: Extract<ConversationCallType, 'inbound' | 'outbound'>;
  /** The other party's number ("" when the carrier gave none that is a phone number). */
  phone: string;
  name: string;
  /** Spoken first once the call is connected; "" for none (the agent waits for the other party). */
  greeting: string;
}

/** Where a conversation starts: an API client (the dashboard), a widget site's page, or a phone call. */
interface ConversationOrigin {
  channel: ConversationChannel;
  callType: ConversationCallType;
  website: string;
  siteId: number | null;
  allowedDomain: string | null;
  isTest: boolean;
}

/** The host of a page's Origin header ("" when there is none, it is not a URL, or its name is longer than any host's). */
function originHost(origin: string | undefined): string {
  try {
    const url = origin ? new URL(origin) : undefined;
    return url && url.hostname.length <= MAX_HOST_LENGTH ? url.host : '';
  } catch {
    return '';
  }
}

/**
 * Starting conversations: with one of the account's agents (API key), or with a widget site's agent (a visitor
 * on an allowed page), within the caps of ConversationLimits; each with its bearer token, its greeting and its
 * idle check scheduled, in one transaction.
 */
@Injectable()
export class ConversationStarts {
  constructor(
    private readonly conversations: ConversationsRepository,
    private readonly db: Database,
    private readonly agents: AgentsService,
    private readonly caps: ConversationLimits,
    private readonly ends: ConversationEnds,
    private readonly versions: AgentVersionsService,
  ) {}

  /** The dashboard's test-call button (or any API client): a conversation with one of the account's agents. */
  async startWithAgent(accountId: number, agentId: number, visitor: Visitor, isTest: boolean): Promise<StartedConversation> {
    const agent = await this.agents.get(accountId, agentId);
    const api = { channel: 'api' as const, callType: 'web' as const, website: '', siteId: null, allowedDomain: null, isTest };
    return this.start(accountId, agent, visitor, api, '');
  }

  /**
   * A widget visitor's conversation with the site's agent, from a page the site allows (checked by the caller),
   * and `address` (the client's, as a rate-limit key) under its budget of starts.
   */
  async startOnSite(site: SessionSite, origin: string | undefined, visitor: Visitor, address: string): Promise<StartedConversation> {
    await this.caps.countStart(address);
    const web = {
      channel: 'web-widget' as const,
      callType: 'web' as const,
      website: originHost(origin),
      siteId: site.id,
      allowedDomain: site.allowedDomain,
      isTest: false,
    };
    return this.start(site.accountId, site.agent, visitor, web, site.greeting);
  }

  /**
   * A phone call's conversation with one of the account's agents (channel `phone`), within the account's caps and
   * PHONE_MAX_ACTIVE_CALLS (a ConversationLimitException, 429); `alongside` writes what the telephony module keeps of
   * the call, in the same transaction.
   */
  startPhoneCall(
    accountId: number,
    agent: Pick<AgentRow, 'id' | 'name' | 'language'>,
    call: PhoneCallStart,
    alongside: (sql: TransactionSql, conversationId: string) => Promise<void>,
  ): Promise<StartedConversation> {
    const phone = { channel: 'phone' as const, callType: call.callType, website: '', siteId: null, allowedDomain: null, isTest: false };
    return this.start(accountId, agent, { name: call.name, phone: call.phone }, phone, call.greeting, alongside);
  }

  /**
   * A new bearer token for an active conversation whose token nobody holds (a phone call's: its media stream takes
   * it, to speak the conversation as any client does); the previous one opens nothing from now on. Undefined when the
   * conversation is not active.
   */
  async handOver(accountId: number, id: string): Promise<string | undefined> {
    const token = generateConversationToken();
    return (await this.conversations.replaceToken(accountId, id, hashConversationToken(token))) ? token : undefined;
  }

  /** Removes a phone call's conversation that the carrier then refused to place: as if it had never started. */
  async abandon(accountId: number, id: string): Promise<void> {
    await this.conversations.deleteForErasure(accountId, id);
  }

  /** A new conversation, unless its site or account already has as many active as it may (429). */
  private async start(
    accountId: number,
    agent: Pick<AgentRow, 'id' | 'name' | 'language'>,
    visitor: Visitor,
    origin: ConversationOrigin,
    greeting: string,
    alongside?: (sql: TransactionSql, conversationId: string) => Promise<void>,
  ): Promise<StartedConversation> {
    const id = randomUUID();
    const token = generateConversationToken();
    // Pinned now: publishing while it runs changes nothing for it (it keeps this version to its end).
    const version = await this.versions.forConversation(accountId, agent.id, origin.isTest);
    const conversation = {
      id,
      tokenHash: hashConversationToken(token),
      agentId: agent.id,
      agentName: version?.name ?? agent.name,
      replyLanguage: version?.language ?? agent.language,
      agentVersion: version?.version ?? null,
      ...visitor,
      ...origin,
    };
    const expiresAt = await this.db.transaction(async (sql) => {
      const active = await this.conversations.countActive(accountId, origin.siteId, sql);
      this.caps.refuseBeyondActive(active, origin.siteId, origin.channel === 'phone');
      const { startedAt } = await this.conversations.insert(accountId, conversation, sql);
      if (greeting) await this.conversations.insertGreeting(accountId, id, greeting, sql);
      await alongside?.(sql, id);
      return this.ends.scheduleIdleCheck(accountId, id, startedAt, sql);
    });
    return { conversationId: id, token, greeting, expiresAt };
  }
}

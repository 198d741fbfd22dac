import { ConflictException, GoneException, HttpException, Injectable, NotFoundException } from '@nestjs/common';
import { AnsweringAgent } from '../agents/agents.repository';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { Turn } from './answering/answerer';
import { ConversationEnds } from './conversation-ends.service';
import { ConversationLimits } from './conversation-limits';
import { HISTORY_TURNS, MAX_VISITOR_MESSAGES, turnLimits } from './conversation-rules';
import { bearerToken, hashConversationToken } from './conversation-token';
import { ConversationStatus } from './conversation.entity';
import {
  ConversationAccess,
  ConversationCorsRule,
  ConversationParty,
  ConversationsRepository,
  MessageRow,
  TurnLimits,
} from './conversations.repository';

/** A visitor's message accepted for a reply (ConversationReplies produces it). */
export interface AcceptedTurn {
  access: ConversationAccess;
  seq: number;
  text: string;
  agent: AnsweringAgent;
  /** Who the conversation is with (a tool's request tells the customer's system). */
  party: ConversationParty;
  /** The conversation so far, at most HISTORY_TURNS, ending with this message. */
  turns: Turn[];
  /** Gives back the reply slot the turn holds (ConversationLimits), once its reply is recorded. */
  release: () => void;
}

export interface ConversationView {
  conversationId: string;
  status: ConversationStatus;
  messages: MessageRow[];
}

const notFound = (id: string) => new NotFoundException(`Conversation ${id.slice(0, 64)} not found`);
const gone = () => new GoneException('This conversation has ended');
const busy = () =>
  new ConflictException('A reply to the previous message is still being produced; send the next message once it has arrived');

/**
 * A conversation's own routes, opened by its bearer token (a wrong one is a 404): accepting a visitor's message
 * (one reply at a time, at most 100 messages, under the reply caps) and reading the conversation. An idle
 * conversation met here is ended (ConversationEnds) by whichever instance notices first.
 */
@Injectable()
export class ConversationTalk {
  private readonly idleSeconds: number;
  private readonly limits: TurnLimits;

  constructor(
    private readonly conversations: ConversationsRepository,
    private readonly ends: ConversationEnds,
    private readonly caps: ConversationLimits,
    @InjectConfig() config: AppConfig,
  ) {
    this.idleSeconds = config.conversationIdleSeconds;
    this.limits = turnLimits(config);
  }

  /** The conversation the token opens; a wrong token, or one of another conversation, is a 404. */
  async authenticate(conversationId: string, authorization: string | undefined): Promise<ConversationAccess> {
    const token = bearerToken(authorization);
    const access = token ? await this.conversations.findByToken(conversationId, hashConversationToken(token), this.idleSeconds) : undefined;
    if (!access) throw notFound(conversationId);
    return access;
  }

  /** Which origins may call the conversation, for a CORS preflight; 404 for an unknown conversation. */
  async corsRule(conversationId: string): Promise<ConversationCorsRule> {
    return (await this.conversations.findCorsRule(conversationId)) ?? Promise.reject(notFound(conversationId));
  }

  /**
   * Accepts a visitor's message (recorded at once) for a reply, in one statement, once the conversation was found
   * by its token (404 for a wrong one): 410 once ended (an idle conversation is ended now, by
   * whichever instance notices first) or when its agent was deleted (the conversation ends), 409 after 100
   * visitor messages or while the previous reply is still being produced, 429 beyond the replies its account,
   * site or client `address` may have produced at once (ConversationLimits). A refused message is not recorded.
   * `opened` is called with the conversation first, even when the message is then refused. `startSeconds`: where
   * a spoken message starts in the call's recording.
   */
  async accept(
    conversationId: string,
    authorization: string | undefined,
    text: string,
    address: string,
    opened: (access: ConversationAccess) => void,
    startSeconds?: number,
  ): Promise<AcceptedTurn> {
    const token = bearerToken(authorization);
    const tokenHash = token ? hashConversationToken(token) : undefined;
    // Whose reply slots the message takes is read first: they are taken before the message is recorded, so that one
    // refused for want of them leaves no trace. An ended (or idle) conversation takes none: its message is a 410.
    const conversation = tokenHash ? await this.conversations.findByToken(conversationId, tokenHash, this.idleSeconds) : undefined;
    if (!conversation) throw notFound(conversationId);
    opened(conversation);
    const release =
      conversation.status === 'active' && !conversation.idle ? this.caps.takeReplySlot(conversation, address) : () => undefined;
    try {
      const acceptance = await this.conversations.acceptMessage(
        conversationId,
        tokenHash!,
        text,
        this.limits,
        HISTORY_TURNS - 1,
        startSeconds,
      );
      if (!acceptance) throw notFound(conversationId); // erased meanwhile
      const { seq, history, visitorMessageCount, replying, agent, channel, phone, name, ...access } = acceptance;
      if (!agent) {
        // Refused by the statement (nothing recorded): the conversation ends with what had been said.
        await this.ends.endNow(access.accountId, access.id, 'error');
        throw new GoneException('The agent of this conversation was deleted; the conversation has ended');
      }
      if (seq === null) throw await this.refusal(access, visitorMessageCount, replying);
      return { access, seq, text, agent, party: { channel, phone, name }, turns: [...history, { speaker: 'user', text }], release };
    } catch (error) {
      release();
      throw error;
    }
  }

  /**
   * The conversation so far. An idle one is ended first; when that finds nothing to end, another instance (its
   * idle job, a message) may have ended it meanwhile, or a reply is still being produced: its status is read again.
   */
  async view(access: ConversationAccess): Promise<ConversationView> {
    let status = access.status;
    if (access.idle) {
      status = (await this.ends.endIfIdle(access.accountId, access.id))
        ? 'ended'
        : ((await this.conversations.status(access.accountId, access.id)) ?? 'ended');
    }
    return { conversationId: access.id, status, messages: await this.conversations.messages(access.accountId, access.id) };
  }

  private async refusal(access: ConversationAccess, visitorMessageCount: number, replying: boolean): Promise<HttpException> {
    if (access.status === 'ended') return gone();
    if (access.idle && !replying) {
      await this.ends.endIfIdle(access.accountId, access.id);
      return gone();
    }
    if (visitorMessageCount >= MAX_VISITOR_MESSAGES) {
      return new ConflictException(`This conversation has reached its limit of ${MAX_VISITOR_MESSAGES} visitor messages`);
    }
    return busy(); // replying (or it was, a moment ago: the visitor may send again)
  }
}

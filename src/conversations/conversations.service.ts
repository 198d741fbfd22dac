import {
  BeforeApplicationShutdown,
  ConflictException,
  GoneException,
  HttpException,
  Inject,
  Injectable,
  Logger,
  NotFoundException,
  OnModuleInit,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AgentRow, AnsweringAgent } from '../agents/agents.repository';
import { AgentsService } from '../agents/agents.service';
import { CallsRepository, NewCall } from '../calls/calls.repository';
import { CallsService } from '../calls/calls.service';
import { UNSTORABLE } from '../common/storable-text';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { Database, TransactionSql } from '../database/database';
import { Jobs } from '../jobs/jobs.service';
import { MAX_HOST_LENGTH } from '../widget-sites/allowed-domain';
import { Answerer, AnswererFailure, APOLOGY, ReplyRequest, Turn } from './answering/answerer';
import { CallAnalyser } from './answering/call-analyser';
import { PassageFinder } from './answering/passages';
import { ConversationLimits } from './conversation-limits';
import { ConversationChannel, ConversationStatus } from './conversation.entity';
import { bearerToken, generateConversationToken, hashConversationToken } from './conversation-token';
import {
  ConversationAccess,
  ConversationCorsRule,
  ConversationsRepository,
  EndedConversation,
  MessageRow,
  TurnLimits,
} from './conversations.repository';

/** The contract's limit: the 101st visitor message is a 409. */
export const MAX_VISITOR_MESSAGES = 100;
/** The turns a provider sees, at most (the latest last). */
export const HISTORY_TURNS = 20;
const IDLE_BATCH = 200;
/** A reply in progress is taken as abandoned (its instance died) this long after LLM_TIMEOUT_MS. */
const STALE_REPLY_MARGIN_SECONDS = 15;

export const JOB_END_IDLE = 'conversations.end-idle';
export const JOB_END_IF_IDLE = 'conversations.end-if-idle';
export const JOB_ANALYSE = 'conversations.analyse';

interface ConversationRef {
  accountId: number;
  conversationId: string;
}

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

/** A visitor's message accepted for a reply. */
export interface AcceptedTurn {
  access: ConversationAccess;
  seq: number;
  text: string;
  agent: AnsweringAgent;
  /** The conversation so far, at most HISTORY_TURNS, ending with this message. */
  turns: Turn[];
  /** Gives back the reply slot the turn holds (ConversationLimits), once its reply is recorded. */
  release: () => void;
}

export interface ConversationView {
  status: ConversationStatus;
  messages: MessageRow[];
}

const notFound = (id: string) => new NotFoundException(`Conversation ${id.slice(0, 64)} not found`);
const gone = () => new GoneException('This conversation has ended');
const busy = () =>
  new ConflictException('A reply to the previous message is still being produced; send the next message once it has arrived');

/** The host of a page's Origin header ("" when there is none, it is not a URL, or its name is longer than any host's). */
function originHost(origin: string | undefined): string {
  try {
    const url = origin ? new URL(origin) : undefined;
    return url && url.hostname.length <= MAX_HOST_LENGTH ? url.host : '';
  } catch {
    return '';
  }
}

const UNSTORABLE_EVERYWHERE = new RegExp(UNSTORABLE.source, 'g');
/** Text PostgreSQL can store: a provider's reply may carry NUL (dropped) or an unpaired surrogate (U+FFFD). */
const storable = (text: string) => text.replace(UNSTORABLE_EVERYWHERE, (found) => (found === '\u0000' ? '' : '\uFFFD'));

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
    transcript: messages.map(({ speaker, text }) => ({ speaker, text })),
    isTest: conversation.isTest,
  };
}

/**
 * The conversations' rules: starting one, accepting a visitor's message (one reply at a time, at most 100
 * messages), producing and recording the reply (always: a failed provider gives the apology, a visitor who went
 * away still gets it recorded), and ending (explicitly or when idle, exactly once, with the call recorded in the
 * same transaction). The SQL is ConversationsRepository's; the state is all in PostgreSQL.
 */
@Injectable()
export class ConversationsService implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('Conversations');
  /** Replies being produced: shutting down waits for them (bounded by LLM_TIMEOUT_MS), so each is recorded. */
  private readonly replying = new Set<Promise<string>>();
  private readonly limits: TurnLimits;
  private readonly idleRule: Pick<TurnLimits, 'idleSeconds' | 'staleReplySeconds'>;

  constructor(
    private readonly conversations: ConversationsRepository,
    private readonly db: Database,
    private readonly agents: AgentsService,
    private readonly calls: CallsRepository,
    private readonly callsService: CallsService,
    private readonly jobs: Jobs,
    private readonly answerer: Answerer,
    private readonly passages: PassageFinder,
    @Inject(CallAnalyser) private readonly analyser: CallAnalyser | null,
    private readonly caps: ConversationLimits,
    @InjectConfig() private readonly config: AppConfig,
  ) {
    const staleReplySeconds = Math.ceil(config.llm.timeoutMs / 1000) + STALE_REPLY_MARGIN_SECONDS;
    this.limits = { maxVisitorMessages: MAX_VISITOR_MESSAGES, idleSeconds: config.conversationIdleSeconds, staleReplySeconds };
    this.idleRule = { idleSeconds: config.conversationIdleSeconds, staleReplySeconds };
  }

  onModuleInit(): void {
    // A conversation's id is its call's: erasing the call erases the conversation's transcript too.
    this.callsService.alsoErase((sql, accountId, callId) => this.conversations.deleteForErasure(accountId, callId, sql));
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
    this.jobs.define<ConversationRef>({
      name: JOB_ANALYSE,
      handler: ({ accountId, conversationId }) => this.analyse(accountId, conversationId),
      concurrency: 2,
      retryLimit: 2,
      retryDelay: 30,
      retryBackoff: true,
      expireInSeconds: Math.ceil(this.config.llm.timeoutMs / 1000) + 60,
    });
  }

  // ---- Starting ----

  /** The dashboard's test-call button (or any API client): a conversation with one of the account's agents. */
  async startWithAgent(accountId: number, agentId: number, visitor: Visitor, isTest: boolean): Promise<StartedConversation> {
    const agent = await this.agents.get(accountId, agentId);
    return this.start(accountId, agent, visitor, { channel: 'api', website: '', siteId: null, allowedDomain: null, isTest }, '');
  }

  /**
   * A widget visitor's conversation with the site's agent, from a page the site allows (checked by the caller),
   * and `address` (the client's, as a rate-limit key) under its budget of starts.
   */
  async startOnSite(site: SessionSite, origin: string | undefined, visitor: Visitor, address: string): Promise<StartedConversation> {
    await this.caps.countStart(address);
    const web = {
      channel: 'web-widget' as const,
      website: originHost(origin),
      siteId: site.id,
      allowedDomain: site.allowedDomain,
      isTest: false,
    };
    return this.start(site.accountId, site.agent, visitor, web, site.greeting);
  }

  /** A new conversation, unless its site or account already has as many active as it may (429). */
  private async start(
    accountId: number,
    agent: Pick<AgentRow, 'id' | 'name' | 'language'>,
    visitor: Visitor,
    origin: { channel: ConversationChannel; website: string; siteId: number | null; allowedDomain: string | null; isTest: boolean },
    greeting: string,
  ): Promise<StartedConversation> {
    const id = randomUUID();
    const token = generateConversationToken();
    const conversation = {
      id,
      tokenHash: hashConversationToken(token),
      agentId: agent.id,
      agentName: agent.name,
      replyLanguage: agent.language,
      ...visitor,
      ...origin,
    };
    const expiresAt = await this.db.transaction(async (sql) => {
      this.caps.refuseBeyondActive(await this.conversations.countActive(accountId, origin.siteId, sql), origin.siteId);
      const { startedAt } = await this.conversations.insert(accountId, conversation, sql);
      if (greeting) await this.conversations.insertGreeting(accountId, id, greeting, sql);
      const idleAt = new Date(startedAt.getTime() + this.config.conversationIdleSeconds * 1000);
      await this.waitForIdleTime(accountId, id, idleAt, sql);
      return idleAt;
    });
    return { conversationId: id, token, greeting, expiresAt };
  }

  // ---- The bearer routes ----

  /** The conversation the token opens; a wrong token, or one of another conversation, is a 404. */
  async authenticate(conversationId: string, authorization: string | undefined): Promise<ConversationAccess> {
    const token = bearerToken(authorization);
    const access = token
      ? await this.conversations.findByToken(conversationId, hashConversationToken(token), this.config.conversationIdleSeconds)
      : undefined;
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
   * `opened` is called with the conversation first, even when the message is then refused.
   */
  async accept(
    conversationId: string,
    authorization: string | undefined,
    text: string,
    address: string,
    opened: (access: ConversationAccess) => void,
  ): Promise<AcceptedTurn> {
    const token = bearerToken(authorization);
    const tokenHash = token ? hashConversationToken(token) : undefined;
    // Whose reply slots the message takes is read first: they are taken before the message is recorded, so that one
    // refused for want of them leaves no trace. An ended (or idle) conversation takes none: its message is a 410.
    const conversation = tokenHash
      ? await this.conversations.findByToken(conversationId, tokenHash, this.config.conversationIdleSeconds)
      : undefined;
    if (!conversation) throw notFound(conversationId);
    opened(conversation);
    const release =
      conversation.status === 'active' && !conversation.idle ? this.caps.takeReplySlot(conversation, address) : () => undefined;
    try {
      const acceptance = await this.conversations.acceptMessage(conversationId, tokenHash!, text, this.limits, HISTORY_TURNS - 1);
      if (!acceptance) throw notFound(conversationId); // erased meanwhile
      const { seq, history, visitorMessageCount, replying, agent, ...access } = acceptance;
      if (!agent) {
        // Refused by the statement (nothing recorded): the conversation ends with what had been said.
        await this.finish(access.accountId, access.id, undefined);
        throw new GoneException('The agent of this conversation was deleted; the conversation has ended');
      }
      if (seq === null) throw await this.refusal(access, visitorMessageCount, replying);
      return { access, seq, text, agent, turns: [...history, { speaker: 'user', text }], release };
    } catch (error) {
      release();
      throw error;
    }
  }

  private async refusal(access: ConversationAccess, visitorMessageCount: number, replying: boolean): Promise<HttpException> {
    if (access.status === 'ended') return gone();
    if (access.idle && !replying) {
      await this.endIfIdle(access.accountId, access.id);
      return gone();
    }
    if (visitorMessageCount >= MAX_VISITOR_MESSAGES) {
      return new ConflictException(`This conversation has reached its limit of ${MAX_VISITOR_MESSAGES} visitor messages`);
    }
    return busy(); // replying (or it was, a moment ago: the visitor may send again)
  }

  /**
   * Produces the reply to an accepted message, giving each piece to `onPiece` as it comes, and records it. The
   * reply is always produced and recorded, whatever happens to the visitor's connection; when the answerer
   * fails, the reply is the fixed apology (only the failure's kind is logged, never the provider's text).
   */
  reply(turn: AcceptedTurn, onPiece: (piece: string) => void = () => undefined): Promise<string> {
    const work = this.produceReply(turn, onPiece);
    this.replying.add(work);
    const forget = () => {
      this.replying.delete(work);
      turn.release();
    };
    work.then(forget, forget);
    return work;
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.replying]);
  }

  private async produceReply(turn: AcceptedTurn, onPiece: (piece: string) => void): Promise<string> {
    let text = '';
    try {
      for await (const piece of this.answerer.reply(await this.replyRequest(turn))) {
        text += piece;
        onPiece(piece);
      }
      if (!text.trim()) throw new AnswererFailure('empty');
      text = storable(text);
    } catch (error) {
      this.logFailure(error, 'No reply; the visitor got the apology');
      text = APOLOGY;
    }
    // Not recorded if the conversation ended meanwhile (its call was made with what had been said).
    await this.conversations.recordReply(turn.access.accountId, turn.access.id, turn.seq, text);
    return text;
  }

  private async replyRequest({ access, agent, text, turns }: AcceptedTurn): Promise<ReplyRequest> {
    // The built-in answerer replies with the best passage, whatever RAG_PASSAGES (the provider's allowance) says.
    const limit = this.analyser ? this.config.ragPassages : 1;
    const passages = limit > 0 ? await this.passages.find(access.accountId, agent, text, limit) : [];
    return { agent: { model: agent.model, systemPrompt: agent.systemPrompt, language: agent.language }, passages, turns };
  }

  /** Only the failure's kind and HTTP status (or an error's name and code): never its text, which may be the provider's. */
  private logFailure(error: unknown, message: string): void {
    if (error instanceof AnswererFailure) {
      this.logger.warn({ provider: { failure: error.kind, status: error.status } }, message);
    } else {
      const { name, code } = (error ?? {}) as { name?: unknown; code?: unknown };
      this.logger.error(
        { error: { name: typeof name === 'string' ? name : undefined, code: typeof code === 'string' ? code : undefined } },
        message,
      );
    }
  }

  /**
   * The conversation so far. An idle one is ended first; when that finds nothing to end, another instance (its
   * idle job, a message) may have ended it meanwhile, or a reply is still being produced: its status is read again.
   */
  async view(access: ConversationAccess): Promise<ConversationView> {
    let status = access.status;
    if (access.idle) {
      status = (await this.endIfIdle(access.accountId, access.id))
        ? 'ended'
        : ((await this.conversations.status(access.accountId, access.id)) ?? 'ended');
    }
    return { status, messages: await this.conversations.messages(access.accountId, access.id) };
  }

  /** Ends the conversation now (nothing to do if it already has). */
  async end(access: ConversationAccess): Promise<void> {
    if (access.status === 'active') await this.finish(access.accountId, access.id, undefined);
  }

  // ---- Ending ----

  private endIfIdle(accountId: number, id: string): Promise<boolean> {
    return this.finish(accountId, id, this.idleRule);
  }

  /**
   * Ends an active conversation (only if idle, with `idle`), and in the same transaction records its call when
   * the visitor said something: the conditional UPDATE makes this happen once, whichever instance tries first.
   */
  private finish(accountId: number, id: string, idle: typeof this.idleRule | undefined): Promise<boolean> {
    return this.db.transaction(async (sql) => {
      const ended = await this.conversations.end(accountId, id, idle, sql);
      if (!ended) return false;
      const messages = await this.conversations.messages(accountId, id, sql);
      if (messages.some((message) => message.speaker === 'user')) {
        await this.callsService.record(accountId, callOfConversation(id, ended, messages), sql);
        if (this.analyser) await this.jobs.send<ConversationRef>(JOB_ANALYSE, { accountId, conversationId: id }, { sql });
      }
      return true;
    });
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

  // ---- Analysis ----

  /** Fills the call's sentiment, status and summary from one more provider request; a failure retries, an invalid answer keeps the defaults. */
  private async analyse(accountId: number, callId: string): Promise<void> {
    const call = this.analyser && (await this.calls.get(accountId, callId));
    const agent = call && call.agentId !== null ? await this.agents.find(accountId, call.agentId) : undefined;
    if (!call || !agent) return;
    let analysis;
    try {
      analysis = await this.analyser.analyse(agent.model, call.transcript);
    } catch (error) {
      this.logFailure(error, 'The call analysis failed; it will be retried');
      // eslint-disable-next-line preserve-caught-error -- the provider's error is not passed on (it may quote the transcript)
      throw new Error('The call analysis failed; it is retried');
    }
    if (!analysis) {
      this.logger.warn("The provider's call analysis was not valid; the call keeps its defaults");
      return;
    }
    await this.calls.updateAnalysis(accountId, callId, analysis);
  }
}

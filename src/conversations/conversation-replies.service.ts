import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import type { TurnLatency } from '../calls/call.entity';
import { UNSTORABLE } from '../common/storable-text';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { ToolCalls, TurnTools } from '../tools/tool-calls';
import { Answerer, AnswererFailure, APOLOGY, ReplyRequest } from './answering/answerer';
import { BuiltInAnswerer } from './answering/builtin-answerer';
import { logProviderFailure } from './answering/failure-log';
import { PassageFinder } from './answering/passages';
import { ConversationEnds } from './conversation-ends.service';
import type { AcceptedTurn } from './conversation-talk.service';
import { ConversationsRepository } from './conversations.repository';

const UNSTORABLE_EVERYWHERE = new RegExp(UNSTORABLE.source, 'g');
/** Text PostgreSQL can store: a provider's reply may carry NUL (dropped) or an unpaired surrogate (U+FFFD). */
const storable = (text: string) => text.replace(UNSTORABLE_EVERYWHERE, (found) => (found === '\u0000' ? '' : '\uFFFD'));

/** What of a reply reached the visitor: all of it, or (a spoken reply interrupted) what had been said until then. */
export interface Delivery {
  text: string;
  interrupted: boolean;
  /** Where the reply starts in the call's recording (spoken replies). */
  startSeconds?: number;
  /** Where the time of the turn it answers went (a spoken reply whose first audio was sent), kept with the reply. */
  latencyMs?: TurnLatency;
}

export interface ReplyOptions {
  /** Stops the answerer at once (the visitor interrupted a spoken reply). */
  signal?: AbortSignal;
  /** A spoken reply says these words while its tools run (the webhook tools' `speakWhileRunning`); text replies do not. */
  whileToolsRun?: (words: string) => void;
  /**
   * Resolves once the reply reached the visitor, with what of it did: a spoken reply once its audio played or
   * was cut off. By default all of it, as soon as it is produced. An empty delivery records no reply.
   */
  deliver?: (produced: string) => Promise<Delivery>;
  /**
   * How the conversation ends when the agent hangs up (its end_call tool), once the reply is recorded. By default it
   * ends at once, its call's endedReason `agent-hung-up`; a spoken conversation's transport can close its own way.
   */
  hangUp?: () => Promise<void>;
}

/** How often a reply that calls tools renews its claim (a tool may take 60 s; a claim is stale after LLM_TIMEOUT_MS + 15 s). */
const CLAIM_RENEWAL_MS = 10_000;

/**
 * The agent's replies to accepted messages (ConversationTalk.accept): produced piece by piece and always
 * recorded (a failed provider gives the apology, a visitor who went away still gets it recorded); shutting down
 * waits for the replies in progress.
 */
@Injectable()
export class ConversationReplies implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Conversations');
  /**
   * Replies being produced: shutting down waits for them, so each is recorded (bounded by LLM_TIMEOUT_MS per request
   * to the provider, and by the tools' timeoutSeconds per round of tool calls, at most MAX_TOOL_ROUNDS).
   */
  private readonly replying = new Set<Promise<string>>();
  /** The passages a reply is given: the provider's allowance (RAG_PASSAGES), or the best one for the built-in answerer. */
  private readonly passageLimit: number;
  /** The built-in answerer calls no tool: its replies are given none. */
  private readonly builtIn: boolean;

  constructor(
    private readonly conversations: ConversationsRepository,
    private readonly answerer: Answerer,
    private readonly passages: PassageFinder,
    private readonly tools: ToolCalls,
    private readonly ends: ConversationEnds,
    @InjectConfig() config: AppConfig,
  ) {
    this.builtIn = answerer instanceof BuiltInAnswerer;
    this.passageLimit = this.builtIn ? 1 : config.ragPassages;
  }

  /**
   * Produces the reply to an accepted message, giving each piece to `onPiece` as it comes, and records what of it
   * was delivered (options.deliver; all of it by default). The reply is always produced and recorded, whatever
   * happens to the visitor's connection; when the answerer fails, the reply is the fixed apology (only the
   * failure's kind is logged, never the provider's text). Resolves with the text recorded.
   */
  reply(turn: AcceptedTurn, onPiece: (piece: string) => void = () => undefined, options: ReplyOptions = {}): Promise<string> {
    const work = this.produceReply(turn, onPiece, options);
    this.replying.add(work);
    const forget = () => {
      this.replying.delete(work);
      turn.release();
    };
    work.then(forget, forget);
    return work;
  }

  /**
   * The greeting as a spoken call said it: where it starts in the recording, and, cut off by the visitor, only what
   * of it was heard (all of it is kept when nothing was: the text conversation showed it). Only the first time.
   */
  async recordGreeting(accountId: number, conversationId: string, said: Delivery, startSeconds: number): Promise<void> {
    const heard = said.interrupted ? storable(said.text) : '';
    await this.conversations.recordGreetingSpoken(accountId, conversationId, heard.trim() ? heard : null, startSeconds);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.replying]);
  }

  private async produceReply(turn: AcceptedTurn, onPiece: (piece: string) => void, options: ReplyOptions): Promise<string> {
    const { signal, deliver = (text: string): Promise<Delivery> => Promise.resolve({ text, interrupted: false }) } = options;
    const { accountId, id } = turn.access;
    let text = '';
    let tools: TurnTools | undefined;
    let renewal: NodeJS.Timeout | undefined;
    try {
      // The agent's tools and the passages for the message, read at once.
      const [found, request] = await Promise.all([this.turnTools(turn, options.whileToolsRun), this.replyRequest(turn)]);
      tools = found;
      if (tools) renewal = setInterval(() => this.renewClaim(turn), CLAIM_RENEWAL_MS).unref();
      for await (const piece of this.answerer.reply({ ...request, tools }, signal)) {
        text += piece;
        onPiece(piece);
      }
      if (!text.trim() && !signal?.aborted) throw new AnswererFailure('empty');
    } catch (error) {
      logProviderFailure(this.logger, error, 'No reply; the visitor got the apology');
      text = APOLOGY;
    }
    try {
      const delivered = await deliver(text);
      // Every tool call made has ended (a request once sent is never cancelled, even when the reply was interrupted).
      const entries = ((await tools?.entries()) ?? []).map(storable);
      // Not recorded if the conversation ended meanwhile (its call was made with what had been said); a reply cut off
      // before a word of it was heard is none, and the conversation takes the visitor's next message.
      const recorded = storable(delivered.text);
      if (recorded.trim()) {
        const { startSeconds, latencyMs } = delivered;
        const replied = await this.conversations.recordReply(accountId, id, turn.seq, recorded, startSeconds, entries, latencyMs);
        if (replied && tools?.transferTo) await this.transfer(accountId, id, tools.transferTo);
        else if (replied && tools?.hangUp) await (options.hangUp ?? (() => this.hangUp(accountId, id)))();
      } else {
        await this.conversations.abandonReply(accountId, id, turn.seq, entries);
      }
      return recorded;
    } finally {
      clearInterval(renewal);
    }
  }

  /** The agent's tools for this turn (none for the built-in answerer, which calls none). */
  private turnTools({ access, agent, party }: AcceptedTurn, whileRunning?: (words: string) => void): Promise<TurnTools | undefined> {
    if (this.builtIn || agent.toolIds.length === 0) return Promise.resolve(undefined);
    return this.tools.forTurn(access.accountId, agent.toolIds, { id: access.id, agentId: access.agentId, ...party }, whileRunning);
  }

  private async replyRequest({ access, agent, text, turns }: AcceptedTurn): Promise<ReplyRequest> {
    const passages = this.passageLimit > 0 ? await this.passages.find(access.accountId, agent, text, this.passageLimit) : [];
    return { agent: { model: agent.model, systemPrompt: agent.systemPrompt, language: agent.language }, passages, turns };
  }

  /** Keeps the reply's claim fresh while its tools run (one reply at a time: a stale claim would let another message in). */
  private renewClaim({ access, seq }: AcceptedTurn): void {
    this.conversations.renewReply(access.accountId, access.id, seq).catch((error: unknown) => {
      this.logger.warn({ error: { name: (error as Error)?.name } }, "A reply's claim could not be renewed");
    });
  }

  /**
   * The agent moves the phone call to `number` (transfer_call): the conversation ends (`transferred`) now that the
   * sentence announcing it has been heard, and the telephony module hands the call to the carrier's `<Dial>`.
   */
  private async transfer(accountId: number, id: string, number: string): Promise<void> {
    try {
      await this.ends.transfer(accountId, id, number);
    } catch (error) {
      this.logger.error(
        { error: { name: (error as Error)?.name } },
        'The agent transferred the call, but the conversation could not be ended',
      );
    }
  }

  /**
   * The agent hung up (end_call): the conversation ends now that its last sentence is recorded. Should that fail, the
   * reply stands (the visitor has it) and the conversation ends when idle.
   */
  private async hangUp(accountId: number, id: string): Promise<void> {
    try {
      await this.ends.endNow(accountId, id, 'agent-hung-up');
    } catch (error) {
      this.logger.error({ error: { name: (error as Error)?.name } }, 'The agent hung up, but the conversation could not be ended');
    }
  }
}

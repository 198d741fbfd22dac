import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { UNSTORABLE } from '../common/storable-text';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { Answerer, AnswererFailure, APOLOGY, ReplyRequest } from './answering/answerer';
import { BuiltInAnswerer } from './answering/builtin-answerer';
import { logProviderFailure } from './answering/failure-log';
import { PassageFinder } from './answering/passages';
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
}

export interface ReplyOptions {
  /** Stops the answerer at once (the visitor interrupted a spoken reply). */
  signal?: AbortSignal;
  /**
   * Resolves once the reply reached the visitor, with what of it did: a spoken reply once its audio played or
   * was cut off. By default all of it, as soon as it is produced. An empty delivery records no reply.
   */
  deliver?: (produced: string) => Promise<Delivery>;
}

/**
 * The agent's replies to accepted messages (ConversationTalk.accept): produced piece by piece and always
 * recorded (a failed provider gives the apology, a visitor who went away still gets it recorded); shutting down
 * waits for the replies in progress.
 */
@Injectable()
export class ConversationReplies implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Conversations');
  /** Replies being produced: shutting down waits for them (bounded by LLM_TIMEOUT_MS), so each is recorded. */
  private readonly replying = new Set<Promise<string>>();
  /** The passages a reply is given: the provider's allowance (RAG_PASSAGES), or the best one for the built-in answerer. */
  private readonly passageLimit: number;

  constructor(
    private readonly conversations: ConversationsRepository,
    private readonly answerer: Answerer,
    private readonly passages: PassageFinder,
    @InjectConfig() config: AppConfig,
  ) {
    this.passageLimit = answerer instanceof BuiltInAnswerer ? 1 : config.ragPassages;
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
    let text = '';
    try {
      for await (const piece of this.answerer.reply(await this.replyRequest(turn), signal)) {
        text += piece;
        onPiece(piece);
      }
      if (!text.trim() && !signal?.aborted) throw new AnswererFailure('empty');
    } catch (error) {
      logProviderFailure(this.logger, error, 'No reply; the visitor got the apology');
      text = APOLOGY;
    }
    const delivered = await deliver(text);
    const { accountId, id } = turn.access;
    // Not recorded if the conversation ended meanwhile (its call was made with what had been said); a reply cut off
    // before a word of it was heard is none, and the conversation takes the visitor's next message.
    const recorded = storable(delivered.text);
    if (recorded.trim()) await this.conversations.recordReply(accountId, id, turn.seq, recorded, delivered.startSeconds);
    else await this.conversations.abandonReply(accountId, id, turn.seq);
    return recorded;
  }

  private async replyRequest({ access, agent, text, turns }: AcceptedTurn): Promise<ReplyRequest> {
    const passages = this.passageLimit > 0 ? await this.passages.find(access.accountId, agent, text, this.passageLimit) : [];
    return { agent: { model: agent.model, systemPrompt: agent.systemPrompt, language: agent.language }, passages, turns };
  }
}

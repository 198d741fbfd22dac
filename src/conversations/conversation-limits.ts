import { CallHandler, ExecutionContext, HttpException, HttpStatus, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { catchError, Observable, throwError } from 'rxjs';
import { AppConfig, ConversationLimitsConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { isWidgetRateLimited, makeReadableByAnyPage, retryAfterSeconds } from '../rate-limit/rate-limit';
import { RATE_LIMIT_STORAGE, RateLimitStorage } from '../rate-limit/rate-limit-storage';
import type { ActiveConversations, ConversationAccess } from './conversations.repository';

/** A cap of ConversationLimitsConfig reached: a 429 with Retry-After (sent by ConversationLimitHeaders). */
export class ConversationLimitException extends HttpException {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(`${message}; retry in ${retryAfterSeconds} s`, HttpStatus.TOO_MANY_REQUESTS);
  }
}

/** A place among the active conversations frees when one is ended, or, idle, ends by itself (within a minute). */
const ACTIVE_RETRY_AFTER_SECONDS = 30;
/** A reply takes seconds (at most LLM_TIMEOUT_MS). */
const REPLY_RETRY_AFTER_SECONDS = 5;
/** The counter of widget conversations started per client address (in the rate limits' storage). */
const STARTS_COUNTER = 'conversation-starts';

/** Whose reply slots a message takes: its account, its site, and, for a widget conversation, the client address. */
type ReplySlot = { key: string; cap: number; refusal: string };

/**
 * The caps that keep a public site key from holding unbounded conversations and provider requests: a widget
 * site, an account and a client address each get a bounded share, whatever Origin a script claims and however
 * many conversations it starts (each of which has a rate-limit budget of its own).
 * - Active conversations per site and per account: counted in PostgreSQL where one starts (countActive, under the
 *   account's lock), so they hold across instances.
 * - Widget conversations started per client address, across all sites: the rate limits' counters (in memory, or
 *   shared in Redis with REDIS_URL).
 * - Replies being produced at once, per account, per site and per client address: in this instance's memory
 *   (each instance allows as many: N instances, N times the caps), taken before the message is recorded and
 *   given back when the reply is; an entry lives only while its replies do, so the map is bounded by them.
 */
@Injectable()
export class ConversationLimits {
  private readonly caps: ConversationLimitsConfig;
  /** PHONE_MAX_ACTIVE_CALLS: phone calls in progress per account, inbound and outbound together. */
  private readonly phoneCallsPerAccount: number;
  private readonly windowSeconds: number;
  private readonly replying = new Map<string, number>();

  constructor(
    @InjectConfig() config: AppConfig,
    @Inject(RATE_LIMIT_STORAGE) private readonly storage: RateLimitStorage,
  ) {
    this.caps = config.conversationLimits;
    this.phoneCallsPerAccount = config.telephony.maxActiveCalls;
    this.windowSeconds = config.widgetRateLimitWindowSeconds;
  }

  /** Counts a widget conversation started from `address`: a 429 beyond CONVERSATION_MAX_STARTS_PER_ADDRESS in the window. */
  async countStart(address: string): Promise<void> {
    const windowMs = this.windowSeconds * 1000;
    const record = await this.storage.increment(`ip:${address}`, windowMs, this.caps.startsPerAddress, windowMs, STARTS_COUNTER);
    if (record.isBlocked) {
      throw new ConversationLimitException(
        'Too many conversations were started from this address',
        retryAfterSeconds(record.timeToBlockExpire),
      );
    }
  }

  /**
   * A 429 when a new conversation would be one too many on its site or its account, or (`phone`, a phone call's)
   * one too many phone calls of the account (`active`: ConversationsRepository.countActive).
   */
  refuseBeyondActive(active: ActiveConversations, siteId: number | null, phone = false): void {
    if (phone && active.phone >= this.phoneCallsPerAccount) {
      throw new ConversationLimitException('Too many phone calls are in progress on this account', ACTIVE_RETRY_AFTER_SECONDS);
    }
    if (siteId !== null && active.site >= this.caps.activePerSite) {
      throw new ConversationLimitException('Too many conversations are active on this site', ACTIVE_RETRY_AFTER_SECONDS);
    }
    if (active.account >= this.caps.activePerAccount) {
      throw new ConversationLimitException('Too many conversations are active on this account', ACTIVE_RETRY_AFTER_SECONDS);
    }
  }

  /**
   * Takes a reply slot of the conversation's account, of its site, and (a widget conversation) of the client
   * address, all or none: a 429 when one of them is full. Returns what gives them back (once; again does nothing).
   */
  takeReplySlot(conversation: Pick<ConversationAccess, 'accountId' | 'siteId' | 'allowedDomain'>, address: string): () => void {
    const slots: ReplySlot[] = [{ key: `account:${conversation.accountId}`, cap: this.caps.repliesPerAccount, refusal: 'this account' }];
    if (conversation.siteId !== null) {
      slots.push({ key: `site:${conversation.siteId}`, cap: this.caps.repliesPerSite, refusal: 'this site' });
    }
    // A widget conversation (its page's rule): API conversations are started with an API key, from the partner's servers.
    if (conversation.allowedDomain !== null) {
      slots.push({ key: `address:${address}`, cap: this.caps.repliesPerAddress, refusal: 'this address' });
    }
    const full = slots.find(({ key, cap }) => (this.replying.get(key) ?? 0) >= cap);
    if (full) {
      throw new ConversationLimitException(`Too many replies are being produced at once for ${full.refusal}`, REPLY_RETRY_AFTER_SECONDS);
    }
    for (const { key } of slots) this.replying.set(key, (this.replying.get(key) ?? 0) + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      for (const { key } of slots) {
        const left = this.replying.get(key)! - 1;
        if (left > 0) this.replying.set(key, left);
        else this.replying.delete(key);
      }
    };
  }
}

/**
 * Sends a ConversationLimitException's Retry-After, and on the public widget routes makes its 429 readable by any
 * page (as the rate limit's), so that the widget can tell the visitor to wait rather than report a network error.
 */
@Injectable()
export class ConversationLimitHeaders implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      catchError((error: unknown) => {
        if (error instanceof ConversationLimitException) {
          const response = context.switchToHttp().getResponse<ServerResponse>();
          response.setHeader('Retry-After', String(error.retryAfterSeconds));
          if (isWidgetRateLimited(context)) makeReadableByAnyPage(response);
        }
        return throwError(() => error);
      }),
    );
  }
}

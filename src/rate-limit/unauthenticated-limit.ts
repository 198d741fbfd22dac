import { Inject, Injectable } from '@nestjs/common';
import { ThrottlerException } from '@nestjs/throttler';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { RATE_LIMIT_STORAGE, RateLimitStorage } from './rate-limit-storage';
import {
  clientAddressKey,
  rateLimitHeaders,
  rateLimitState,
  retryAfterSeconds,
  setRateLimitHeaders,
  tooManyRequestsMessage,
} from './rate-limit';

/**
 * The counters kept here, each per address and with the same limit: requests whose API key is not valid, public
 * widget requests naming a site key or conversation that does not exist, and carrier webhooks that are not signed
 * for a number of the service. Apart, so that a page with a stale snippet never locks the management API out of its
 * address.
 */
export type UnauthenticatedCounter = 'unauthenticated' | 'widget-credential' | 'carrier-signature';

type ClientRequest = IncomingMessage & { ip?: string };

/** An address over its budget: the 429's message and headers (`Retry-After`, `RateLimit-Policy`, `RateLimit`). */
export interface RateLimitRefusal {
  message: string;
  headers: Record<string, string>;
}

/**
 * Requests without a valid API key, limited per client IP (UNAUTHENTICATED_RATE_LIMIT per RATE_LIMIT_WINDOW_SECONDS)
 * before any database work: the API-key guard asks `check` before it looks up a key that cannot be valid (no key
 * made has its prefix), and `count`s every request it refuses. Requests with a valid key never count here, and are
 * never refused by it. The public widget routes' credentials (a site key, a
 * conversation's token) are counted the same way, apart (WidgetCredentialLimit).
 */
@Injectable()
export class UnauthenticatedLimit {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(RATE_LIMIT_STORAGE) private readonly storage: RateLimitStorage,
  ) {}

  /** A 429 when this client IP is blocked for its requests without a valid key (with this budget's rate-limit headers). */
  async check(request: ClientRequest, response: ServerResponse, counter: UnauthenticatedCounter = 'unauthenticated'): Promise<void> {
    const refusal = await this.blockedFor(request, counter);
    if (!refusal) return;
    for (const [name, value] of Object.entries(refusal.headers)) response.setHeader(name, value);
    throw new ThrottlerException(refusal.message);
  }

  /**
   * The refusal of an address over the limit on `counter` (its 429's message and headers), or undefined; no
   * database work. For a caller without an HTTP response to set them on (the voice socket's upgrade).
   */
  async blockedFor(request: ClientRequest, counter: UnauthenticatedCounter): Promise<RateLimitRefusal | undefined> {
    const { unauthenticatedRateLimit: limit, rateLimitWindowSeconds: windowSeconds } = this.config;
    if (limit === 0) return undefined;
    const blocked = await this.storage.blockedFor(this.tracker(request), counter);
    if (blocked <= 0) return undefined;
    const retryAfter = retryAfterSeconds(blocked);
    return {
      message: tooManyRequestsMessage(retryAfter),
      headers: { ...rateLimitHeaders({ limit, windowSeconds, remaining: 0, resetSeconds: blocked }), 'Retry-After': String(retryAfter) },
    };
  }

  /**
   * Counts a request refused for its key, and sends this budget's rate-limit headers with its 401; a 429 (rather
   * than its 401) once the IP is over the limit.
   */
  async count(request: ClientRequest, response: ServerResponse): Promise<void> {
    const record = await this.increment(request, 'unauthenticated');
    if (!record) return;
    setRateLimitHeaders(response, rateLimitState(this.config.unauthenticatedRateLimit, this.config.rateLimitWindowSeconds, record));
    if (record.isBlocked) this.refuse(response, record.timeToBlockExpire);
  }

  /**
   * Counts a request refused once it has been looked up (a public widget route's 404 for a site key or a
   * conversation that does not exist): no headers; once over the limit, the address's next request is the 429.
   */
  async countAnswered(request: ClientRequest, counter: UnauthenticatedCounter): Promise<void> {
    await this.increment(request, counter);
  }

  /** One more refused request of this address on `counter`; undefined when the limit is off (0). */
  private async increment(request: ClientRequest, counter: UnauthenticatedCounter): Promise<ThrottlerStorageRecord | undefined> {
    const { unauthenticatedRateLimit: limit, rateLimitWindowSeconds: windowSeconds } = this.config;
    if (limit === 0) return undefined;
    return this.storage.increment(this.tracker(request), windowSeconds * 1000, limit, windowSeconds * 1000, counter);
  }

  private tracker(request: ClientRequest): string {
    return `ip:${clientAddressKey(request)}`;
  }

  private refuse(response: ServerResponse, blockedSeconds: number): never {
    const retryAfter = retryAfterSeconds(blockedSeconds);
    response.setHeader('Retry-After', retryAfter);
    throw new ThrottlerException(tooManyRequestsMessage(retryAfter));
  }
}

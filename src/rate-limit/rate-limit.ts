import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { ExecutionContext, Injectable } from '@nestjs/common';
import {
  normalizeIp,
  ThrottlerException,
  ThrottlerGuard,
  ThrottlerLimitDetail,
  ThrottlerModuleOptions,
  ThrottlerOptions,
} from '@nestjs/throttler';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import type { Response } from 'express';
import { IS_PUBLIC } from '../auth/public.decorator';
import { isUuid } from '../common/id.pipes';
import { AppConfig } from '../config/config';
import { isSiteKeyShaped } from '../widget-sites/site-key';

/**
 * Rate limits with @nestjs/throttler, one named throttler per kind of caller:
 * - `account`: every authenticated route, per account (all the account's keys share one budget); it runs
 *   after the API-key guard, which has put the account on the request;
 * - `widget`: the public widget routes (@WidgetRateLimit()), per site key and client IP.
 * Requests without a valid key are limited per client IP by UnauthenticatedLimit, inside the API-key guard,
 * before any database work. Counters are in memory (one instance), or in Redis when REDIS_URL is set.
 */
export const WIDGET_RATE_LIMITED = 'rateLimit:widget';

/** What the trackers read of a request (the throttler passes it as `Record<string, any>`): Express's, with the account the API-key guard put on it. */
interface TrackedRequest {
  method?: string;
  route?: { path?: string };
  params?: Record<string, unknown>;
  body?: unknown;
  account?: { id: number };
  ip?: string;
  socket?: { remoteAddress?: string };
}

/** The state of a counter after this request (the account's, or the address's without a valid key), for the rate-limit headers. */
export interface RateLimitState {
  limit: number;
  windowSeconds: number;
  remaining: number;
  /** Seconds until the budget is whole again: the end of the window, or of the block once over the limit. */
  resetSeconds: number;
}

/** A request that went through the `account` throttler. */
export type RateLimitedRequest = { rateLimit?: RateLimitState };

/** The state of a counter from the storage's record of this request. */
export function rateLimitState(limit: number, windowSeconds: number, record: ThrottlerStorageRecord): RateLimitState {
  return {
    limit,
    windowSeconds,
    remaining: Math.max(0, limit - record.totalHits),
    // While blocked, the budget comes back when the block ends (Retry-After), which may be after the window.
    resetSeconds: record.isBlocked ? Math.max(record.timeToExpire, record.timeToBlockExpire) : record.timeToExpire,
  };
}

/**
 * The rate-limit headers of the IETF draft (draft-ietf-httpapi-ratelimit-headers, the field names of contract
 * section 12): `RateLimit-Policy: 600;w=60` and `RateLimit: limit=600, remaining=599, reset=60`. Set by the guard
 * that counts the request, so that every response after it carries them, errors and 429s included.
 */
export function setRateLimitHeaders(response: ServerResponse, state: RateLimitState): void {
  for (const [name, value] of Object.entries(rateLimitHeaders(state))) response.setHeader(name, value);
}

/** The two rate-limit headers of `state`, by name (setRateLimitHeaders sets them). */
export const rateLimitHeaders = (state: RateLimitState): Record<'RateLimit-Policy' | 'RateLimit', string> => ({
  'RateLimit-Policy': `${state.limit};w=${state.windowSeconds}`,
  RateLimit: `limit=${state.limit}, remaining=${state.remaining}, reset=${state.resetSeconds}`,
});

/** Whether the route is one of the public widget routes (@WidgetRateLimit()). */
export const isWidgetRateLimited = (context: ExecutionContext) => Reflect.getMetadata(WIDGET_RATE_LIMITED, context.getClass()) === true;

/**
 * The public widget routes answer CORS in their handlers, which a 429 never reaches: their 429 is made readable by
 * any page (it says nothing but "wait"), so that the widget can tell the visitor to wait instead of reporting a
 * network failure.
 */
export function makeReadableByAnyPage(response: ServerResponse): void {
  response.setHeader('Access-Control-Allow-Origin', '*');
  response.setHeader('Access-Control-Expose-Headers', 'Retry-After');
}

const isPublicRoute = (context: ExecutionContext) =>
  Reflect.getMetadata(IS_PUBLIC, context.getHandler()) === true || Reflect.getMetadata(IS_PUBLIC, context.getClass()) === true;

/** What a public widget request names: its site key (in the path, or the body of POST /widget/sessions) or conversation; none for the script. */
export const widgetCredentialOf = (request: TrackedRequest): string | undefined =>
  [request.params?.siteKey, request.params?.conversationId, bodySiteKey(request.body)].find((value) => typeof value === 'string');

/** The `siteKey` of a JSON object body (POST /widget/sessions). */
const bodySiteKey = (body: unknown): unknown => (typeof body === 'object' && body !== null && 'siteKey' in body ? body.siteKey : undefined);

/** The longest part of a counter's key taken as the client sent it: an IP address is at most 45 characters. */
const MAX_KEY_PART = 45;

/**
 * A part of a counter's key made from what the client sent (a client address read from X-Forwarded-For can be
 * any text of up to 16 KiB): as it is when short, else its SHA-256 (128 bits, base64url), so that a key's length
 * is bounded whatever the client sends, and distinct long inputs still count apart.
 */
const boundedKeyPart = (value: string): string =>
  value.length <= MAX_KEY_PART ? value : `#${createHash('sha256').update(value).digest('base64url').slice(0, 22)}`;

/** The client address of a request, as a part of a counter's key (IPv6 by its /64, like the throttler's own trackers). */
export const clientAddressKey = (request: { ip?: string; socket?: { remoteAddress?: string } }): string =>
  boundedKeyPart(normalizeIp(request.ip ?? request.socket?.remoteAddress ?? ''));

/** A phone number's id in a carrier webhook's path (anything else names no number). */
const PHONE_NUMBER_ID = /^[1-9][0-9]{0,9}$/;

/**
 * What the widget throttler counts a public request by, besides the address: the credential its path names when it
 * has a credential's shape (a site key, or a conversation id, lowercased as its route reads it; a carrier webhook's
 * phone number), the constant `malformed` for one that cannot name anything (a 404 whatever it is), else the route
 * itself (the script, the preflights, POST /widget/sessions). Never the body: it is read after this count (JsonBodyGuard), so POST
 * /widget/sessions, whose site key is in its body, is counted per address.
 */
function widgetCounterOf(request: TrackedRequest): string {
  const { siteKey, conversationId, phoneNumberId } = request.params ?? {};
  if (typeof siteKey === 'string') return isSiteKeyShaped(siteKey) ? siteKey : 'malformed';
  if (typeof conversationId === 'string') return isUuid(conversationId) ? conversationId.toLowerCase() : 'malformed';
  if (typeof phoneNumberId === 'string') return PHONE_NUMBER_ID.test(phoneNumberId) ? `phone-number:${phoneNumberId}` : 'malformed';
  return `${request.method} ${request.route?.path ?? '-'}`;
}

/**
 * A throttler as this service declares them: a fixed limit and window, its own skipIf and tracker; the library's
 * other options are not used (RateLimitGuard reads nothing else).
 */
interface FixedThrottler extends ThrottlerOptions {
  name: string;
  limit: number;
  ttl: number;
  skipIf: (context: ExecutionContext) => boolean;
  getTracker: (request: TrackedRequest) => string;
}

/** A throttler's counter for a tracker: one per tracker across all routes (the library's default keeps one per route). */
export const counterKey = (throttlerName: string, tracker: string) => `${throttlerName}:${tracker}`;

/** The public widget routes' throttler (and the voice socket's, VoiceGateway): its name, in its counters' keys. */
export const WIDGET_THROTTLER = 'widget';

/** The widget throttler's tracker: what the request names (widgetCounterOf) and the client's address (clientAddressKey). */
export const widgetTracker = (counter: string, addressKey: string) => `${counter}|${addressKey}`;

/** Authenticated routes, per account. */
function accountThrottler(config: AppConfig): FixedThrottler {
  return {
    name: 'account',
    limit: config.rateLimit,
    ttl: config.rateLimitWindowSeconds * 1000,
    skipIf: (context) => config.rateLimit === 0 || isPublicRoute(context),
    getTracker: (request: TrackedRequest) => `account:${request.account!.id}`,
  };
}

/**
 * The public widget routes: per site key in the path or conversation (the bearer routes), or per route (the
 * script, POST /widget/sessions), and client IP (widgetCounterOf).
 */
function widgetThrottler(config: AppConfig): FixedThrottler {
  return {
    name: WIDGET_THROTTLER,
    limit: config.widgetRateLimit,
    ttl: config.widgetRateLimitWindowSeconds * 1000,
    skipIf: (context) => !isWidgetRateLimited(context),
    getTracker: (request: TrackedRequest) => widgetTracker(widgetCounterOf(request), clientAddressKey(request)),
  };
}

export function rateLimitOptions(config: AppConfig): Extract<ThrottlerModuleOptions, { throttlers: unknown }> {
  return {
    throttlers: [accountThrottler(config), widgetThrottler(config)],
    errorMessage: (_context, detail) => tooManyRequestsMessage(retryAfterSeconds(detail.timeToBlockExpire)),
  };
}

export const retryAfterSeconds = (blockSeconds: number) => Math.max(1, Math.ceil(blockSeconds));
export const tooManyRequestsMessage = (retryAfter: number) => `Too many requests; retry in ${retryAfter} s`;

/**
 * Registered once as APP_GUARD. Limits apply per account (or site key and IP) over all routes; its 429 carries a
 * standard `Retry-After` (seconds) whatever the throttler, and on the widget routes is readable by any page
 * (makeReadableByAnyPage).
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  /**
   * The library's, without the per-route limits this service never declares (`@Throttle`, `@SkipThrottle`: they are
   * not read), which the library looks up on every request (a dozen metadata reads and three awaits, about 7 µs of
   * a one-row read: docs/benchmarks.md): each throttler counts the request with its own limit and window, unless
   * its skipIf skips it.
   */
  override async canActivate(context: ExecutionContext): Promise<boolean> {
    for (const throttler of this.throttlers as FixedThrottler[]) {
      if (!throttler.skipIf(context)) await this.count(context, throttler);
    }
    return true;
  }

  /**
   * Counts the request in its tracker's counter (counterKey); for the `account` throttler, the counter's state kept
   * on the request (RateLimitState) and sent in the rate-limit headers.
   */
  private async count(context: ExecutionContext, throttler: FixedThrottler): Promise<void> {
    const { req, res } = this.getRequestResponse(context);
    const { name, limit, ttl } = throttler;
    const tracker = throttler.getTracker(req);
    const key = counterKey(name, tracker);
    const record = await this.storageService.increment(key, ttl, limit, ttl, name);
    if (name === 'account') {
      const state = rateLimitState(limit, ttl / 1000, record);
      (req as RateLimitedRequest).rateLimit = state;
      setRateLimitHeaders(res as ServerResponse, state);
    }
    if (record.isBlocked) await this.throwThrottlingException(context, { ...record, limit, ttl, key, tracker });
  }

  protected async throwThrottlingException(context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    const response = context.switchToHttp().getResponse<Response>();
    this.setResponseHeader(response, 'Retry-After', retryAfterSeconds(detail.timeToBlockExpire));
    if (isWidgetRateLimited(context)) makeReadableByAnyPage(response);
    throw new ThrottlerException(await this.getErrorMessage(context, detail));
  }
}

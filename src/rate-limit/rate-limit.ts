import type { ServerResponse } from 'node:http';
import { ExecutionContext, Injectable } from '@nestjs/common';
import { normalizeIp, ThrottlerException, ThrottlerGuard, ThrottlerLimitDetail, ThrottlerModuleOptions, ThrottlerOptions, ThrottlerRequest } from '@nestjs/throttler';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import { IS_PUBLIC } from '../auth/public.decorator';
import { AppConfig } from '../config/config';

/**
 * Rate limits with @nestjs/throttler, one named throttler per kind of caller:
 * - `account`: every authenticated route, per account (all the account's keys share one budget); it runs
 *   after the API-key guard, which has put the account on the request;
 * - `widget`: the public widget routes (@WidgetRateLimit()), per site key and client IP.
 * Requests without a valid key are limited per client IP by UnauthenticatedLimit, inside the API-key guard,
 * before any database work. Counters are in memory (one instance), or in Redis when REDIS_URL is set.
 */
export const WIDGET_RATE_LIMITED = 'rateLimit:widget';

type TrackedRequest = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- the throttler's own type

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
  response.setHeader('RateLimit-Policy', `${state.limit};w=${state.windowSeconds}`);
  response.setHeader('RateLimit', `limit=${state.limit}, remaining=${state.remaining}, reset=${state.resetSeconds}`);
}

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
  [request.params?.siteKey, request.params?.conversationId, request.body?.siteKey].find((value) => typeof value === 'string');

/** Authenticated routes, per account. */
function accountThrottler(config: AppConfig): ThrottlerOptions {
  return {
    name: 'account',
    limit: config.rateLimit,
    ttl: config.rateLimitWindowSeconds * 1000,
    setHeaders: false,
    skipIf: (context) => config.rateLimit === 0 || isPublicRoute(context),
    getTracker: (request: TrackedRequest) => `account:${request.account.id}`,
  };
}

/**
 * The public widget routes: per site key (in the path, or the body of POST /widget/sessions) or conversation
 * (the bearer routes), and client IP.
 */
function widgetThrottler(config: AppConfig): ThrottlerOptions {
  return {
    name: 'widget',
    limit: config.widgetRateLimit,
    ttl: config.widgetRateLimitWindowSeconds * 1000,
    setHeaders: false, // RateLimitGuard sends a plain Retry-After; the throttler would suffix it with the name
    skipIf: (context) => !isWidgetRateLimited(context),
    getTracker: (request: TrackedRequest) => `${widgetCredentialOf(request) ?? '-'}|${normalizeIp(request.ip ?? '')}`,
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
  /** One counter per tracker across all routes (the library's default keeps one per route). */
  protected generateKey(_context: ExecutionContext, tracker: string, throttlerName: string): string {
    return `${throttlerName}:${tracker}`;
  }

  /**
   * The library's, minus the options not used here, plus for the `account` throttler the counter's state kept on
   * the request (RateLimitState) and sent in the rate-limit headers.
   */
  protected async handleRequest({ context, limit, ttl, throttler, blockDuration, getTracker, generateKey }: ThrottlerRequest): Promise<boolean> {
    const { req, res } = this.getRequestResponse(context);
    const tracker = await getTracker(req, context);
    const key = generateKey(context, tracker, throttler.name!);
    const record = await this.storageService.increment(key, ttl, limit, blockDuration, throttler.name!);
    if (throttler.name === 'account') {
      const state = rateLimitState(limit, ttl / 1000, record);
      (req as RateLimitedRequest).rateLimit = state;
      setRateLimitHeaders(res as ServerResponse, state);
    }
    if (record.isBlocked) await this.throwThrottlingException(context, { ...record, limit, ttl, key, tracker });
    return true;
  }

  protected async throwThrottlingException(context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    const response = context.switchToHttp().getResponse();
    this.setResponseHeader(response, 'Retry-After', retryAfterSeconds(detail.timeToBlockExpire));
    if (isWidgetRateLimited(context)) makeReadableByAnyPage(response);
    throw new ThrottlerException(await this.getErrorMessage(context, detail));
  }
}

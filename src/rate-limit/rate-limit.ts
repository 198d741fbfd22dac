import { applyDecorators, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { createHash } from 'node:crypto';
import { normalizeIp, ThrottlerException, ThrottlerGuard, ThrottlerLimitDetail, ThrottlerModuleOptions, ThrottlerOptions } from '@nestjs/throttler';
import { IS_PUBLIC } from '../auth/public.decorator';
import { ErrorResponse } from '../common/error-response.dto';
import { AppConfig } from '../config/config';

/**
 * Rate limits with @nestjs/throttler, one named throttler per kind of caller:
 * - `api-key`: every authenticated route, per API key (a request without a key counts against its IP);
 * - `widget`: the public widget routes (@WidgetRateLimit()), per site key and client IP.
 * Counters are in memory (one instance), or in Redis when REDIS_URL is set (several instances).
 */
const WIDGET_RATE_LIMITED = 'rateLimit:widget';

type TrackedRequest = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- the throttler's own type

const isWidgetRateLimited = (context: ExecutionContext) => Reflect.getMetadata(WIDGET_RATE_LIMITED, context.getClass()) === true;

const isPublicRoute = (context: ExecutionContext) =>
  Reflect.getMetadata(IS_PUBLIC, context.getHandler()) === true || Reflect.getMetadata(IS_PUBLIC, context.getClass()) === true;

/** Authenticated routes, per API key: the key itself is never stored, only its hash. */
function apiKeyThrottler(config: AppConfig): ThrottlerOptions {
  return {
    name: 'api-key',
    limit: config.rateLimit,
    ttl: config.rateLimitWindowSeconds * 1000,
    setHeaders: false,
    skipIf: (context) => config.rateLimit === 0 || isPublicRoute(context),
    getTracker: (request: TrackedRequest) => {
      const key = request.headers['x-api-key'];
      return typeof key === 'string' && key ? `key:${createHash('sha256').update(key).digest('base64url')}` : `ip:${normalizeIp(request.ip ?? '')}`;
    },
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
    getTracker: (request: TrackedRequest) => {
      const named = [request.params?.siteKey, request.params?.conversationId, request.body?.siteKey].find((value) => typeof value === 'string');
      return `${named ?? '-'}|${normalizeIp(request.ip ?? '')}`;
    },
  };
}

export function rateLimitOptions(config: AppConfig): Extract<ThrottlerModuleOptions, { throttlers: unknown }> {
  return {
    throttlers: [apiKeyThrottler(config), widgetThrottler(config)],
    errorMessage: (_context, detail) => `Too many requests; retry in ${retryAfterSeconds(detail)} s`,
  };
}

const retryAfterSeconds = (detail: ThrottlerLimitDetail) => Math.max(1, Math.ceil(detail.timeToBlockExpire));

/**
 * Registered once as APP_GUARD. Limits apply per API key (or site key and IP) over all routes; its 429 carries a
 * standard `Retry-After` (seconds) whatever the throttler. The public widget routes answer CORS in their handlers,
 * which a 429 never reaches: their 429 is made readable by any page (it says nothing but "wait"), so that the
 * widget can tell the visitor to wait instead of reporting a network failure.
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  /** One counter per tracker across all routes (the library's default keeps one per route). */
  protected generateKey(_context: ExecutionContext, tracker: string, throttlerName: string): string {
    return `${throttlerName}:${tracker}`;
  }

  protected async throwThrottlingException(context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    const response = context.switchToHttp().getResponse();
    this.setResponseHeader(response, 'Retry-After', retryAfterSeconds(detail));
    if (isWidgetRateLimited(context)) {
      this.setResponseHeader(response, 'Access-Control-Allow-Origin', '*');
      this.setResponseHeader(response, 'Access-Control-Expose-Headers', 'Retry-After');
    }
    throw new ThrottlerException(await this.getErrorMessage(context, detail));
  }
}

/** Applies the widget throttler to every route of a controller, and documents its 429. */
export const WidgetRateLimit = () =>
  applyDecorators(
    SetMetadata(WIDGET_RATE_LIMITED, true),
    ApiResponse({ status: 429, type: ErrorResponse, description: 'Too many requests from this address for this site key; see `Retry-After`' }),
  );

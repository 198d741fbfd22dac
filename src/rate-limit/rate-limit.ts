import { applyDecorators, ExecutionContext, Injectable, SetMetadata, UseGuards } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { normalizeIp, ThrottlerException, ThrottlerGuard, ThrottlerLimitDetail, ThrottlerModuleOptions, ThrottlerOptions } from '@nestjs/throttler';
import { ErrorResponse } from '../common/error-response.dto';
import { AppConfig } from '../config/config';

/**
 * Rate limits with @nestjs/throttler (in-memory counters, per process). Each throttler is a named entry in
 * `rateLimitOptions`; a route opts in with its decorator. A later app-wide limit (per API key) adds its own
 * entry with its own `skipIf` and its config variables, and can reuse RateLimitGuard.
 */
const WIDGET_RATE_LIMITED = 'rateLimit:widget';

/** The public widget routes: per site key (when the path has one) and client IP. */
export function widgetThrottler(config: AppConfig): ThrottlerOptions {
  return {
    name: 'widget',
    limit: config.widgetRateLimit,
    ttl: config.widgetRateLimitWindowSeconds * 1000,
    setHeaders: false, // RateLimitGuard sends a plain Retry-After; the throttler would suffix it with the name
    skipIf: (context: ExecutionContext) => Reflect.getMetadata(WIDGET_RATE_LIMITED, context.getClass()) !== true,
    getTracker: (request: { params?: Record<string, unknown>; ip?: string }) => {
      const siteKey = typeof request.params?.siteKey === 'string' ? request.params.siteKey : '-';
      return `${siteKey}|${normalizeIp(request.ip ?? '')}`;
    },
  };
}

export function rateLimitOptions(config: AppConfig): ThrottlerModuleOptions {
  return {
    throttlers: [widgetThrottler(config)],
    errorMessage: (_context, detail) => `Too many requests; retry in ${retryAfterSeconds(detail)} s`,
  };
}

const retryAfterSeconds = (detail: ThrottlerLimitDetail) => Math.max(1, Math.ceil(detail.timeToBlockExpire));

/** ThrottlerGuard whose 429 carries a standard `Retry-After` (seconds) whatever the throttler's name. */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  protected async throwThrottlingException(context: ExecutionContext, detail: ThrottlerLimitDetail): Promise<void> {
    this.setResponseHeader(context.switchToHttp().getResponse(), 'Retry-After', retryAfterSeconds(detail));
    throw new ThrottlerException(await this.getErrorMessage(context, detail));
  }
}

/** Applies the widget throttler to every route of a controller, and documents its 429. */
export const WidgetRateLimit = () =>
  applyDecorators(
    SetMetadata(WIDGET_RATE_LIMITED, true),
    UseGuards(RateLimitGuard),
    ApiResponse({ status: 429, type: ErrorResponse, description: 'Too many requests from this address for this site key; see `Retry-After`' }),
  );

import {
  applyDecorators,
  CallHandler,
  CanActivate,
  ExecutionContext,
  Injectable,
  NestInterceptor,
  NotFoundException,
  SetMetadata,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { catchError, from, Observable, switchMap, throwError } from 'rxjs';
import { ErrorResponse } from '../common/error-response.dto';
import { makeReadableByAnyPage, WIDGET_RATE_LIMITED, widgetCredentialOf } from './rate-limit';
import { UnauthenticatedCounter, UnauthenticatedLimit } from './unauthenticated-limit';

/**
 * The credentials of the public widget routes (a site key, a conversation and its token) counted like API keys.
 * The widget throttler counts per site key (or conversation) and address, so a client that guesses keys, each
 * new, would never reach it. Here a request naming one that is answered 404 (no such site key, conversation or
 * token) counts against its address (UnauthenticatedLimit's `widget-credential` counter, apart from the API
 * keys'), before its answer is sent; an address over that limit gets a 429 before any lookup, whatever it names.
 * The script, which names none, is never refused here.
 */
@Injectable()
export class WidgetCredentialLimit implements CanActivate, NestInterceptor {
  constructor(private readonly unauthenticated: UnauthenticatedLimit) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<WidgetRequest>();
    if (widgetCredentialOf(request) === undefined) return true;
    try {
      await this.unauthenticated.check(request, http.getResponse<ServerResponse>(), WIDGET_CREDENTIAL_COUNTER);
    } catch (error) {
      makeReadableByAnyPage(http.getResponse<ServerResponse>());
      throw error;
    }
    return true;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<WidgetRequest>();
    return next.handle().pipe(
      catchError((error: unknown) => {
        if (!(error instanceof NotFoundException) || widgetCredentialOf(request) === undefined) return throwError(() => error);
        return from(this.unauthenticated.countAnswered(request, WIDGET_CREDENTIAL_COUNTER)).pipe(switchMap(() => throwError(() => error)));
      }),
    );
  }
}

/** The counter of the widget's credentials that do not exist (the voice socket's too: VoiceCredentialLimit). */
export const WIDGET_CREDENTIAL_COUNTER = 'widget-credential' satisfies UnauthenticatedCounter;
type WidgetRequest = IncomingMessage & { params?: Record<string, unknown>; body?: Record<string, unknown> };

/**
 * The public widget routes of a controller: the widget throttler (per site key or conversation, and address),
 * and their credentials counted per address (WidgetCredentialLimit). Documents their 429.
 */
export const WidgetRateLimit = () =>
  applyDecorators(
    SetMetadata(WIDGET_RATE_LIMITED, true),
    UseGuards(WidgetCredentialLimit),
    UseInterceptors(WidgetCredentialLimit),
    ApiResponse({
      status: 429,
      type: ErrorResponse,
      description:
        'Too many requests from this address for this site key, or naming site keys or conversations that do not exist; see `Retry-After`',
    }),
  );

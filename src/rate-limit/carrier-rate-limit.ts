import {
  applyDecorators,
  CallHandler,
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  Injectable,
  NestInterceptor,
  SetMetadata,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { catchError, from, Observable, switchMap, throwError } from 'rxjs';
import { ErrorResponse } from '../common/error-response.dto';
import { WIDGET_RATE_LIMITED } from './rate-limit';
import { UnauthenticatedLimit } from './unauthenticated-limit';

const COUNTER = 'carrier-signature';

/**
 * The 403 of a carrier webhook that names no number of the service or carries no signature: counted against its
 * address. (A wrong signature for an existing number is the same 403 to the client, but is not counted: the
 * carrier's own requests for a number whose token was changed on one side only would otherwise get the carrier's
 * addresses blocked for every number of the service; the per-number throttle bounds those.)
 */
export class UnknownCarrierCredential extends ForbiddenException {}

/**
 * The carrier webhooks' refusals counted per address, as the widget's unknown credentials are: a request answered
 * with UnknownCarrierCredential counts against its address (UnauthenticatedLimit's `carrier-signature` counter); an
 * address over that limit gets a 429 before any lookup. The carrier's own requests, signed, never count.
 */
@Injectable()
export class CarrierSignatureLimit implements CanActivate, NestInterceptor {
  constructor(private readonly unauthenticated: UnauthenticatedLimit) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    await this.unauthenticated.check(http.getRequest<IncomingMessage>(), http.getResponse<ServerResponse>(), COUNTER);
    return true;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<IncomingMessage>();
    return next.handle().pipe(
      catchError((error: unknown) => {
        if (!(error instanceof UnknownCarrierCredential)) return throwError(() => error);
        return from(this.unauthenticated.countAnswered(request, COUNTER)).pipe(switchMap(() => throwError(() => error)));
      }),
    );
  }
}

/**
 * The public carrier webhooks of a controller: the widget throttler (WIDGET_RATE_LIMIT per phone number and
 * address: the carrier's requests come from many addresses), and their refusals counted per address
 * (CarrierSignatureLimit). Documents their 429.
 */
export const CarrierRateLimit = () =>
  applyDecorators(
    SetMetadata(WIDGET_RATE_LIMITED, true),
    UseGuards(CarrierSignatureLimit),
    UseInterceptors(CarrierSignatureLimit),
    ApiResponse({
      status: 429,
      type: ErrorResponse,
      description: 'Too many requests from this address for this number, or not signed by the carrier; see `Retry-After`',
    }),
  );

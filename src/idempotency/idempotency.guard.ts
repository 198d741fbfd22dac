import { BadRequestException, CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { RequestWithAccount } from '../auth/current-account.decorator';
import { isMultipartForm } from '../common/json-body.middleware';
import { PreparedResponse } from '../common/prepared-response';
import { IdempotencyService } from './idempotency.service';
import { captureResponse } from './response-capture';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';
/** 1–255 printable ASCII characters (contract section 12). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x20-\x7E]{1,255}$/;

const DEFERRED_CLAIM = Symbol('deferredIdempotencyClaim');
type DeferringRequest = Request & RequestWithAccount & { [DEFERRED_CLAIM]?: (body: unknown) => Promise<void> };

/**
 * Claims the `Idempotency-Key` of a multipart upload, whose body the guard could not see: called by the route's
 * upload handling once the file is stored, with what identifies the body (the file's digest and the form's
 * fields). A replay throws the first answer (PreparedResponse); a request without a key does nothing.
 */
export function claimDeferredIdempotency(request: object, body: unknown): Promise<void> {
  return (request as DeferringRequest)[DEFERRED_CLAIM]?.(body) ?? Promise.resolve();
}

/**
 * Registered once as APP_GUARD, last (after the key, the rate limit and the scope): every POST of an API-key
 * route with an `Idempotency-Key`, present and future routes alike, is claimed before its handler runs and its
 * answer recorded before it is sent (IdempotencyService). A replay answers in the handler's place. Any other
 * request costs a method comparison: no query, no interceptor, nothing wrapped. A multipart upload's body is
 * read by its route, after the guards: its key is claimed there (claimDeferredIdempotency), before the handler.
 */
@Injectable()
export class IdempotencyGuard implements CanActivate {
  constructor(private readonly idempotency: IdempotencyService) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request & RequestWithAccount>();
    if (request.method !== 'POST' || !request.account) return true; // public routes have no account
    const key = request.headers[IDEMPOTENCY_KEY_HEADER];
    if (key === undefined) return true;
    if (typeof key !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(key))
      throw new BadRequestException('Idempotency-Key must be 1–255 printable ASCII characters');
    const response = context.switchToHttp().getResponse<Response>();
    if (isMultipartForm(request.headers['content-type'])) {
      (request as DeferringRequest)[DEFERRED_CLAIM] = (body) => this.claim(request, response, key, body);
      return true;
    }
    return this.claim(request, response, key, request.body).then(() => true);
  }

  private async claim(request: Request & RequestWithAccount, response: Response, key: string, body: unknown): Promise<void> {
    const { id: accountId, keyId } = request.account!;
    const outcome = await this.idempotency.begin(accountId, keyId, key, request.method, request.originalUrl, body);
    if ('replay' in outcome) {
      const { statusCode, contentType, body } = outcome.replay;
      throw new PreparedResponse(
        statusCode,
        { ...(contentType ? { 'Content-Type': contentType } : {}), [IDEMPOTENT_REPLAYED_HEADER]: 'true' },
        body,
      );
    }
    captureResponse(response, (captured) => this.idempotency.finish(outcome.claimed, captured));
  }
}

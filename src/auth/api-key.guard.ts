import { CanActivate, ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { UnauthenticatedLimit } from '../rate-limit/unauthenticated-limit';
import { ApiKeysService } from './api-keys.service';
import { RequestWithAccount } from './current-account.decorator';
import { IS_PUBLIC } from './public.decorator';

export const API_KEY_HEADER = 'x-api-key';

/**
 * Registered once as APP_GUARD: every route needs a valid X-Api-Key unless marked @Public(). A request without
 * a valid key counts against its client IP (UnauthenticatedLimit): over the limit it is a 429. A blocked IP gets
 * its 429 before its key is looked up in the database, unless the key has the prefix of a key that exists: that
 * key is looked up and, valid, served, so that one client's bad keys never lock valid keys out of a shared address.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly apiKeys: ApiKeysService,
    private readonly unauthenticated: UnauthenticatedLimit,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    const http = context.switchToHttp();
    const request = http.getRequest<RequestWithAccount & IncomingMessage>();
    const response = http.getResponse<ServerResponse>();
    const header = request.headers[API_KEY_HEADER];
    const key = typeof header === 'string' ? header : '';
    const account = key ? await this.apiKeys.authenticate(key, () => this.unauthenticated.check(request, response)) : null;
    if (!account) {
      await this.unauthenticated.count(request, response);
      // One answer for malformed, unknown and revoked keys: the response must not tell them apart.
      throw new UnauthorizedException(key ? 'Invalid API key' : 'Missing X-Api-Key header');
    }
    request.account = account;
    return true;
  }
}

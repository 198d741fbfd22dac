import { CanActivate, ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiKeysService } from './api-keys.service';
import { RequestWithAccount } from './current-account.decorator';
import { IS_PUBLIC } from './public.decorator';

export const API_KEY_HEADER = 'x-api-key';

/** Registered once as APP_GUARD: every route needs a valid X-Api-Key unless marked @Public(). */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly apiKeys: ApiKeysService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    const request = context.switchToHttp().getRequest<RequestWithAccount & { headers: Record<string, unknown> }>();
    const header = request.headers[API_KEY_HEADER];
    if (typeof header !== 'string' || header === '') throw new UnauthorizedException('Missing X-Api-Key header');
    const account = await this.apiKeys.authenticate(header);
    // One answer for malformed, unknown and revoked keys: the response must not tell them apart.
    if (!account) throw new UnauthorizedException('Invalid API key');
    request.account = account;
    return true;
  }
}

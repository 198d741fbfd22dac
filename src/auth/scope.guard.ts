import { applyDecorators, CanActivate, ExecutionContext, ForbiddenException, Injectable, Module, SetMetadata } from '@nestjs/common';
import { APP_GUARD, Reflector } from '@nestjs/core';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorResponse } from '../common/error-response.dto';
import { RequestWithAccount } from './current-account.decorator';
import { API_KEY_SCOPES, ApiKeyScope, scopeForMethod } from './scopes';

const REQUIRED_SCOPE = 'auth:requiredScope';

/**
 * The scope every route of a controller (or one route) needs, whatever its method: `@RequiresScope('write')` on
 * the API-key routes, since managing keys needs `write`, reading them included. Documents the 403.
 */
export const RequiresScope = (scope: ApiKeyScope) =>
  applyDecorators(
    SetMetadata(REQUIRED_SCOPE, scope),
    ApiResponse({ status: 403, type: ErrorResponse, description: `The API key does not have the \`${scope}\` scope` }),
  );

/**
 * Registered once as APP_GUARD, after the rate limit (so that its 403 is counted and carries the rate-limit
 * headers): a request needs the scope of its method (`read` for GET and HEAD, `write` for the others; OPTIONS
 * never gets here, CORS answers it), or the one its route names with @RequiresScope. A key with every scope
 * passes without a look at the route.
 */
@Injectable()
export class ScopeGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<RequestWithAccount & { method: string }>();
    const scopes = request.account?.scopes;
    if (!scopes || scopes.length === API_KEY_SCOPES.length) return true; // a public route, or a key that may do anything
    const required =
      this.reflector.getAllAndOverride<ApiKeyScope | undefined>(REQUIRED_SCOPE, [context.getHandler(), context.getClass()]) ??
      scopeForMethod(request.method);
    if (scopes.includes(required)) return true;
    throw new ForbiddenException(`This API key has the ${scopes.join(', ')} scope only; this request needs the ${required} scope`);
  }
}

/** Registers ScopeGuard; imported by AppModule after the rate-limit module, for the order of the guards. */
@Module({ providers: [{ provide: APP_GUARD, useClass: ScopeGuard }] })
export class ScopeModule {}

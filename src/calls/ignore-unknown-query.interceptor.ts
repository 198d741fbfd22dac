import { CallHandler, ExecutionContext, Injectable, NestInterceptor, Type, UseInterceptors } from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import type { Request } from 'express';
import { Observable } from 'rxjs';

/**
 * Drops the query parameters that the DTO does not declare, before the global ValidationPipe (which refuses
 * unknown fields, as it should for bodies) sees them: unknown query parameters are ignored, as API users
 * expect. Interceptors run before pipes, so this only changes what `@Query()` reads.
 */
@Injectable()
class IgnoreUnknownQueryInterceptor implements NestInterceptor {
  private readonly known: Set<string>;

  constructor(dto: Type<object>) {
    const validations = getMetadataStorage().getTargetValidationMetadatas(dto, '', true, false);
    this.known = new Set(validations.map((validation) => validation.propertyName));
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    const query = Object.fromEntries(Object.entries(request.query).filter(([name]) => this.known.has(name)));
    // Express 5 computes `request.query` in a getter on the prototype: shadow it on this request.
    Object.defineProperty(request, 'query', { value: query, configurable: true, enumerable: true, writable: true });
    return next.handle();
  }
}

/** On a route: its `@Query()` DTO ignores parameters it does not declare instead of refusing them. */
export const IgnoreUnknownQueryParams = (dto: Type<object>) => UseInterceptors(new IgnoreUnknownQueryInterceptor(dto));

import { applyDecorators, CallHandler, ExecutionContext, Injectable, NestInterceptor, SetMetadata, Type } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiResponse } from '@nestjs/swagger';
import { DataSource } from 'typeorm';
import { map, Observable } from 'rxjs';

const RESPONSE_MAPPER = 'response:mapper';

export interface SerializeOptions {
  /** Success status to document; 200 unless given (Nest answers 201 to POST). */
  status?: number;
  description?: string;
  /** The handler returns a list. */
  isArray?: boolean;
}

/**
 * Maps what the handler returns (one entity, or an array of them) through a plain `toXResponse` function,
 * and documents the response type in OpenAPI.
 */
export function Serialize<T, R>(type: Type<R>, mapper: (value: T) => R, options: SerializeOptions = {}) {
  const { status = 200, description = '', isArray = false } = options;
  return applyDecorators(SetMetadata(RESPONSE_MAPPER, mapper), ApiResponse({ status, type, isArray, description }));
}

/**
 * Applies the route's @Serialize mapper. A route that returns a TypeORM entity without a mapper fails
 * loudly instead of leaking the entity's internal columns.
 */
@Injectable()
export class SerializeInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly dataSource: DataSource,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const mapper = this.reflector.get<((value: unknown) => unknown) | undefined>(RESPONSE_MAPPER, context.getHandler());
    return next.handle().pipe(
      map((result) => {
        if (result === undefined) return result;
        if (mapper) return Array.isArray(result) ? result.map((item) => mapper(item)) : mapper(result);
        const sample = Array.isArray(result) ? result[0] : result;
        if (sample !== null && typeof sample === 'object' && this.dataSource.hasMetadata(sample.constructor)) {
          throw new Error(`${context.getClass().name}.${context.getHandler().name} returns an entity without @Serialize`);
        }
        return result;
      }),
    );
  }
}

import { applyDecorators, Type } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';

export interface SerializeOptions {
  /** Success status to document; 200 unless given (Nest answers 201 to POST). */
  status?: number;
  description?: string;
  /** The handler returns a list. */
  isArray?: boolean;
}

type Handler = (...args: unknown[]) => unknown;

/**
 * Wraps the handler so that what it returns (one entity, or an array of them) goes through `mapper`.
 * A wrapper rather than an interceptor: a global interceptor puts every request through an rxjs pipeline,
 * a measurable share of a small response's cost. The wrapper keeps the handler's name and every metadata
 * the route's other decorators put on it, whichever side of them @Serialize is written.
 */
function MapResult<T, R>(mapper: (value: T) => R): MethodDecorator {
  return (_target, _key, descriptor: TypedPropertyDescriptor<any>) => {
    const handler = descriptor.value as Handler;
    const mapped = async function (this: unknown, ...args: unknown[]) {
      const result = (await handler.apply(this, args)) as T | T[] | undefined;
      if (result === undefined) return result;
      return Array.isArray(result) ? result.map((item: T) => mapper(item)) : mapper(result);
    };
    Object.defineProperty(mapped, 'name', { value: handler.name });
    for (const key of Reflect.getOwnMetadataKeys(handler)) Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, handler), mapped);
    descriptor.value = mapped;
  };
}

/**
 * Maps the route's result through a plain `toXResponse` function, and documents the response type in
 * OpenAPI. (A route that returns an entity without it is refused when replying: see ApiExpressAdapter.)
 */
export function Serialize<T, R>(type: Type<R>, mapper: (value: T) => R, options: SerializeOptions = {}) {
  const { status = 200, description = '', isArray = false } = options;
  return applyDecorators(MapResult(mapper), ApiResponse({ status, type, isArray, description }));
}

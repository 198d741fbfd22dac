import { applyDecorators, CanActivate, ExecutionContext, Injectable, UseGuards } from '@nestjs/common';
import { ApiBody } from '@nestjs/swagger';
import type { Request } from 'express';
import { RequestValidationException } from './validation';

/**
 * The body of an action that takes none: nothing, or an empty object. Any field is a 400 naming it, as an
 * unknown field of any other body is (contract section 2), rather than silently ignored.
 */
export function refuseBodyFields(body: unknown): void {
  const fields = body !== null && typeof body === 'object' ? Object.keys(body) : [];
  if (fields.length > 0) throw new RequestValidationException(fields.map((field) => ({ field, message: `property ${field} should not exist` })));
}

/** Applies refuseBodyFields to the request's body (parsed by JsonBodyMiddleware), after the global guards. */
@Injectable()
class EmptyBodyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    refuseBodyFields(context.switchToHttp().getRequest<Request>().body);
    return true;
  }
}

/** The OpenAPI description of a body that must be empty or absent. */
export const ApiNoBody = () =>
  ApiBody({ required: false, description: 'None: nothing, or an empty object (any field is a 400)', schema: { type: 'object', maxProperties: 0 } });

/** An action that takes no body: a field in it is a 400 (EmptyBodyGuard), and the document says so. */
export const NoBody = () => applyDecorators(UseGuards(EmptyBodyGuard), ApiNoBody());

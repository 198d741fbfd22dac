import { ApiBody } from '@nestjs/swagger';
import { RequestValidationException } from './validation';

/**
 * The body of an action that takes none: nothing, or an empty object. Any field is a 400 naming it, as an
 * unknown field of any other body is (contract section 2), rather than silently ignored. Called by the handler
 * (`@Body() body: unknown`, documented with `@ApiNoBody()`) before anything else it does, so that, as for every
 * body, the path's ids are checked first (a malformed one is a 404) and the resource after (an unknown one too).
 */
export function refuseBodyFields(body: unknown): void {
  const fields = body !== null && typeof body === 'object' ? Object.keys(body) : [];
  if (fields.length > 0)
    throw new RequestValidationException(fields.map((field) => ({ field, message: `property ${field} should not exist` })));
}

/** The OpenAPI description of a body that must be empty or absent. */
export const ApiNoBody = () =>
  ApiBody({
    required: false,
    description: 'None: nothing, or an empty object (any field is a 400)',
    schema: { type: 'object', maxProperties: 0 },
  });

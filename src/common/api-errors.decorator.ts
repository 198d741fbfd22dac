import { applyDecorators, HttpCode } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorResponse } from './error-response.dto';

/** What any JSON body can be refused for (src/openapi.ts documents them on every operation that takes one). */
export const JSON_BODY_ERRORS: Record<number, string> = {
  400:
    'Invalid body field, unknown field or bad query parameter (with `details` naming each, as for text PostgreSQL cannot store or a number too large for a double), ' +
    'or malformed JSON, a body that is not an object, one nested deeper than 32 levels or holding more than 10,000 values (without)',
  413: 'Request body too large',
  415: 'Body is not application/json, or is compressed (a Content-Encoding other than identity)',
};

const DEFAULT_DESCRIPTIONS: Record<number, string> = {
  ...JSON_BODY_ERRORS,
  403: 'Authenticated, but not allowed',
  404: "No such resource on this account (another account's resource is a 404 too)",
  409: 'Conflicts with the current state',
};

/** Documents the error responses of an operation, all in the API's one error shape. */
export function ApiErrors(...statuses: (number | [number, string])[]) {
  return applyDecorators(
    ...statuses.map((entry) => {
      const [status, description] = Array.isArray(entry) ? entry : [entry, DEFAULT_DESCRIPTIONS[entry] ?? ''];
      return ApiResponse({ status, description, type: ErrorResponse });
    }),
  );
}

/** A 204 with an empty body (deletes), answered and documented. */
export const NoContent = (description = 'Done; the body is empty') =>
  applyDecorators(HttpCode(204), ApiResponse({ status: 204, description }));

import { ApiProperty } from '@nestjs/swagger';
import { STATUS_CODES } from 'node:http';

export class ErrorDetail {
  /** The body field or query parameter at fault, as a dotted path (`transcript.0.speaker`). */
  field: string;
  /** What is wrong with it. */
  message: string;
}

/** The one error shape of the API. */
export class ErrorResponse {
  /** The HTTP status code, repeated. @example 404 */
  @ApiProperty({ type: 'integer' })
  statusCode: number;
  /** The HTTP reason phrase. @example "Not Found" */
  error: string;
  /** What went wrong, for a person. @example "Agent 42 not found" */
  message: string;
  /** Validation failures only: one entry per invalid field. */
  details?: ErrorDetail[];
}

export function errorResponse(statusCode: number, message: string, details?: ErrorDetail[]): ErrorResponse {
  const body: ErrorResponse = { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message };
  if (details) body.details = details;
  return body;
}

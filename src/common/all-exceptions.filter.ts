import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { databaseRefusal, isDatabaseUnavailable } from '../database/database-errors';
import { errorResponse, ErrorResponse } from './error-response.dto';
import { PreparedResponse } from './prepared-response';
import { RequestValidationException, UnprocessableFieldsException } from './validation';

/** Errors raised by body-parser (malformed JSON, too large, bad encoding) carry a `type`. */
interface BodyParserError extends Error {
  type: string;
  status: number;
}

const BODY_PARSER_MESSAGES: Record<string, string> = {
  'entity.parse.failed': 'Malformed JSON in request body',
  'entity.too.large': 'Request body is too large',
  'encoding.unsupported': 'Unsupported content encoding',
  'charset.unsupported': 'Unsupported charset: send UTF-8 JSON',
  'request.aborted': 'Request aborted',
  'request.size.invalid': 'Request body size does not match Content-Length',
};

function isBodyParserError(error: unknown): error is BodyParserError {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as BodyParserError).type === 'string' &&
    typeof (error as BodyParserError).status === 'number'
  );
}

function httpExceptionMessage(exception: HttpException): string {
  const response = exception.getResponse();
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (Array.isArray(message)) return message.join('; ');
  return typeof message === 'string' ? message : exception.message;
}

/**
 * Whether the client went away before its whole request arrived (a dropped upload, or one cut by its deadline): what
 * fails after (multer's "Request aborted") is the client's doing, not an error of ours, and no one is left to answer.
 */
const abandoned = (request: Request) => !request.complete && (request.destroyed || request.socket.destroyed);

/**
 * One error shape for every failure; an unexpected error is a generic 500, logged with the request id. (A
 * PreparedResponse is not a failure: a guard's complete answer, sent as it is.) An error that follows a request
 * the client abandoned is not answered, nor logged but at debug level: the request's own line says it was aborted.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Exceptions');

  catch(exception: unknown, host: ArgumentsHost): void {
    const context = host.switchToHttp();
    const request = context.getRequest<Request & { id?: string }>();
    const response = context.getResponse<Response>();
    if (exception instanceof PreparedResponse && !response.headersSent) return exception.send(response);
    if (abandoned(request)) {
      this.logger.debug(
        { requestId: request.id, errorType: exception instanceof Error ? exception.name : typeof exception },
        'Request abandoned by the client',
      );
      response.destroy();
      return;
    }
    const body = this.toErrorResponse(exception, request);
    if (response.headersSent) {
      response.destroy();
      return;
    }
    response.status(body.statusCode).json(body);
  }

  toErrorResponse(exception: unknown, request: Request & { id?: string }): ErrorResponse {
    if (exception instanceof RequestValidationException) {
      return errorResponse(HttpStatus.BAD_REQUEST, exception.message, exception.details);
    }
    if (exception instanceof UnprocessableFieldsException) {
      return errorResponse(HttpStatus.UNPROCESSABLE_ENTITY, exception.message, exception.details);
    }
    if (exception instanceof HttpException && exception.cause instanceof URIError) {
      // Express could not decode a path parameter (`/calls/%E0%A4x`): an id that cannot be one names no resource.
      return errorResponse(HttpStatus.NOT_FOUND, 'Resource not found: the path is not valid percent-encoding');
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      if (status >= 500) this.logger.warn({ requestId: request.id, err: exception }, httpExceptionMessage(exception));
      return errorResponse(status, httpExceptionMessage(exception));
    }
    if (isBodyParserError(exception) && exception.status < 500) {
      return errorResponse(exception.status, BODY_PARSER_MESSAGES[exception.type] ?? 'Invalid request body');
    }
    if (isDatabaseUnavailable(exception)) {
      this.logger.warn({ requestId: request.id, err: exception }, 'Database unavailable');
      return errorResponse(HttpStatus.SERVICE_UNAVAILABLE, 'The database is unavailable; try again shortly');
    }
    const refusal = databaseRefusal(exception);
    if (refusal) {
      // A rule the validation is missing: worth a warning (the error serializer keeps no value of it).
      this.logger.warn({ requestId: request.id, err: exception }, 'The database refused a value of the request');
      return errorResponse(refusal.status, refusal.message);
    }
    this.logger.error({ requestId: request.id, err: exception }, 'Unexpected error');
    return errorResponse(HttpStatus.INTERNAL_SERVER_ERROR, 'Internal server error');
  }
}

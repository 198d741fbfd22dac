import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpException, LoggerService } from '@nestjs/common';
import pino, { DestinationStream, Level, Logger } from 'pino';
import { HttpLogger, pinoHttp } from 'pino-http';
import { AppConfig } from '../config/config';

/**
 * Logs carry no customer data: no body, header, query string, SQL parameter, PostgreSQL detail, file path or
 * object key. Three things see to it, configured here once for every line:
 * - the request serializer keeps the method, the path without its query string and the request id; the
 *   response serializer the status code (requestLogger adds the response time);
 * - the error serializer keeps an error's type, its SQLSTATE and the names of the constraint, table, column
 *   and routine for a database error; a system error's code and system call; the message only of errors
 *   that are neither (a database's echoes values, a file system's names the path); stack frames without the
 *   message line;
 * - `redact` removes, wherever they are logged by mistake, the top-level fields known to carry request data.
 * Serializers and redaction belong to the logger, so Nest's logs and the exception filter's get them too.
 */

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * Top-level fields that carry request data, removed wherever they are logged by mistake. Top-level names
 * only: a wildcard path (`*.headers`) made pino inspect every field of every line, which added a third to the
 * request log's cost; `req`, `res`, `err` and `error` are whitelisted by their serializers instead.
 */
const REDACT_PATHS = [
  'headers',
  'body',
  'query',
  'parameters',
  'detail',
  'where',
  'driverError',
  'apiKey',
  'url',
  'cookie',
  'authorization',
];

type ErrorLike = Record<string, unknown> & { constructor?: { name?: string } };

/** The PostgreSQL error inside a TypeORM QueryFailedError, or a pg DatabaseError itself (duck-typed: a five-character SQLSTATE). */
function databaseError(error: ErrorLike): ErrorLike | undefined {
  for (const candidate of [error.driverError, error]) {
    if (candidate && typeof candidate === 'object') {
      const { code, severity } = candidate as ErrorLike;
      if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && (typeof severity === 'string' || candidate !== error))
        return candidate as ErrorLike;
    }
  }
  return undefined;
}

/** Node's system errors (fs, net): their message repeats the path or address. */
const isSystemError = (error: ErrorLike) => typeof error.syscall === 'string' && typeof error.code === 'string';

/** AWS SDK errors: their message can name the bucket or key. */
const isAwsError = (error: ErrorLike) => typeof error.$metadata === 'object' && error.$metadata !== null;

const DATABASE_FIELDS = ['code', 'severity', 'constraint', 'table', 'column', 'dataType', 'routine'] as const;

/** The stack's frames (`    at …` lines), without its first line, which repeats the message. */
const stackFrames = (stack: string) =>
  stack
    .split('\n')
    .filter((line) => line.startsWith('    at '))
    .join('\n');

/** An error as it may be logged (see above). */
export function serializeError(value: unknown, depth = 0): Record<string, unknown> {
  if (value === null || typeof value !== 'object') return { type: typeof value };
  const error = value as ErrorLike;
  const name = typeof error.name === 'string' && error.name !== 'error' ? error.name : undefined;
  const serialized: Record<string, unknown> = { type: name ?? error.constructor?.name ?? 'Object' };
  const database = databaseError(error);
  if (database) {
    for (const field of DATABASE_FIELDS) if (typeof database[field] === 'string') serialized[field] = database[field];
  } else if (isSystemError(error)) {
    serialized.code = error.code;
    serialized.syscall = error.syscall;
  } else if (isAwsError(error)) {
    const { httpStatusCode } = error.$metadata as { httpStatusCode?: unknown };
    if (typeof httpStatusCode === 'number') serialized.httpStatusCode = httpStatusCode;
  } else {
    if (typeof error.message === 'string') serialized.message = error.message;
    if (typeof error.code === 'string') serialized.code = error.code;
    // This service's own exceptions explain themselves without request data (RecordingStorageError's reason).
    if (error instanceof HttpException && typeof error.reason === 'string') serialized.reason = error.reason;
  }
  if (typeof error.stack === 'string') serialized.stack = stackFrames(error.stack);
  if (error.cause !== undefined && depth < 3) serialized.cause = serializeError(error.cause, depth + 1);
  return serialized;
}

/** Path segments that are secrets: a signed recording URL's token (the storage key, encrypted). */
const SECRET_SEGMENTS = /^\/recordings\/[^/]+/;

/** The path without its query string (search terms, signed-URL signatures) and with its secrets masked. */
function pathOf(url: string | undefined): string {
  const path = url ?? '';
  const query = path.indexOf('?');
  return (query < 0 ? path : path.slice(0, query)).replace(SECRET_SEGMENTS, '/recordings/:token');
}

const serializeRequest = (request: IncomingMessage) => ({ id: request.id, method: request.method, path: pathOf(request.url) });
/** The status the client was sent: none when the response never started (a dropped request's preset 201 was never sent). */
const serializeResponse = (response: ServerResponse) => ({ statusCode: response.headersSent ? response.statusCode : undefined });

/**
 * The process's one pino logger, writing JSON lines to stdout. The writes are asynchronous (lines written
 * while a write is in flight are joined into the next one): a synchronous write per request was the largest
 * single cost of a small response (docs/experiments.md). `flushLogs` writes what is pending, at exit.
 */
export function createLogger(config: Pick<AppConfig, 'logLevel'>, destination?: DestinationStream): Logger {
  return pino(
    {
      level: config.logLevel,
      serializers: { req: serializeRequest, res: serializeResponse, err: serializeError, error: serializeError },
      redact: { paths: REDACT_PATHS, remove: true },
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

/** Writes the lines still buffered (before the process exits). */
export function flushLogs(logger: Logger): void {
  try {
    logger.flush();
  } catch {
    // stdout already closed: nothing more can be written
  }
}

/** Reuses a well-formed incoming X-Request-Id, otherwise makes one; echoes it in the response. */
function assignRequestId(request: IncomingMessage, response: ServerResponse): string {
  const incoming = request.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
  response.setHeader('X-Request-Id', id);
  return id;
}

/** A response that ended before all of it was sent: the client went away. */
const aborted = (response: ServerResponse) => !response.writableEnded;

/**
 * The level of a request's line: error for a 5xx (or an error of the response); a request the client abandoned is
 * the client's doing, never an error of ours: info when it went away before its request had arrived whole (a
 * dropped upload), warn when it had the whole request and stopped waiting for the answer.
 */
function requestLogLevel(request: IncomingMessage, response: ServerResponse, error: Error | undefined): Level {
  if (error || response.statusCode >= 500) return 'error';
  if (aborted(response)) return request.complete ? 'warn' : 'info';
  return 'info';
}

/**
 * Express middleware, first in the chain (pino-http): gives every request an id (`request.id`, which the
 * exception filter logs too) and logs exactly one line
 * when its response is done or the client went away: `req` {id, method, path}, `res` {statusCode, if it was sent},
 * `responseTime`; at the level requestLogLevel gives.
 */
export function requestLogger(logger: Logger): HttpLogger {
  return pinoHttp({
    logger,
    genReqId: assignRequestId,
    // The logger's own serializers get the raw request and response (not pino-http's copies with every header).
    wrapSerializers: false,
    customLogLevel: requestLogLevel,
    customSuccessMessage: (_request, response) => (aborted(response) ? 'request aborted' : 'request completed'),
    customErrorMessage: (_request, response) => (aborted(response) ? 'request aborted' : 'request completed'),
    // A 5xx is logged where it happened (the exception filter, with the error): not a made-up error here.
    customErrorObject: (_request, _response, error, fields: Record<string, unknown>) =>
      isStatusError(error) ? { res: fields.res, responseTime: fields.responseTime } : fields,
  });
}

/** The error pino-http makes for a 5xx that had none (`failed with status code 503`). */
const isStatusError = (error: Error) => /^failed with status code \d+$/.test(error.message);

type NestLevel = 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
const PINO_LEVEL: Record<NestLevel, Level> = {
  log: 'info',
  error: 'error',
  warn: 'warn',
  debug: 'debug',
  verbose: 'trace',
  fatal: 'fatal',
};

/**
 * Nest's own logs (and every `new Logger(context)` in the modules) into the same pino logger:
 * `logger.warn({ requestId, err }, 'message')` becomes one line with the object's fields, the message and
 * the context.
 */
export class PinoLoggerService implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.write('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }

  /** Nest appends the context (a Logger's name) as the last argument; a string before it is the message (or, for errors, the stack). */
  private write(nestLevel: NestLevel, message: unknown, rest: unknown[]): void {
    const level = PINO_LEVEL[nestLevel];
    if (!this.logger.isLevelEnabled(level)) return;
    const context = rest.length && typeof rest[rest.length - 1] === 'string' ? (rest[rest.length - 1] as string) : undefined;
    const text = rest.length > 1 && typeof rest[0] === 'string' ? rest[0] : undefined;
    if (message instanceof Error) {
      const err = serializeError(message);
      this.logger[level]({ context, err: message }, text ?? String(err.message ?? err.type));
    } else if (message !== null && typeof message === 'object') this.logger[level]({ context, ...message }, text);
    else if (text && nestLevel === 'error') this.logger[level]({ context, stack: stackFrames(text) }, String(message));
    else this.logger[level](text ? { context, extra: text } : { context }, String(message));
  }
}

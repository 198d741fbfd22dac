import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoggerService } from '@nestjs/common';
import pino, { DestinationStream, Level, Logger } from 'pino';
import { AppConfig } from '../config/config';

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** A request as the logger leaves it: with the id it logs (the exception filter logs it too). */
export type RequestWithId = IncomingMessage & { id?: string };

/**
 * The process's one pino logger, writing JSON lines to stdout. The writes are asynchronous (lines written
 * while a write is in flight are joined into the next one): a synchronous write per request was the largest
 * single cost of a small response (BENCHMARKS.md, "Performance"). `flushLogs` writes what is pending, at exit.
 */
export function createLogger(config: Pick<AppConfig, 'logLevel'>, destination?: DestinationStream): Logger {
  return pino({ level: config.logLevel }, destination ?? pino.destination({ dest: 1, sync: false }));
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
function assignRequestId(request: RequestWithId, response: ServerResponse): string {
  const incoming = request.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
  request.id = id;
  response.setHeader('X-Request-Id', id);
  return id;
}

/**
 * Express middleware, first in the chain: gives every request an id and logs one line when its response
 * is done (or the client went away). Only the method and the path are logged, never the query string (it
 * can carry search terms and signed-URL signatures) and never a header (the API key travels in one).
 * No per-request child logger and no async context: the line is built from the request itself.
 */
export function requestLogger(logger: Logger) {
  return (request: RequestWithId, response: ServerResponse, next: () => void): void => {
    const id = assignRequestId(request, response);
    const started = performance.now();
    response.once('close', () => {
      const statusCode = response.statusCode;
      const completed = response.writableFinished;
      const level: Level = statusCode >= 500 || !completed ? 'error' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      const path = request.url ?? '';
      const query = path.indexOf('?');
      logger[level](
        {
          req: { id, method: request.method, path: query < 0 ? path : path.slice(0, query) },
          res: { statusCode },
          responseTime: Math.round(performance.now() - started),
        },
        completed ? 'request completed' : 'request aborted',
      );
    });
    next();
  };
}

type NestLevel = 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
const PINO_LEVEL: Record<NestLevel, Level> = { log: 'info', error: 'error', warn: 'warn', debug: 'debug', verbose: 'trace', fatal: 'fatal' };

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

  /** Nest appends the context (a Logger's name) as the last argument; a string before it is the message. */
  private write(nestLevel: NestLevel, message: unknown, rest: unknown[]): void {
    const level = PINO_LEVEL[nestLevel];
    if (!this.logger.isLevelEnabled(level)) return;
    const context = rest.length && typeof rest[rest.length - 1] === 'string' ? (rest[rest.length - 1] as string) : undefined;
    const text = rest.length > 1 && typeof rest[0] === 'string' ? rest[0] : undefined;
    if (message instanceof Error) this.logger[level]({ context, err: message }, text ?? message.message);
    else if (message !== null && typeof message === 'object') this.logger[level]({ context, ...message }, text);
    else this.logger[level](text ? { context, [nestLevel === 'error' ? 'stack' : 'detail']: text } : { context }, String(message));
  }
}

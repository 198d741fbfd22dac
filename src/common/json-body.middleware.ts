import { BadRequestException, CanActivate, ExecutionContext, Injectable, Module, NestMiddleware, UnsupportedMediaTypeException } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { json, NextFunction, Request, Response } from 'express';
import { UNSTORABLE, unstorableMessage } from './storable-text';
import { RequestValidationException } from './validation';

/** Largest accepted JSON body. */
export const JSON_BODY_LIMIT_BYTES = 2 * 1024 * 1024;
/** Deepest accepted nesting of objects and arrays (no endpoint needs more than a few levels). */
export const JSON_MAX_DEPTH = 32;

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);
const isJsonContentType = (value: string | undefined) => !!value && /^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(value);
const parseJson = json({ limit: JSON_BODY_LIMIT_BYTES, strict: true, type: () => true });

/**
 * Refuses, in one iterative walk (a hostile body cannot exhaust the stack here), what no endpoint can take:
 * nesting deeper than JSON_MAX_DEPTH (it would exhaust the validators' recursion), text PostgreSQL cannot
 * store (NUL, unpaired surrogates), in any value or key, and numbers too large for a double (`1e400` parses as
 * Infinity, which a JSON field would silently store as null) — so every module is covered without a decorator.
 */
function checkJsonBody(body: object): void {
  const stack: [unknown, string, number][] = [[body, '', 1]];
  while (stack.length) {
    const [value, path, depth] = stack.pop()!;
    if (typeof value === 'string' && UNSTORABLE.test(value)) {
      throw new RequestValidationException([{ field: path, message: unstorableMessage(path) }]);
    }
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new RequestValidationException([{ field: path, message: `${path} is a number too large to represent (at most about 1.8e308)` }]);
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth > JSON_MAX_DEPTH) throw new BadRequestException(`Request body nests deeper than ${JSON_MAX_DEPTH} levels`);
    for (const [key, child] of Object.entries(value)) {
      const childPath = path ? `${path}.${key}` : key;
      if (UNSTORABLE.test(key)) throw new RequestValidationException([{ field: childPath, message: unstorableMessage('a field name') }]);
      stack.push([child, childPath, depth + 1]);
    }
  }
}

function hasBody(request: Request): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}

/** Where the middleware leaves a body it refused, for JsonBodyGuard to throw. */
const BODY_ERROR = Symbol('jsonBodyError');
type RequestWithBodyError = Request & { [BODY_ERROR]?: unknown };

/**
 * Reads the JSON body of a POST, PUT or PATCH: a non-JSON body is a 415, malformed JSON a 400, over 2 MiB a 413,
 * and a JSON value that is not an object, nests too deep or carries unstorable text, a 400 (see checkJsonBody).
 */
async function readJsonBody(request: Request, response: Response): Promise<void> {
  if (!METHODS_WITH_BODY.has(request.method) || !hasBody(request)) return;
  if (!isJsonContentType(request.headers['content-type'])) {
    throw new UnsupportedMediaTypeException('Content-Type must be application/json');
  }
  await new Promise<void>((resolve, reject) => parseJson(request, response, (error?: unknown) => (error ? reject(error) : resolve())));
  if (request.body === null || typeof request.body !== 'object' || Array.isArray(request.body)) {
    throw new BadRequestException('Request body must be a JSON object');
  }
  checkJsonBody(request.body);
}

/**
 * Parses JSON bodies for every route (routes that take other bodies are excluded where this is applied). A body
 * it refuses is not answered here: the error waits on the request for JsonBodyGuard, so that a request without a
 * valid key is still a 401, one over its budget a 429 and one without the scope a 403, each with the rate-limit
 * headers, whatever its body (contract section 12: the order of the checks).
 */
@Injectable()
export class JsonBodyMiddleware implements NestMiddleware {
  async use(request: Request, response: Response, next: NextFunction): Promise<void> {
    try {
      await readJsonBody(request, response);
    } catch (error) {
      (request as RequestWithBodyError)[BODY_ERROR] = error;
    }
    next();
  }
}

/**
 * Registered once as APP_GUARD, after the scope and before the Idempotency-Key (which hashes the body): throws
 * the error JsonBodyMiddleware left on the request, shaped by the global exception filter (413, 415 or 400).
 */
@Injectable()
export class JsonBodyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const error = context.switchToHttp().getRequest<RequestWithBodyError>()[BODY_ERROR];
    if (error !== undefined) throw error;
    return true;
  }
}

/** Registers JsonBodyGuard; imported by AppModule after the scope module, for the order of the guards. */
@Module({ providers: [{ provide: APP_GUARD, useClass: JsonBodyGuard }] })
export class JsonBodyModule {}

import { BadRequestException, Injectable, NestMiddleware, UnsupportedMediaTypeException } from '@nestjs/common';
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
 * nesting deeper than JSON_MAX_DEPTH (it would exhaust the validators' recursion), and text PostgreSQL cannot
 * store (NUL, unpaired surrogates), in any value or key — so every module is covered without a decorator.
 */
function checkJsonBody(body: object): void {
  const stack: [unknown, string, number][] = [[body, '', 1]];
  while (stack.length) {
    const [value, path, depth] = stack.pop()!;
    if (typeof value === 'string' && UNSTORABLE.test(value)) {
      throw new RequestValidationException([{ field: path, message: unstorableMessage(path) }]);
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

/**
 * Parses JSON bodies for every route (routes that take other bodies are excluded where this is applied).
 * Errors are thrown, not passed to `next`, so that the global exception filter shapes them:
 * a non-JSON body is a 415, malformed JSON a 400, over 2 MiB a 413, and a JSON value that is not an object,
 * nests too deep or carries unstorable text, a 400 (see checkJsonBody).
 */
@Injectable()
export class JsonBodyMiddleware implements NestMiddleware {
  async use(request: Request, response: Response, next: NextFunction): Promise<void> {
    if (!METHODS_WITH_BODY.has(request.method) || !hasBody(request)) return next();
    if (!isJsonContentType(request.headers['content-type'])) {
      throw new UnsupportedMediaTypeException('Content-Type must be application/json');
    }
    await new Promise<void>((resolve, reject) => parseJson(request, response, (error?: unknown) => (error ? reject(error) : resolve())));
    if (request.body === null || typeof request.body !== 'object' || Array.isArray(request.body)) {
      throw new BadRequestException('Request body must be a JSON object');
    }
    checkJsonBody(request.body);
    next();
  }
}

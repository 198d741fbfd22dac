import { BadRequestException, Injectable, NestMiddleware, UnsupportedMediaTypeException } from '@nestjs/common';
import { json, NextFunction, Request, Response } from 'express';

/** Largest accepted JSON body. */
export const JSON_BODY_LIMIT_BYTES = 2 * 1024 * 1024;
/** Deepest accepted nesting of objects and arrays (no endpoint needs more than a few levels). */
export const JSON_MAX_DEPTH = 32;

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);
const isJsonContentType = (value: string | undefined) => !!value && /^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(value);
const parseJson = json({ limit: JSON_BODY_LIMIT_BYTES, strict: true, type: () => true });

/** Iterative, so that a hostile body cannot exhaust the stack here either. */
function exceedsDepth(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > maxDepth) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}

function hasBody(request: Request): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}

/**
 * Parses JSON bodies for every route (routes that take other bodies are excluded where this is applied).
 * Errors are thrown, not passed to `next`, so that the global exception filter shapes them:
 * a non-JSON body is a 415, malformed JSON a 400, over 2 MiB a 413, and a JSON value that is not an object, or
 * that nests deeper than 32 levels (which would exhaust the recursion of the validators), a 400.
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
    if (exceedsDepth(request.body, JSON_MAX_DEPTH)) {
      throw new BadRequestException(`Request body nests deeper than ${JSON_MAX_DEPTH} levels`);
    }
    next();
  }
}

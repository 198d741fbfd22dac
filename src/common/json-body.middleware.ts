import { BadRequestException, Injectable, NestMiddleware, UnsupportedMediaTypeException } from '@nestjs/common';
import { json, NextFunction, Request, Response } from 'express';

/** Largest accepted JSON body. */
export const JSON_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);
const isJsonContentType = (value: string | undefined) => !!value && /^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(value);
const parseJson = json({ limit: JSON_BODY_LIMIT_BYTES, strict: true, type: () => true });

function hasBody(request: Request): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}

/**
 * Parses JSON bodies for every route (routes that take other bodies are excluded where this is applied).
 * Errors are thrown, not passed to `next`, so that the global exception filter shapes them:
 * a non-JSON body is a 415, malformed JSON a 400, over 2 MiB a 413, and a JSON value that is not an object a 400.
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
    next();
  }
}

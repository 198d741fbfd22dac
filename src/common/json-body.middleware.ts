import {
  BadRequestException,
  CanActivate,
  ExecutionContext,
  Injectable,
  Module,
  NestMiddleware,
  SetMetadata,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import { APP_GUARD, Reflector } from '@nestjs/core';
import { json, NextFunction, Request, Response } from 'express';
import { readFormBody } from './form-body';
import { allowUploadTime } from './http-timeouts';
import { UNSTORABLE, unstorableMessage } from './storable-text';
import { RequestValidationException } from './validation';

/** Largest accepted JSON body. */
export const JSON_BODY_LIMIT_BYTES = 2 * 1024 * 1024;
/** Deepest accepted nesting of objects and arrays (no endpoint needs more than a few levels). */
export const JSON_MAX_DEPTH = 32;
/**
 * Most values (objects, arrays and scalars, the body itself included) in a body: the largest valid bodies hold a
 * few thousand (a call with 500 turns of transcript, about 1,500, and its free-form extracted data), while 2 MiB
 * of `[0,0,…]` holds a million, for every walk after the parse (this one, class-transformer's, class-validator's).
 */
export const JSON_MAX_VALUES = 10_000;

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);
const isJsonContentType = (value: string | undefined) => !!value && /^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(value);
/** A `multipart/form-data` body (with its boundary), by its Content-Type. */
export const isMultipartForm = (value: string | undefined) => !!value && /^multipart\/form-data\s*;/i.test(value);

const ACCEPTS_MULTIPART = 'acceptsMultipartForm';
/**
 * Marks a route that takes a JSON body or a `multipart/form-data` upload (a knowledge-base file): JsonBodyGuard
 * leaves a multipart body to the route, which reads it itself, within the request time bound like any body (only the
 * routes that stream their own body, the recording upload, have the upload bound).
 */
export const AcceptsMultipartForm = () => SetMetadata(ACCEPTS_MULTIPART, true);

const ACCEPTS_URL_ENCODED_FORM = 'acceptsUrlEncodedForm';
/**
 * Marks a route that takes an `application/x-www-form-urlencoded` body instead of JSON (a carrier's webhooks):
 * JsonBodyGuard reads it with readFormBody (64 KiB at most) into `request.body`.
 */
export const AcceptsUrlEncodedForm = () => SetMetadata(ACCEPTS_URL_ENCODED_FORM, true);
// `inflate: false`: a compressed body never reaches the parser (readBody refuses it first), and could not be inflated there either.
const parseJson = json({ limit: JSON_BODY_LIMIT_BYTES, strict: true, inflate: false, type: () => true });

/**
 * The names every object inherits (`constructor`, `toString`, `__proto__`, …) and `prototype`: Nest's
 * ValidationPipe deletes `__proto__`, `prototype` and `constructor` from a body, and class-transformer skips a field
 * whose name the new object already has as a function, so neither ever reached the check of unknown fields: they
 * were dropped silently (with a 201), where any other unknown field is a 400. No body may use them, in a nested
 * object or a free-form JSON field either (they would be lost there the same way).
 */
const INHERITED_NAMES: ReadonlySet<string> = new Set([...Object.getOwnPropertyNames(Object.prototype), 'prototype']);

const tooManyValues = () =>
  new BadRequestException(`Request body has more than ${JSON_MAX_VALUES} values (objects, arrays, strings, numbers, booleans and nulls)`);

/**
 * Refuses, in one iterative walk (a hostile body cannot exhaust the stack here) that stops after JSON_MAX_VALUES
 * values (so that no validation after it walks more), what no endpoint can take: nesting deeper than
 * JSON_MAX_DEPTH (it would exhaust the validators' recursion), text PostgreSQL cannot store (NUL, unpaired
 * surrogates), in any value or key, numbers too large for a double (`1e400` parses as Infinity, which a JSON
 * field would silently store as null) and the names of Object.prototype as field names (INHERITED_NAMES) — so
 * every module is covered without a decorator.
 */
function checkJsonBody(body: object): void {
  const stack: [unknown, string, number][] = [[body, '', 1]];
  let values = 1;
  const visit = (child: unknown, key: string, path: string, depth: number) => {
    const childPath = path ? `${path}.${key}` : key;
    if (++values > JSON_MAX_VALUES) throw tooManyValues();
    if (UNSTORABLE.test(key)) throw new RequestValidationException([{ field: childPath, message: unstorableMessage('a field name') }]);
    stack.push([child, childPath, depth + 1]);
  };
  while (stack.length) {
    const [value, path, depth] = stack.pop()!;
    if (typeof value === 'string' && UNSTORABLE.test(value)) {
      throw new RequestValidationException([{ field: path, message: unstorableMessage(path) }]);
    }
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new RequestValidationException([
        { field: path, message: `${path} is a number too large to represent (at most about 1.8e308)` },
      ]);
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth > JSON_MAX_DEPTH) throw new BadRequestException(`Request body nests deeper than ${JSON_MAX_DEPTH} levels`);
    // Item by item and key by key (not Object.entries, which would copy a huge array whole first), so that the
    // walk stops at JSON_MAX_VALUES.
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) visit(value[index], String(index), path, depth);
      continue;
    }
    for (const key in value) {
      if (INHERITED_NAMES.has(key)) {
        const field = path ? `${path}.${key}` : key;
        throw new RequestValidationException([{ field, message: `property ${key} should not exist (a name of Object.prototype)` }]);
      }
      visit((value as Record<string, unknown>)[key], key, path, depth);
    }
  }
}

function hasBody(request: Request): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}

/** Whether the request's body is in a Content-Encoding (gzip, br, deflate…): only `identity` (or none) is accepted. */
const isEncoded = (request: Request) => (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase() !== 'identity';

/** Set by JsonBodyMiddleware on the requests of the routes that take a JSON body. */
const TAKES_JSON = Symbol('takesJsonBody');
type JsonRequest = Request & { [TAKES_JSON]?: true };

/**
 * Reads the body of a POST, PUT or PATCH: a body in a Content-Encoding is a 415 on every route (nothing is
 * inflated: 2 KB of gzip is 2 MiB of JSON). On the routes that take JSON: a non-JSON body is a 415, malformed JSON
 * a 400, over 2 MiB a 413, and a JSON value that is not an object, or that checkJsonBody refuses, a 400. Other
 * routes (the recording upload) read their own bodies, and are given the upload time bound for it; the multipart
 * bodies of a route marked AcceptsMultipartForm are read by the route, within the request bound.
 */
async function readBody(request: JsonRequest, response: Response, acceptsMultipart: boolean, acceptsForm: boolean): Promise<void> {
  if (!METHODS_WITH_BODY.has(request.method) || !hasBody(request)) return;
  if (isEncoded(request))
    throw new UnsupportedMediaTypeException('Content-Encoding must be identity: compressed request bodies are not accepted');
  if (acceptsForm) return readFormBody(request, response);
  if (acceptsMultipart && isMultipartForm(request.headers['content-type'])) return;
  if (!request[TAKES_JSON]) return allowUploadTime(request);
  if (!isJsonContentType(request.headers['content-type'])) {
    throw new UnsupportedMediaTypeException('Content-Type must be application/json');
  }
  await new Promise<void>((resolve, reject) => parseJson(request, response, (error?: Error) => (error ? reject(error) : resolve())));
  const body: unknown = request.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new BadRequestException('Request body must be a JSON object');
  }
  checkJsonBody(body);
}

/**
 * Marks the requests of the routes that take a JSON body (every POST, PUT and PATCH route but those excluded where
 * this is applied), for JsonBodyGuard to read. It reads nothing itself: middleware runs before every guard, and a
 * body read here would be read, parsed and walked before the API key and the rate limits are checked.
 */
@Injectable()
export class JsonBodyMiddleware implements NestMiddleware {
  use(request: JsonRequest, _response: Response, next: NextFunction): void {
    request[TAKES_JSON] = true;
    next();
  }
}

/**
 * Registered once as APP_GUARD, after the API key, the rate limit and the scope, and before the Idempotency-Key
 * (which hashes the body): reads the body (readBody), so that a request without a valid key is a 401, one over its
 * budget a 429 and one without the scope a 403, each with the rate-limit headers, whatever its body (contract
 * section 12: the order of the checks), and costs no more than any other such request: its body is never read.
 * (A public route has no key to check, and its rate limit comes first too.) What it refuses is shaped by the
 * global exception filter (413, 415 or 400). Node skips the body of a request answered before it was read, so
 * the connection stays usable (and the request's deadline bounds how long that takes: src/common/http-timeouts.ts).
 */
@Injectable()
export class JsonBodyGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const acceptsMultipart = this.reflector.get<boolean | undefined>(ACCEPTS_MULTIPART, context.getHandler()) === true;
    const acceptsForm = this.reflector.get<boolean | undefined>(ACCEPTS_URL_ENCODED_FORM, context.getHandler()) === true;
    await readBody(http.getRequest<JsonRequest>(), http.getResponse<Response>(), acceptsMultipart, acceptsForm);
    return true;
  }
}

/** Registers JsonBodyGuard; imported by AppModule after the scope module, for the order of the guards. */
@Module({ providers: [{ provide: APP_GUARD, useClass: JsonBodyGuard }] })
export class JsonBodyModule {}

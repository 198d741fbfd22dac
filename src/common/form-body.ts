import { BadRequestException, UnsupportedMediaTypeException } from '@nestjs/common';
import { text, type Request, type Response } from 'express';
import { UNSTORABLE, unstorableMessage } from './storable-text';
import { RequestValidationException } from './validation';

/** Largest accepted form body: a carrier's webhook is a few hundred bytes to a few KiB. */
export const FORM_BODY_LIMIT_BYTES = 64 * 1024;
/** Most parameters in a form body (Twilio's voice webhooks carry about 30). */
export const FORM_MAX_PARAMETERS = 200;

/**
 * A form's parameters by name: a string, or the values in order when a name repeats (as the carrier's signature
 * takes them). An object without a prototype, so that no name (`__proto__`, `constructor`) means anything else.
 */
export type FormParams = Record<string, string | string[] | undefined>;

const isFormContentType = (value: string | undefined) => !!value && /^application\/x-www-form-urlencoded\s*(;|$)/i.test(value);

// `inflate: false`: a compressed body never reaches the reader (JsonBodyGuard refuses one first). UTF-8 unless the
// Content-Type names another charset body-parser knows.
const readText = text({ limit: FORM_BODY_LIMIT_BYTES, inflate: false, type: () => true, defaultCharset: 'utf-8' });

/**
 * The parameters of an `application/x-www-form-urlencoded` body, decoded as the WHATWG URL standard says (`+` is
 * a space, percent-encoded UTF-8, an invalid sequence U+FFFD): a 400 for more than FORM_MAX_PARAMETERS, or for
 * text PostgreSQL cannot store (NUL) in a name or a value.
 */
export function parseForm(body: string): FormParams {
  const params: FormParams = Object.create(null) as FormParams;
  let count = 0;
  for (const [name, value] of new URLSearchParams(body)) {
    if (++count > FORM_MAX_PARAMETERS) throw new BadRequestException(`Request body has more than ${FORM_MAX_PARAMETERS} parameters`);
    if (UNSTORABLE.test(name)) throw new RequestValidationException([{ field: name, message: unstorableMessage('a parameter name') }]);
    if (UNSTORABLE.test(value)) throw new RequestValidationException([{ field: name, message: unstorableMessage(name) }]);
    const known = params[name];
    if (known === undefined) params[name] = value;
    else if (Array.isArray(known)) known.push(value);
    else params[name] = [known, value];
  }
  return params;
}

/**
 * Reads a form body into `request.body` (FormParams): a 415 for another Content-Type, a 413 over
 * FORM_BODY_LIMIT_BYTES, a 400 for what parseForm refuses. For the routes marked AcceptsUrlEncodedForm (a
 * carrier's webhooks), read by JsonBodyGuard in the JSON body's place.
 */
export async function readFormBody(request: Request, response: Response): Promise<void> {
  if (!isFormContentType(request.headers['content-type'])) {
    throw new UnsupportedMediaTypeException('Content-Type must be application/x-www-form-urlencoded');
  }
  await new Promise<void>((resolve, reject) => readText(request, response, (error?: Error) => (error ? reject(error) : resolve())));
  request.body = parseForm(typeof request.body === 'string' ? request.body : '');
}

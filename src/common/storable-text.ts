import { ValidateBy } from 'class-validator';

/** NUL, or a UTF-16 surrogate without its pair: text that PostgreSQL refuses (or that UTF-8 cannot carry). */
// eslint-disable-next-line no-control-regex -- NUL is what this looks for
export const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether every string in the value (object keys included, at any depth) can be stored in PostgreSQL. */
export function isStorable(value: unknown): boolean {
  if (typeof value === 'string') return !UNSTORABLE.test(value);
  if (Array.isArray(value)) return value.every(isStorable);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).every(([key, item]) => !UNSTORABLE.test(key) && isStorable(item));
  }
  return true;
}

export const unstorableMessage = (field: string) => `${field} must not contain NUL characters (\\u0000) or unpaired surrogates`;

/**
 * For query parameters (JSON bodies are checked as a whole by JsonBodyGuard). The text (or JSON value) contains no NUL character and no unpaired surrogate. PostgreSQL rejects both in
 * text and jsonb, so without this check such input would be a 500 instead of a 400.
 */
export const IsStorable = () =>
  ValidateBy({
    name: 'isStorable',
    validator: {
      validate: isStorable,
      defaultMessage: (args) => unstorableMessage(args?.property ?? 'value'),
    },
  });

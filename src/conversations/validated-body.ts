import { createValidationPipe } from '../common/validation';

const BODY_VALIDATION = createValidationPipe();

/**
 * A body validated by the global pipe's rules, where a handler must check something first (a widget session's
 * site, a message's token) so that the page can read the 400 or gets the 404 instead.
 */
export const validatedBody = async <T>(body: unknown, metatype: new () => T): Promise<T> =>
  (await BODY_VALIDATION.transform(body, { type: 'body', metatype })) as T;

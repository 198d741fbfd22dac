import { validateRequest } from 'twilio/lib/webhooks/webhooks';
import type { FormParams } from '../common/form-body';

/** Longer than any base64 HMAC-SHA1 (28) or -SHA256 (44): not a signature, refused without computing one. */
const MAX_SIGNATURE_LENGTH = 64;

/**
 * Whether `X-Twilio-Signature` is the carrier's signature of this request with the number's auth token: HMAC-SHA1
 * over the URL the carrier was given (PUBLIC_BASE_URL + the path and query) and the form's parameters sorted by
 * name, base64. Checked by the official `twilio` package (`validateRequest`, which compares in constant time and
 * also accepts the URL with or without its default port, as the carrier may sign either).
 */
export function isSignedByCarrier(authToken: string, signature: unknown, url: string, params: FormParams): boolean {
  if (typeof signature !== 'string' || signature.length === 0 || signature.length > MAX_SIGNATURE_LENGTH) return false;
  try {
    return validateRequest(authToken, signature, url, params);
  } catch {
    return false; // a URL it cannot parse: not one the carrier signed
  }
}

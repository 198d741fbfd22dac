import { createHmac, randomBytes } from 'node:crypto';

/**
 * Signing as the Standard Webhooks specification says: secrets are `whsec_` + base64 of random bytes (the
 * bytes are the HMAC key), and a signature is `v1,` + base64 of HMAC-SHA256 over `id.timestamp.body`.
 * (Signed here with node:crypto; the tests verify with the `standardwebhooks` package, as a receiver would.)
 */
export const SECRET_PREFIX = 'whsec_';
/** The specification asks for at least 24 bytes. */
const SECRET_BYTES = 32;

export function generateWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64')}`;
}

/** The `webhook-signature` value: one signature per active secret, space-separated (two during a rotation). */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((secret) => sign(secret, id, timestamp, body)).join(' ');
}

/**
 * The three Standard Webhooks headers of one request: `webhook-id` (the message's id, which receivers deduplicate
 * on), `webhook-timestamp` (now, in seconds) and `webhook-signature` over the exact `body` sent.
 */
export function signedHeaders(secrets: readonly string[], id: string, body: string): Record<string, string> {
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, id, timestamp, body),
  };
}

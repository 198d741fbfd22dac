import { createHash, createHmac } from 'node:crypto';
import { open, seal } from '../common/sealed-box';

/**
 * What is stored of an Idempotency-Key and its first request, so that the table holds nothing readable without
 * the key itself and the server's secret: the key as a hash (its lookup), the request as an HMAC keyed by the key
 * (compared with a retry's), and the response body encrypted (AES-256-GCM) with a key derived from both the key
 * and the server secret (IDEMPOTENCY_SECRET, or the one kept in DATA_DIR). A response can carry a secret
 * (`POST /api-keys` answers with the new API key, which is otherwise stored only as a hash); a copy of the
 * database does not reveal it, even for a key weak enough to be guessed (and recognised from its hash): the body
 * does not open without the server secret. Clients should use random keys (a UUID), as for any idempotency key.
 */
export interface IdempotencySecrets {
  /** SHA-256 of the key, hex: the lookup. */
  keyHash: string;
  /** HMAC key of the request hash. */
  requestKey: Buffer;
  /** AES-256 key of the stored body. */
  bodyKey: Buffer;
}

const LABEL = (label: string) => `voice-agent-api idempotency ${label}\0`;
const digest = (label: string, key: string) => createHash('sha256').update(LABEL(label)).update(key, 'latin1');

export function idempotencySecrets(serverSecret: string, idempotencyKey: string): IdempotencySecrets {
  return {
    keyHash: digest('lookup', idempotencyKey).digest('hex'),
    // Labelled 'body' since the body key was derived this way (from the key alone): a record stored before the
    // server secret took part is still recognised as the same request, and its replay refused cleanly (its body
    // no longer opens) rather than taken for another request (422).
    requestKey: digest('body', idempotencyKey).digest(),
    bodyKey: createHmac('sha256', serverSecret).update(LABEL('body')).update(idempotencyKey, 'latin1').digest(),
  };
}

/** JSON with object keys sorted at every level: two bodies that differ only in key order are the same request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The request, as an HMAC keyed by the key: the API key that sent it, its method, path (with its query string) and
 * JSON body (undefined: none). The API key is part of it because an answer can hold a credential that key could not
 * have had itself (`POST /api-keys` by a key with fewer scopes).
 */
export function requestHash(secrets: IdempotencySecrets, apiKeyId: number, method: string, path: string, body: unknown): string {
  const hmac = createHmac('sha256', secrets.requestKey).update(`${apiKeyId}\0${method}\0${path}\0`, 'latin1');
  if (body !== undefined) hmac.update(canonicalJson(body));
  return hmac.digest('hex');
}

/** IV, tag and ciphertext of the body (src/common/sealed-box.ts); `context` (the account and key hash) is authenticated with it, so a row cannot be moved. */
export function sealBody(secrets: IdempotencySecrets, context: string, body: Buffer): Buffer {
  return seal(secrets.bodyKey, context, body);
}

/** The body sealed by sealBody; throws if it was altered or sealed under another key or context. */
export function openBody(secrets: IdempotencySecrets, context: string, sealed: Buffer): Buffer {
  return open(secrets.bodyKey, context, sealed);
}

import { createHash, randomBytes } from 'node:crypto';

/** Every key starts with this, so that a leaked key is recognisable (secret scanners, logs). */
export const API_KEY_PREFIX = 'vak_';
const SECRET_BYTES = 24; // 192 bits of entropy
const DISPLAY_PREFIX_LENGTH = 12;
/** `vak_` followed by 32 base64url characters. */
const API_KEY_PATTERN = /^vak_[A-Za-z0-9_-]{32}$/;

export interface GeneratedApiKey {
  apiKey: string;
  prefix: string;
  keyHash: string;
}

export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

export function generateApiKey(): GeneratedApiKey {
  const apiKey = API_KEY_PREFIX + randomBytes(SECRET_BYTES).toString('base64url');
  return { apiKey, prefix: apiKeyPrefix(apiKey), keyHash: hashApiKey(apiKey) };
}

/** The part of a key that is stored, shown in listings and known to every server (VerifiedKeys). */
export function apiKeyPrefix(apiKey: string): string {
  return apiKey.slice(0, DISPLAY_PREFIX_LENGTH);
}

/** Cheap shape check before any database work; a malformed key is treated exactly like an unknown one. */
export function isWellFormedApiKey(value: string): boolean {
  return API_KEY_PATTERN.test(value);
}

import { randomBytes } from 'node:crypto';

/** Site keys: `ws_` + 192 random bits in base64url (35 characters in all). Public, but unguessable. */
export const SITE_KEY_PREFIX = 'ws_';
const SITE_KEY_BYTES = 24;
const SITE_KEY_PATTERN = /^ws_[A-Za-z0-9_-]{32}$/;

export function generateSiteKey(): string {
  return SITE_KEY_PREFIX + randomBytes(SITE_KEY_BYTES).toString('base64url');
}

/** Whether a string has the shape of a site key (anything else cannot name a site: no query needed). */
export const isSiteKeyShaped = (value: string): boolean => SITE_KEY_PATTERN.test(value);

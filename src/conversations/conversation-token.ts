import { createHash, randomBytes } from 'node:crypto';

/** Recognisable in a leak (secret scanners, logs), like API keys' `vak_`. */
const PREFIX = 'vac_';
const SECRET_BYTES = 24; // 192 bits
/** `vac_` followed by 32 base64url characters. */
const TOKEN_PATTERN = /^vac_[A-Za-z0-9_-]{32}$/;

export const generateConversationToken = (): string => PREFIX + randomBytes(SECRET_BYTES).toString('base64url');

/** SHA-256, hex: the only form in which a token is stored. A fast hash suffices for 192 random bits. */
export const hashConversationToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * The token of an `Authorization: Bearer <token>` header, or undefined when the header is absent, of another
 * scheme or not shaped like a token (all of which are treated like a wrong token: 404).
 */
export function bearerToken(authorization: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  return match && TOKEN_PATTERN.test(match[1]) ? match[1] : undefined;
}

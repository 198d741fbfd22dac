import { createHash, randomBytes } from 'node:crypto';

const PREFIX = 'vst_';
const SHAPE = /^vst_[A-Za-z0-9_-]{43}$/;

/** A media stream's one-time token (256 random bits) and its hash, which is all that is stored. */
export function newStreamToken(): { token: string; hash: string } {
  const token = `${PREFIX}${randomBytes(32).toString('base64url')}`;
  return { token, hash: hashStreamToken(token) };
}

/** SHA-256 of the token, hex. */
export const hashStreamToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/** Whether a value can be a stream token at all (anything else is refused without a query). */
export const isStreamTokenShaped = (value: unknown): value is string => typeof value === 'string' && SHAPE.test(value);

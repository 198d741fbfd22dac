import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/** The query of a signed playback URL, beside the opaque token in its path. */
export interface SignedPlayback {
  /** The storage key, encrypted (AES-256-GCM): opaque to whoever holds the URL. */
  token: string;
  /** Unix time, in seconds, after which the URL is refused. */
  expires: number;
  /** HMAC-SHA256 of token and expiry, base64url. */
  signature: string;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const TOKEN = /^[A-Za-z0-9_-]{40,2048}$/;
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/;
const EXPIRES = /^\d{1,12}$/;

const deriveKey = (secret: string, purpose: string) => Buffer.from(hkdfSync('sha256', secret, 'voice-agent-recordings', purpose, 32));

/**
 * Signs and checks the local storage driver's playback URLs. The storage key travels encrypted (so the URL
 * says nothing about where or whose the file is); the token and expiry are signed with HMAC-SHA256 and the
 * signature is compared in constant time, as text (its one canonical base64url spelling). Two keys are derived from the one configured secret.
 */
export class PlaybackUrlSigner {
  private readonly encryptionKey: Buffer;
  private readonly macKey: Buffer;

  constructor(secret: string) {
    this.encryptionKey = deriveKey(secret, 'playback-token-encryption');
    this.macKey = deriveKey(secret, 'playback-url-signature');
  }

  sign(storageKey: string, expires: number): SignedPlayback {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.encryptionKey, iv);
    const encrypted = Buffer.concat([cipher.update(storageKey, 'utf8'), cipher.final()]);
    const token = Buffer.concat([iv, encrypted, cipher.getAuthTag()]).toString('base64url');
    return { token, expires, signature: this.mac(token, expires).toString('base64url') };
  }

  /** The storage key of a valid, unexpired URL; undefined for an expired, altered or malformed one. */
  verify(token: string, expires: unknown, signature: unknown, nowSeconds: number): string | undefined {
    if (typeof expires !== 'string' || typeof signature !== 'string') return undefined;
    if (!TOKEN.test(token) || !EXPIRES.test(expires) || !SIGNATURE.test(signature)) return undefined;
    // Compared as text: decoding first would accept 4 spellings of the last character (its low 2 bits are
    // padding that base64url decoding drops). Both sides are 43 ASCII characters (SIGNATURE above).
    const expected = Buffer.from(this.mac(token, Number(expires)).toString('base64url'));
    if (!timingSafeEqual(expected, Buffer.from(signature))) return undefined;
    if (Number(expires) < nowSeconds) return undefined;
    return this.decrypt(token);
  }

  private mac(token: string, expires: number): Buffer {
    return createHmac('sha256', this.macKey).update(`${token}.${expires}`).digest();
  }

  private decrypt(token: string): string | undefined {
    const bytes = Buffer.from(token, 'base64url');
    if (bytes.length <= IV_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.encryptionKey, bytes.subarray(0, IV_BYTES));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }
}

/** The playback URL for a signed token under the service's public address. */
export function playbackUrl(publicBaseUrl: string, signed: SignedPlayback): string {
  const query = new URLSearchParams({ expires: String(signed.expires), signature: signed.signature });
  return `${publicBaseUrl}/recordings/${signed.token}?${query.toString()}`;
}

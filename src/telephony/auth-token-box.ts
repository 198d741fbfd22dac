import { hkdfSync } from 'node:crypto';
import { open, seal } from '../common/sealed-box';
import { loadKeptSecret } from '../config/kept-secret';

export const TELEPHONY_SECRET_FILE = 'telephony-secret';

/** TELEPHONY_SECRET, or the secret kept under the data directory (loadKeptSecret), as the other kept secrets. */
export const loadTelephonySecret = (configured: string | undefined, dataDir: string): Promise<string> =>
  loadKeptSecret(configured, dataDir, TELEPHONY_SECRET_FILE);

/** The sealed token is bound to its account: moved to another account's row, it does not open. */
const context = (accountId: number) => `voice-agent-api phone number auth token\0${accountId}`;

/**
 * Seals the carrier auth tokens stored with the phone numbers (AES-256-GCM, src/common/sealed-box.ts), with a key
 * derived from the telephony secret: a copy of the database alone does not reveal them. Instances that share no
 * DATA_DIR must be given the same TELEPHONY_SECRET, or a token sealed by one does not open on another.
 */
export class AuthTokenBox {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync('sha256', secret, 'voice-agent-telephony', 'carrier-auth-token', 32));
  }

  seal(accountId: number, token: string): Buffer {
    return seal(this.key, context(accountId), Buffer.from(token, 'utf8'));
  }

  /** The token; undefined when it does not open (sealed under another secret, or altered). */
  open(accountId: number, sealed: Buffer): string | undefined {
    try {
      return open(this.key, context(accountId), sealed).toString('utf8');
    } catch {
      return undefined;
    }
  }
}

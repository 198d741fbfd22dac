import type { ApiKeyScope } from './scopes';

/** The account a request acts for, and the key it used, attached by the API-key guard. */
export interface CallerAccount {
  id: number;
  name: string;
  isPlatform: boolean;
  /** The API key of the request: what it may do (ScopeGuard), and whose last use is recorded (KeyUsage). */
  keyId: number;
  scopes: readonly ApiKeyScope[];
  /** When that key stops working (null: never): a key it creates may not outlive it. */
  keyExpiresAt: Date | null;
}

import { loadKeptSecret } from '../config/kept-secret';

export const IDEMPOTENCY_SECRET_FILE = 'idempotency-secret';

/** Injection token of the server secret (a string) that IdempotencyService mixes into its encryption keys. */
export const IDEMPOTENCY_SECRET = Symbol('IDEMPOTENCY_SECRET');

/**
 * IDEMPOTENCY_SECRET, or the secret kept under the data directory (loadKeptSecret), as the recordings' signing
 * secret is. Instances that share no DATA_DIR must be given the same IDEMPOTENCY_SECRET, or a replay on another
 * instance than the first request's is refused (IdempotencyService).
 */
export const loadIdempotencySecret = (configured: string | undefined, dataDir: string): Promise<string> =>
  loadKeptSecret(configured, dataDir, IDEMPOTENCY_SECRET_FILE);

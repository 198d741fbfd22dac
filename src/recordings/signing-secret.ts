import { loadKeptSecret } from '../config/kept-secret';

export const SIGNING_SECRET_FILE = 'recording-signing-secret';

/** RECORDING_SIGNING_SECRET, or the secret kept under the data directory (loadKeptSecret). */
export const loadSigningSecret = (configured: string | undefined, dataDir: string): Promise<string> =>
  loadKeptSecret(configured, dataDir, SIGNING_SECRET_FILE);

import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';

export const IDEMPOTENCY_SECRET_FILE = 'idempotency-secret';

/** Injection token of the server secret (a string) that IdempotencyService mixes into its encryption keys. */
export const IDEMPOTENCY_SECRET = Symbol('IDEMPOTENCY_SECRET');

/**
 * IDEMPOTENCY_SECRET, or the secret kept under the data directory, created on first use (256 random bits, mode
 * 0600), as the recordings' signing secret is (src/recordings/signing-secret.ts). Written whole to a temporary
 * file and then linked into place, which fails if the file exists: two processes starting at once end up with
 * the same, complete secret. Instances that share no DATA_DIR must be given the same IDEMPOTENCY_SECRET, or a
 * replay on another instance than the first request's is refused (IdempotencyService).
 */
export async function loadIdempotencySecret(configured: string | undefined, dataDir: string): Promise<string> {
  if (configured) return configured;
  const file = path.join(dataDir, IDEMPOTENCY_SECRET_FILE);
  await mkdir(dataDir, { recursive: true });
  const candidate = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  await writeFile(candidate, randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
  try {
    await link(candidate, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await rm(candidate, { force: true });
  }
  const secret = (await readFile(file, 'utf8')).trim();
  if (secret.length < 32) throw new Error(`${file} holds no usable secret (fewer than 32 characters): delete it to make a new one`);
  return secret;
}

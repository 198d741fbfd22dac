import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';

/**
 * The configured secret, or the one kept in `fileName` under the data directory, created on first use (256 random
 * bits, mode 0600). It is written whole to a temporary file and then linked into place, which fails if the file
 * exists: two processes starting at once end up with the same, complete secret.
 */
export async function loadKeptSecret(configured: string | undefined, dataDir: string, fileName: string): Promise<string> {
  if (configured) return configured;
  const file = path.join(dataDir, fileName);
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

import * as fs from 'node:fs';
import * as path from 'node:path';
import { StartupError } from '../common/startup-error';

/**
 * Creates DATA_DIR if need be and checks that it can be written, or stops start-up with one line that says what
 * to do. Returns the first directory it created (undefined when DATA_DIR existed), for removeCreatedDirs.
 */
export function prepareDataDir(dataDir: string): string | undefined {
  try {
    const created = fs.mkdirSync(dataDir, { recursive: true });
    fs.accessSync(dataDir, fs.constants.W_OK);
    return created;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new StartupError(`DATA_DIR ${dataDir} cannot be used (${code}): set DATA_DIR to a directory this user can create and write`, {
      cause: error,
    });
  }
}

/** Removes what prepareDataDir created, as long as it is still empty: a start that failed leaves nothing behind. */
export function removeCreatedDirs(dataDir: string, created: string | undefined): void {
  if (!created) return;
  for (let dir = dataDir; dir.startsWith(created); dir = path.dirname(dir)) {
    try {
      fs.rmdirSync(dir);
    } catch {
      return;
    }
  }
}

import { randomUUID } from 'node:crypto';
import { close, createReadStream, createWriteStream, fstat, open as openCallback } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { pipeline } from 'node:stream/promises';
import type { ByteRange } from './byte-range';
import { OpenedRecording, RECORDING_KEY, RecordingStorage, RecordingStorageError, storageFailure } from './recording-storage';
import { playbackUrl, PlaybackUrlSigner } from './signed-url';

/** Half-written uploads live here until they are complete; then they are renamed into place. */
const INCOMING_DIR = 'recordings/.incoming';
/** Leftovers of a process that died mid-upload are removed at start-up once they are this old. */
const STALE_INCOMING_MS = 24 * 3600 * 1000;

const openFile = promisify(openCallback);
const fstatFile = promisify(fstat);
const closeFile = promisify(close);

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Recordings as files under the data directory. A write goes to a temporary file and is renamed into place
 * only once complete (rename is atomic on one file system), so a failed upload leaves nothing. Playback URLs
 * are signed by the service and served by PlaybackController.
 */
export class LocalRecordingStorage extends RecordingStorage {
  constructor(
    private readonly dataDir: string,
    private readonly publicBaseUrl: string,
    private readonly signer: PlaybackUrlSigner,
  ) {
    super();
  }

  async write(key: string, body: Readable): Promise<void> {
    const incoming = path.join(this.dataDir, INCOMING_DIR, `${randomUUID()}.part`);
    const target = this.pathOf(key);
    try {
      await mkdir(path.dirname(incoming), { recursive: true });
      // flush: fsync before close, so that once the call points at the file its bytes are on disk.
      await pipeline(body, createWriteStream(incoming, { flags: 'wx', mode: 0o600, flush: true }));
      await mkdir(path.dirname(target), { recursive: true });
      await rename(incoming, target);
    } catch (error) {
      await rm(incoming, { force: true }).catch(() => undefined);
      throw storageFailure('store a recording', error);
    }
  }

  async size(key: string): Promise<number | undefined> {
    try {
      return (await stat(this.pathOf(key))).size;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw storageFailure("read a recording's size", error);
    }
  }

  async open(key: string, range?: ByteRange): Promise<OpenedRecording | undefined> {
    let fd: number;
    try {
      fd = await openFile(this.pathOf(key), 'r');
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw storageFailure('open a recording', error);
    }
    try {
      const { size } = await fstatFile(fd);
      // A plain fs stream on the descriptor (FileHandle streams pay a promise per chunk, measurably slower).
      // It owns the descriptor from here and closes it on end, error or destroy.
      const stream = createReadStream('', { fd, start: range?.start ?? 0, end: range?.end, autoClose: true });
      return { stream, size };
    } catch (error) {
      await closeFile(fd);
      throw storageFailure('open a recording', error);
    }
  }

  async remove(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true }).catch((error) => Promise.reject(storageFailure('delete a recording', error)));
  }

  async playbackUrl(key: string, expiresAt: Date): Promise<string> {
    this.pathOf(key);
    return playbackUrl(this.publicBaseUrl, this.signer.sign(key, Math.floor(expiresAt.getTime() / 1000)));
  }

  /** Removes half-written uploads left by a process that stopped mid-upload. */
  async removeStaleUploads(now = Date.now()): Promise<number> {
    const directory = path.join(this.dataDir, INCOMING_DIR);
    const names = await readdir(directory).catch((error: NodeJS.ErrnoException) => (isMissing(error) ? [] : Promise.reject(error)));
    let removed = 0;
    for (const name of names) {
      const file = path.join(directory, name);
      const info = await stat(file).catch(() => undefined);
      if (info && now - info.mtimeMs > STALE_INCOMING_MS) {
        await rm(file, { force: true });
        removed++;
      }
    }
    return removed;
  }

  /** The file of a key; a key of any other shape (never produced by the service) is refused. */
  private pathOf(key: string): string {
    if (!RECORDING_KEY.test(key)) throw new RecordingStorageError('Malformed recording key');
    return path.join(this.dataDir, key);
  }
}

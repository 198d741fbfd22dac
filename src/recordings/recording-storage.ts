import { HttpException, ServiceUnavailableException } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { ByteRange } from './byte-range';

/** An object being read: its stream (of the whole object or of the range asked for) and its full size. */
export interface OpenedRecording {
  stream: Readable;
  size: number;
}

/**
 * Where recordings live: `local` (files under DATA_DIR) or `s3` (any S3-compatible store). The key is chosen
 * by the service and stored on the call; it is never shown to a client nor logged.
 */
export abstract class RecordingStorage {
  /**
   * Stores the body under the key, all or nothing: when this resolves the object is complete; when it rejects
   * (the body failed, was too large, or the store did) nothing of it is left behind.
   */
  abstract write(key: string, body: Readable): Promise<void>;

  /** The object's size in bytes, or undefined when there is no such object. */
  abstract size(key: string): Promise<number | undefined>;

  /** Opens the object (or one range of it) for streaming; undefined when there is no such object. */
  abstract open(key: string, range?: ByteRange): Promise<OpenedRecording | undefined>;

  /** Deletes the object; no error when it is already gone. */
  abstract remove(key: string): Promise<void>;

  /** A URL that plays the object without an API key until `expiresAt`. */
  abstract playbackUrl(key: string, expiresAt: Date): Promise<string>;

  /** Releases connections at shutdown. */
  close(): void {}
}

/** Every key looks like this: random, so it says nothing about the account or the call. */
export const RECORDING_KEY = /^recordings\/[0-9a-f]{2}\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.mp3$/;

/** A new, unguessable key, sharded by its first two hex digits so that no directory grows huge. */
export function newRecordingKey(): string {
  const id = randomUUID();
  return `recordings/${id.slice(0, 2)}/${id}.mp3`;
}

/**
 * A storage failure (disk full, store unreachable, …): a 503 for the client, and for the logs a `reason`
 * that names the operation and the error code but never the file path or object key the original carried.
 */
export class RecordingStorageError extends ServiceUnavailableException {
  constructor(readonly reason: string) {
    super('Recording storage is unavailable; try again shortly');
    this.name = 'RecordingStorageError';
  }
}

/**
 * File-system errors name the path, and S3 errors can carry the key: neither may reach a log line. This keeps
 * an HTTP error (a 413 from the body, say) as it is and replaces anything else by an error that names only
 * the operation and the error code (the original is not kept as its cause, which loggers print too).
 */
export function storageFailure(operation: string, error: unknown): Error {
  if (error instanceof HttpException) return error;
  const { code, name, $metadata } = (error ?? {}) as { code?: unknown; name?: unknown; $metadata?: { httpStatusCode?: number } };
  const reason = typeof code === 'string' ? code : typeof name === 'string' ? name : 'unknown error';
  const status = $metadata?.httpStatusCode ? ` (HTTP ${$metadata.httpStatusCode})` : '';
  return new RecordingStorageError(`could not ${operation}: ${reason}${status}`);
}

import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { Readable } from 'node:stream';
import type { S3StorageConfig } from '../config/config';
import type { ByteRange } from './byte-range';
import { OpenedRecording, RecordingStorage, storageFailure } from './recording-storage';

/** Multipart part size (S3's minimum) and parts in flight: an upload holds about 15 MiB (two parts sending, one filling). */
const PART_SIZE = 5 * 1024 * 1024;
const PARTS_IN_FLIGHT = 2;

const isNotFound = (error: unknown) =>
  error instanceof S3ServiceException &&
  (error.name === 'NoSuchKey' || error.name === 'NotFound' || error.$metadata.httpStatusCode === 404);

export function createS3Client(config: S3StorageConfig): S3Client {
  return new S3Client({
    region: config.region,
    endpoint: config.endpoint,
    forcePathStyle: config.forcePathStyle,
    credentials:
      config.accessKeyId && config.secretAccessKey
        ? { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey }
        : undefined,
    // Checksums only where S3 requires them: S3-compatible stores (older MinIO, R2, …) do not all accept
    // the SDK's default aws-chunked uploads with trailing checksums.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/**
 * Recordings in an S3-compatible bucket. Uploads are streamed as multipart uploads (an object appears only
 * when the upload completes; a failed one is aborted, leaving nothing); playback is a presigned GET with
 * `audio/mpeg` and an inline disposition signed in.
 */
export class S3RecordingStorage extends RecordingStorage {
  /**
   * @param presigner signs playback URLs: a client on the store's public address (S3_PUBLIC_ENDPOINT) when the
   *   service reaches the store by a name browsers cannot resolve (`http://minio:9000` in Docker Compose). Signing
   *   makes no request: this client never connects.
   */
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly presigner: S3Client = client,
  ) {
    super();
  }

  async write(key: string, body: Readable): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: body, ContentType: 'audio/mpeg' },
      partSize: PART_SIZE,
      queueSize: PARTS_IN_FLIGHT,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (error) {
      // When the body failed (too large, client gone), that is the error to report, not whatever the SDK
      // ran into next (some stores refuse the clean-up calls that follow).
      const cause = body.errored ?? error;
      body.destroy();
      await upload.abort().catch(() => undefined);
      throw storageFailure('store a recording', cause);
    }
  }

  async size(key: string): Promise<number | undefined> {
    try {
      return (await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }))).ContentLength;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw storageFailure("read a recording's size", error);
    }
  }

  async open(key: string, range?: ByteRange): Promise<OpenedRecording | undefined> {
    try {
      const object = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
      );
      const total = object.ContentRange ? Number(object.ContentRange.split('/')[1]) : object.ContentLength;
      return { stream: object.Body as Readable, size: total ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw storageFailure('open a recording', error);
    }
  }

  async remove(key: string): Promise<void> {
    await this.client
      .send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }))
      .catch((error) => Promise.reject(storageFailure('delete a recording', error)));
  }

  override close(): void {
    this.client.destroy();
    if (this.presigner !== this.client) this.presigner.destroy();
  }

  async playbackUrl(key: string, expiresAt: Date): Promise<string> {
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ResponseContentType: 'audio/mpeg',
      ResponseContentDisposition: 'inline',
    });
    const expiresIn = Math.max(1, Math.round((expiresAt.getTime() - Date.now()) / 1000));
    return getSignedUrl(this.presigner, command, { expiresIn }).catch((error) =>
      Promise.reject(storageFailure('sign a playback URL', error)),
    );
  }
}
